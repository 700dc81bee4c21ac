package gateway_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/replay"
)

// TestAmbiguousMemberNamesAreNotReadOneWay: a message that gives its
// content twice, or as "content" and "Content", was read the way Go's
// encoding/json reads it (case ignored, the last one wins), so the log
// held "DECOY" while a provider that reads names as written (Python,
// JavaScript) answered "REAL", and replay --verify passed on the log's
// reading: whoever writes into an app's requests could have the record
// show one text and the model read another. Such a call is forwarded as
// it came and recorded by the hash of its bytes, saying why; none of its
// readings is stored as what the model was sent.
func TestAmbiguousMemberNamesAreNotReadOneWay(t *testing.T) {
	up := newChatUpstream(t, "")
	r := newRig(t, up.URL, "")
	h := map[string]string{"Turnlog-Token": token}
	for _, tc := range []struct {
		name, message, reason string
	}{
		{name: "names that differ in case", message: `{"role":"user","content":"REAL","Content":"DECOY"}`,
			reason: `the members "Content" and "content", which differ only in case`},
		{name: "a name given twice", message: `{"role":"user","content":"REAL","content":"DECOY"}`,
			reason: `the member "content" twice`},
		{name: "a role given in two cases", message: `{"role":"system","Role":"user","content":"DECOY"}`,
			reason: `"Role" and "role"`},
		{name: "in a content part", message: `{"role":"user","content":[{"type":"text","text":"REAL","Text":"DECOY"}]}`,
			reason: `"Text" and "text"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := post(t, r.gw.URL+"/v1/chat/completions", h, `{"model":"m","messages":[`+tc.message+`]}`)
			require.Equal(t, 200, resp.StatusCode, "forwarded as it came: %s", body)
			conv := resp.Header.Get("Turnlog-Conversation")
			started := startedOf(t, r.log, conv)
			require.Len(t, started, 1)
			assert.Contains(t, started[0].Gateway["unparsed"], tc.reason)
			assert.Contains(t, started[0].Gateway["unparsed"], "recorded by the hash of its bytes alone")
			assert.NotEmpty(t, started[0].Gateway["wire_sha256"], "by its hash")
			for _, text := range blockTexts(t, r.log, conv) {
				assert.NotContains(t, text, "DECOY", "no one reading of the message is stored as what the model was sent")
			}
			// replay --check does not count it as checked: "no findings"
			// must not pass for a call whose input it never saw.
			checked, err := replay.Check(t.Context(), r.log, conv)
			require.NoError(t, err)
			assert.Equal(t, 1, checked.Unparsed)
			var text strings.Builder
			require.NoError(t, checked.WriteText(&text))
			assert.Contains(t, text.String(), conv+": 0 model calls checked, 1 model call not checked (the gateway could not read the request")
		})
	}

	// Names in camelCase, as tools' arguments have them, are read.
	resp, body := post(t, r.gw.URL+"/v1/chat/completions", h,
		`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"weather?","cacheControl":{"maxAge":1}}]}]}`)
	require.Equal(t, 200, resp.StatusCode, "%s", body)
	assert.Contains(t, blockTexts(t, r.log, resp.Header.Get("Turnlog-Conversation")), "weather?")
}

// TestAnUnreadRequestsAnswerIsRecorded: a call whose request the gateway
// could not read (ambiguous, here) but which the provider answered kept
// its answer out of the record when it was not streamed, though the same
// call streamed recorded it: the app had the model's answer, and the log
// said only that the call finished. Its answer is now recorded either way.
func TestAnUnreadRequestsAnswerIsRecorded(t *testing.T) {
	up := newChatUpstream(t, "")
	r := newRig(t, up.URL, "")
	h := map[string]string{"Turnlog-Token": token}
	for _, stream := range []bool{false, true} {
		resp, body := post(t, r.gw.URL+"/v1/chat/completions", h,
			fmt.Sprintf(`{"model":"m","stream":%t,"messages":[{"role":"user","content":"REAL","content":"DECOY"}]}`, stream))
		require.Equal(t, 200, resp.StatusCode, "%s", body)
		require.Contains(t, string(body), `"weather"`, "the upstream answered with a tool call")
		conv := resp.Header.Get("Turnlog-Conversation")
		started := startedOf(t, r.log, conv)
		require.Len(t, started, 1)
		require.NotEmpty(t, started[0].Gateway["unparsed"])
		turn, err := r.log.Load(t.Context(), conv)
		require.NoError(t, err)
		var calls []string
		for _, b := range turn.Blocks {
			if b.Kind == events.KindToolCall {
				calls = append(calls, b.ToolName+" "+b.Arguments)
			}
		}
		assert.Equal(t, []string{`weather {"city":"Paris"}`}, calls, "stream %t: the answer the app got is in the record", stream)
	}
}
