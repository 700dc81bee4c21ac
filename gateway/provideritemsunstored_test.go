package gateway_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/calls"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/replay"
)

// TestConversationItemsTooLargeToStorePassOn: items the provider took that
// are larger than one NATS message were answered 503, "the provider made
// this change, but turnlog could not record it": an app that retried added
// them twice at the provider. The app then got the provider's answer, and
// the change was logged and counted as unrecorded, but the conversation's
// record held nothing of it: an auditor replaying it could not tell that
// the provider's conversation holds items the record lacks. The record now
// marks the gap where the items went, as a model call's content too large
// to store is recorded by its hash: a block of kind other saying how many
// items which request put there, and the SHA-256 and size of the bytes the
// app sent; replay shows it, and the conversation goes on verified.
func TestConversationItemsTooLargeToStorePassOn(t *testing.T) {
	big := strings.Repeat("x", 2*smallPayload)
	body := `{"items":[{"role":"user","content":"` + big + `"},{"role":"user","content":"and this"}]}`
	sum := sha256.Sum256([]byte(body))
	wire := hex.EncodeToString(sum[:])
	for _, tc := range []struct {
		name   string
		seed   bool     // the conversation is created with "hi", then the items added to it
		kind   string   // the metric's label
		before []string // the record's texts before the gap
		after  string   // the answer to the next call, whose provider read the items
	}{
		{name: "items added", seed: true, kind: "added", before: []string{"hi"}, after: `answer to "next" after 3 items`},
		{name: "a conversation created with them", kind: "created", after: `answer to "next" after 2 items`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := newConversationsUpstream(t)
			r, m := newSmallRig(t, up.URL)
			hdr := map[string]string{"Turnlog-Token": token}
			path, conv := "/v1/conversations", ""
			if tc.seed {
				_, out := postOK(t, r.gw.URL+path, hdr, `{"items":[{"role":"user","content":"hi"}]}`)
				conv = conversationIDOf(t, out)
				path += "/" + conv + "/items"
			}
			resp, out := post(t, r.gw.URL+path, hdr, body)
			require.Equal(t, 200, resp.StatusCode, "the provider's answer passes on: %s", out)
			if tc.seed {
				assert.Len(t, calls.ResponseItemIDs(out), 2)
			} else {
				conv = conversationIDOf(t, out)
			}
			assert.Equal(t, conv, resp.Header.Get("Turnlog-Conversation"))
			assert.Contains(t, scrape(t, m), `turnlog_gateway_provider_writes_total{kind="`+tc.kind+`",outcome="unrecorded"} 1`)

			// The record holds what it could store, then the gap.
			turn, err := r.log.Load(t.Context(), conv)
			require.NoError(t, err)
			require.Len(t, turn.Blocks, len(tc.before)+1, "the items' place in the record is marked")
			gap := turn.Blocks[len(tc.before)]
			assert.Equal(t, events.KindOther, gap.Kind)
			assert.Equal(t, "POST "+path, gap.Meta[calls.MetaAddedBy])
			assert.Equal(t, "2", gap.Meta[calls.MetaItems])
			assert.Equal(t, wire, gap.Meta[calls.MetaWireSHA256], "the SHA-256 of the bytes the app sent")
			assert.Equal(t, strconv.Itoa(len(body)), gap.Meta[calls.MetaWireBytes])
			assert.Contains(t, gap.Meta[calls.MetaUnstored], "too large to store")
			assert.Contains(t, gap.Text, "2 items put into the provider's conversation by POST "+path+", not stored")
			assert.Contains(t, gap.Text, wire)

			// What `turnlog replay` prints.
			var timeline strings.Builder
			require.NoError(t, replay.WriteTimeline(&timeline, conv, replay.Entries(t.Context(), r.log, conv)))
			assert.Contains(t, timeline.String(), `NOT STORED: 2 items put into the provider's conversation by "POST `+path+`"`)
			assert.Contains(t, timeline.String(), strconv.Itoa(len(body))+" bytes, sha256 "+wire[:12])

			// The conversation goes on: its next call is recorded after
			// the gap, verified and checked.
			postOK(t, r.gw.URL+"/v1/responses", hdr, `{"model":"m","conversation":"`+conv+`","input":"next"}`)
			assert.Equal(t, append(tc.before, gap.Text, "next", tc.after), blockTexts(t, r.log, conv))
			v := verify(t, r.log, conv)
			assert.Equal(t, 1, v.Inferences)
			assert.Equal(t, 1, v.Unstored, "--verify counts the writes the record lacks")
			var text strings.Builder
			require.NoError(t, v.WriteText(&text))
			assert.Contains(t, text.String(), "NOT STORED: 1 write of items to the provider's conversation")
			assert.Empty(t, checkRules(t, r.log, conv))
		})
	}
}

// TestConversationItemsUnstoredUnmarkedPassOn: where even the mark of
// items too large to store cannot be stored (it names the request, whose
// path here is larger than a NATS message), the app still gets the
// provider's answer, and the change is logged and counted as unrecorded:
// a retry would add the items twice at the provider.
func TestConversationItemsUnstoredUnmarkedPassOn(t *testing.T) {
	up := newConversationsUpstream(t)
	r, m := newSmallRig(t, up.URL)
	id := "conv_" + strings.Repeat("y", smallPayload)
	up.mu.Lock()
	up.convs[id] = []string{}
	up.mu.Unlock()
	hdr := map[string]string{"Turnlog-Token": token}
	resp, out := post(t, r.gw.URL+"/v1/conversations/"+id+"/items", hdr,
		`{"items":[{"role":"user","content":"`+strings.Repeat("x", 2*smallPayload)+`"}]}`)
	require.Equal(t, 200, resp.StatusCode, "the provider's answer passes on: %s", out)
	assert.Len(t, calls.ResponseItemIDs(out), 1)
	conv := calls.ProviderConversationID(id)
	assert.Equal(t, conv, resp.Header.Get("Turnlog-Conversation"))
	assert.Contains(t, scrape(t, m), `turnlog_gateway_provider_writes_total{kind="added",outcome="unrecorded"} 1`)
	assert.Empty(t, conversationEvents(t, r.log, conv), "nothing of it could be stored")
}

// conversationIDOf reads the ID of a Conversations API answer.
func conversationIDOf(t *testing.T, answer []byte) string {
	t.Helper()
	var c struct{ ID string }
	require.NoError(t, json.Unmarshal(answer, &c), "%s", answer)
	require.NotEmpty(t, c.ID, "%s", answer)
	return c.ID
}
