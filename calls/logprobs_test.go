package calls

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLogprobsAreKept: a Chat Completions call that asks for logprobs
// ("logprobs": true, "top_logprobs": n) gets them beside its first
// choice's message, and the record dropped them: an auditor could not say
// how sure the model was of a classification the app acted on. They are
// kept as written, a stream's pieces joined into the same object; past
// MaxLogprobsBytes only their size is kept.
func TestLogprobsAreKept(t *testing.T) {
	tok := func(s string, lp float64) string {
		return fmt.Sprintf(`{"token":%q,"logprob":%g,"bytes":[%d],"top_logprobs":[{"token":%q,"logprob":%g,"bytes":[%d]}]}`, s, lp, s[0], s, lp, s[0])
	}
	logprobs := `{"content":[` + tok("y", -0.01) + `,` + tok("e", -0.2) + `],"refusal":null}`
	body := `{"id":"c","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ye"},"logprobs":` + logprobs + `,"finish_reason":"stop"}]}`
	o, err := ParseResponse(ChatCompletions, []byte(body))
	require.NoError(t, err)
	assert.Equal(t, logprobs, o.Logprobs, "as the provider wrote them")
	o, err = parseChatResponseJSON([]byte(body))
	require.NoError(t, err)
	assert.Equal(t, logprobs, o.Logprobs, "encoding/json's reading agrees")

	none := `{"id":"c","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"A"},"logprobs":null,"finish_reason":"stop"}]}`
	o, err = ParseResponse(ChatCompletions, []byte(none))
	require.NoError(t, err)
	assert.Empty(t, o.Logprobs)
	assert.Zero(t, o.LogprobsOmitted)

	stream := "data: {\"id\":\"x\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"logprobs\":{\"content\":[],\"refusal\":null}}]}\n\n" +
		"data: {\"id\":\"x\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"y\"},\"logprobs\":{\"content\":[" + tok("y", -0.01) + "],\"refusal\":null}}]}\n\n" +
		"data: {\"id\":\"x\",\"choices\":[{\"index\":1,\"delta\":{\"role\":\"assistant\",\"content\":\"n\"},\"logprobs\":{\"content\":[" + tok("n", -3) + "],\"refusal\":null}}]}\n\n" +
		"data: {\"id\":\"x\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"e\"},\"logprobs\":{\"content\":[" + tok("e", -0.2) + "],\"refusal\":null}}]}\n\n" +
		"data: {\"id\":\"x\",\"choices\":[{\"index\":0,\"delta\":{},\"logprobs\":null,\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n"
	s := NewStream(ChatCompletions, 1<<20)
	for i := 0; i < len(stream); i += 7 {
		s.Write([]byte(stream[i:min(i+7, len(stream))]))
	}
	o, err = s.Output()
	require.NoError(t, err)
	assert.JSONEq(t, logprobs, o.Logprobs, "the stream's pieces joined")
	assert.JSONEq(t, `[{"index":1,"message":{"role":"assistant","content":"n"},"finish_reason":"","logprobs":{"content":[`+tok("n", -3)+`],"refusal":null}}]`,
		o.OtherChoices, "another choice keeps its own")

	big := `{"content":[` + strings.Repeat(tok("x", -1)+",", MaxLogprobsBytes/len(tok("x", -1))) + tok("x", -1) + `],"refusal":null}`
	body = `{"id":"c","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"x"},"logprobs":` + big + `,"finish_reason":"stop"}]}`
	o, err = ParseResponse(ChatCompletions, []byte(body))
	require.NoError(t, err)
	assert.Empty(t, o.Logprobs)
	assert.Equal(t, len(big), o.LogprobsOmitted, "too large to keep: their size is")
	s = NewStream(ChatCompletions, 4<<20)
	s.Write([]byte("data: {\"id\":\"x\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"},\"logprobs\":" + big + "}]}\n\ndata: [DONE]\n\n"))
	o, err = s.Output()
	require.NoError(t, err)
	assert.Empty(t, o.Logprobs)
	assert.Greater(t, o.LogprobsOmitted, MaxLogprobsBytes)
}

// TestStreamedEmptyLogprobsStayAList: a stream whose chunks carry empty
// logprobs lists is kept as a response that is not streamed writes them
// (an empty list, not null).
func TestStreamedEmptyLogprobsStayAList(t *testing.T) {
	s := NewStream(ChatCompletions, 1<<20)
	s.Write([]byte("data: {\"id\":\"x\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"\"},\"logprobs\":{\"content\":[],\"refusal\":null}}]}\n\ndata: [DONE]\n\n"))
	o, err := s.Output()
	require.NoError(t, err)
	assert.Equal(t, `{"content":[],"refusal":null}`, o.Logprobs)
}

// TestLogprobsOfAllChoicesShareOneBound: MaxLogprobsBytes was each
// choice's bound, so a call asking for five answers with logprobs kept
// five times as much, and its record passed NATS's default 1 MiB
// max_payload: the answer's record was lost ("too large to store"). The
// bound is now the call's, the first choice's logprobs first; another
// choice's past it keep only their size ({"omitted_bytes": n}), streamed
// or not.
func TestLogprobsOfAllChoicesShareOneBound(t *testing.T) {
	tok := fmt.Sprintf(`{"token":"x","logprob":-0.5,"bytes":[120],"top_logprobs":[%s]}`, strings.TrimSuffix(strings.Repeat(`{"token":"y","logprob":-1.5,"bytes":[121]},`, 20), ","))
	perChoice := (MaxLogprobsBytes/3 - 64) / (len(tok) + 1) // three choices' fill the bound
	list := "[" + strings.TrimSuffix(strings.Repeat(tok+",", perChoice), ",") + "]"
	const n = 5
	check := func(t *testing.T, o *Output) {
		t.Helper()
		require.NotEmpty(t, o.Logprobs, "the first choice's are kept")
		kept := len(o.Logprobs)
		var others []struct {
			Logprobs json.RawMessage `json:"logprobs"`
		}
		require.NoError(t, json.Unmarshal([]byte(o.OtherChoices), &others))
		require.Len(t, others, n-1)
		var lists []json.RawMessage
		for _, c := range others {
			lists = append(lists, c.Logprobs)
		}
		more, omitted := keptInOrder(t, lists)
		kept += more
		assert.LessOrEqual(t, kept, MaxLogprobsBytes, "all choices' logprobs together within the bound")
		assert.Equal(t, 2, omitted, "the choices past the bound keep their size alone")
	}

	var choices []string
	for i := range n {
		choices = append(choices, fmt.Sprintf(`{"index":%d,"message":{"role":"assistant","content":"x"},"logprobs":{"content":%s,"refusal":null},"finish_reason":"stop"}`, i, list))
	}
	body := `{"id":"c","object":"chat.completion","model":"m","choices":[` + strings.Join(choices, ",") + `]}`
	o, err := ParseResponse(ChatCompletions, []byte(body))
	require.NoError(t, err)
	t.Run("not streamed", func(t *testing.T) { check(t, o) })
	o, err = parseChatResponseJSON([]byte(body))
	require.NoError(t, err)
	t.Run("encoding/json", func(t *testing.T) { check(t, o) })

	var stream strings.Builder
	for i := range n {
		fmt.Fprintf(&stream, "data: {\"id\":\"x\",\"choices\":[{\"index\":%d,\"delta\":{\"content\":\"x\"},\"logprobs\":{\"content\":%s,\"refusal\":null}}]}\n\n", i, list)
	}
	stream.WriteString("data: [DONE]\n\n")
	s := NewStream(ChatCompletions, 4<<20)
	s.Write([]byte(stream.String()))
	o, err = s.Output()
	require.NoError(t, err)
	t.Run("streamed", func(t *testing.T) { check(t, o) })
}

// keptInOrder sums the sizes of lists, the other choices' parts a bound
// covers, that were kept, and counts those past it ({"omitted_bytes":
// n}), checking that none is kept after one was omitted.
func keptInOrder(t *testing.T, lists []json.RawMessage) (kept, omitted int) {
	t.Helper()
	for i, l := range lists {
		var gone struct {
			OmittedBytes int `json:"omitted_bytes"`
		}
		if json.Unmarshal(l, &gone) == nil && gone.OmittedBytes > 0 {
			omitted++
			continue
		}
		assert.Zero(t, omitted, "choice %d: kept after one was omitted (the first ones are kept)", i+1)
		kept += len(l)
	}
	return kept, omitted
}
