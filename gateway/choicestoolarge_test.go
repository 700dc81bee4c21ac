package gateway_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/replay"
)

// TestOtherChoicesTooLargeAreTrimmed: a Chat Completions call of several
// choices whose outcome was larger than one NATS message was recorded as
// failed in whole ("too large to store"), though the app got the answer.
// The first choice, which the conversation goes on with, must be kept and
// the call recorded finished, the other choices past the bound left out
// with their size ({"omitted_bytes": n}); only a first choice too large
// by itself still fails the call, saying why. A call recorded with
// choices left out was known only by a WARN log and its record: it is
// counted in turnlog_gateway_unstored_total{part="other_choices"}.
func TestOtherChoicesTooLargeAreTrimmed(t *testing.T) {
	each := strings.Repeat("y", smallPayload/4) // 4 of them fill a message
	for _, tc := range []struct {
		name   string
		first  string
		n      int
		failed string // "" for a finished call
	}{
		{name: "others past the bound", first: "first " + each, n: 6},
		{name: "the first too large alone", first: strings.Repeat("z", 2*smallPayload), n: 3, failed: "too large to store"},
	} {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", tc.name, stream), func(t *testing.T) {
				up := newBigChoicesUpstream(t, tc.first, each)
				r, m := newSmallRig(t, up.URL)
				conv := fmt.Sprintf("bigchoices-%v-%v", tc.failed != "", stream)
				resp, got := post(t, r.gw.URL+"/v1/chat/completions", map[string]string{"Turnlog-Token": token, "Turnlog-Conversation": conv},
					fmt.Sprintf(`{"model":"m","n":%d,"stream":%v,"messages":[{"role":"user","content":"hi"}]}`, tc.n, stream))
				require.Equal(t, 200, resp.StatusCode, "%s", got)
				assert.Contains(t, string(got), fmt.Sprintf("choice %d ", tc.n-1), "the app got every choice")

				_, finished, failed := inferences(t, r, conv)
				// Counted as the other unstored parts are: the record
				// lacks content the app got, which an operator watches
				// for in /metrics, not only in a WARN log.
				metrics := scrape(t, m)
				if tc.failed != "" {
					assert.Contains(t, metrics, `turnlog_gateway_unstored_total{part="output"} 1`)
					assert.NotContains(t, metrics, `part="other_choices"`, "no choice was left out: the call failed")
					assert.Equal(t, 0, finished)
					require.Len(t, failed, 1)
					assert.Contains(t, failed[0], tc.failed)
					verify(t, r.log, conv)
					return
				}
				require.Empty(t, failed, "the call is recorded completed")
				require.Equal(t, 1, finished)
				turn, err := r.log.Load(t.Context(), conv)
				require.NoError(t, err)
				require.Len(t, turn.Blocks, 2)
				assert.Equal(t, tc.first, turn.Blocks[1].Text, "the conversation goes on with the first choice, whole")
				var fin events.InferenceFinished
				for _, e := range conversationEvents(t, r.log, conv) {
					if p, ok := e.Payload.(events.InferenceFinished); ok {
						fin = p
					}
				}
				var others []struct {
					Index        int `json:"index"`
					OmittedBytes int `json:"omitted_bytes"`
					Message      *struct {
						Content string `json:"content"`
					} `json:"message"`
				}
				require.NoError(t, json.Unmarshal([]byte(fin.OtherChoices), &others), "%q", fin.OtherChoices)
				require.Len(t, others, tc.n-1, "every other choice is accounted for")
				kept, omitted := 0, 0
				for i, o := range others {
					assert.Equal(t, i+1, o.Index)
					if o.Message != nil {
						assert.Zero(t, omitted, "kept in order: choice %d kept after one left out", o.Index)
						assert.Equal(t, fmt.Sprintf("choice %d %s", o.Index, each), o.Message.Content)
						kept++
						continue
					}
					assert.Greater(t, o.OmittedBytes, len(each), "choice %d left out with its size", o.Index)
					omitted++
				}
				assert.Positive(t, omitted, "some choices were past the bound")
				assert.Contains(t, metrics, `turnlog_gateway_unstored_total{part="other_choices"} 1`, "the call counted once, however many choices it lacks")
				assert.NotContains(t, metrics, `part="output"}`, "its answer is recorded")
				var text strings.Builder
				for e, err := range replay.Entries(t.Context(), r.log, conv) {
					require.NoError(t, err)
					fmt.Fprintln(&text, e.Summary)
				}
				assert.Contains(t, text.String(), fmt.Sprintf("%d other choices kept beside the first (other_choices), %d left out (too large to store)", kept, omitted),
					"replay says which choices the record lacks")
				verify(t, r.log, conv)
			})
		}
	}
}

// newBigChoicesUpstream answers a Chat Completions call with as many
// choices as its "n" asks: first, then "choice i " and each.
func newBigChoicesUpstream(t *testing.T, first, each string) *httptest.Server {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body struct {
			N      int  `json:"n"`
			Stream bool `json:"stream"`
		}
		json.Unmarshal(raw, &body)
		text := func(i int) string {
			if i == 0 {
				return first
			}
			return fmt.Sprintf("choice %d %s", i, each)
		}
		if !body.Stream {
			w.Header().Set("Content-Type", "application/json")
			var choices []string
			for i := range body.N {
				choices = append(choices, fmt.Sprintf(`{"index":%d,"message":{"role":"assistant","content":%q},"finish_reason":"stop"}`, i, text(i)))
			}
			fmt.Fprintf(w, `{"id":"c","object":"chat.completion","model":"m","choices":[%s]}`, strings.Join(choices, ","))
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for i := range body.N {
			fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":%d,\"delta\":{\"role\":\"assistant\",\"content\":%q}}]}\n\n", i, text(i))
		}
		for i := range body.N {
			fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":%d,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n", i)
		}
		io.WriteString(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(up.Close)
	return up
}
