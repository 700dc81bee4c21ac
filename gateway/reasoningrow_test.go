package gateway_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReasoningRowOfAFinishedTurnLeftOut: Claude may answer with a
// thinking block, then a redacted_thinking block, then its text.
// Anthropic lets a client leave out an earlier turn's thinking, and many
// do: the next call sends the text alone. replay --check allows that for
// a reasoning block whose follower is kept, but took the thinking block's
// follower to be the redacted_thinking block (left out too), and
// reported history_rewritten for it. The follower of a row of reasoning
// blocks is what the model produced after the row. In a tool loop still
// in progress (no user message after the text), leaving them out is
// still reported.
func TestReasoningRowOfAFinishedTurnLeftOut(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		last := "text"
		if strings.Contains(string(body), `"tool loop"`) {
			last = "tool_use"
		}
		w.Header().Set("Content-Type", "application/json")
		tail := `{"type":"text","text":"Hello."}`
		if last == "tool_use" && !strings.Contains(string(body), `"tool_result"`) {
			tail = `{"type":"tool_use","id":"toolu_1","name":"get_time","input":{}}`
		}
		fmt.Fprintf(w, `{"id":"msg_1","type":"message","role":"assistant","model":"c","content":[`+
			`{"type":"thinking","thinking":"Think %d.","signature":"SIG%d"},{"type":"redacted_thinking","data":"RED%d"},%s],`+
			`"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":5}}`, len(body), len(body), len(body), tail)
	}))
	t.Cleanup(up.Close)
	r := newRig(t, "", up.URL)
	for _, tc := range []struct {
		name     string
		first    string
		assitant string
		next     string
		rules    []string
	}{
		{name: "finished turn", first: `"hello"`, assitant: `[{"type":"text","text":"Hello."}]`, next: `"and now?"`},
		{name: "tool loop in progress", first: `"tool loop"`, assitant: `[{"type":"tool_use","id":"toolu_1","name":"get_time","input":{}}]`,
			next: `[{"type":"tool_result","tool_use_id":"toolu_1","content":"noon"}]`, rules: []string{"history_rewritten", "history_rewritten"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conv := "row-" + strings.ReplaceAll(tc.name, " ", "-")
			headers := map[string]string{"Turnlog-Token": token, "Turnlog-Conversation": conv, "anthropic-version": "2023-06-01"}
			msgs := fmt.Sprintf(`{"role":"user","content":%s}`, tc.first)
			resp, out := post(t, r.gw.URL+"/v1/messages", headers, fmt.Sprintf(`{"model":"c","max_tokens":100,"messages":[%s]}`, msgs))
			require.Equal(t, 200, resp.StatusCode, "%s", out)
			// The app leaves both thinking blocks out.
			msgs += fmt.Sprintf(`,{"role":"assistant","content":%s},{"role":"user","content":%s}`, tc.assitant, tc.next)
			resp, out = post(t, r.gw.URL+"/v1/messages", headers, fmt.Sprintf(`{"model":"c","max_tokens":100,"messages":[%s]}`, msgs))
			require.Equal(t, 200, resp.StatusCode, "%s", out)
			verify(t, r.log, conv)
			assert.Equal(t, tc.rules, checkRules(t, r.log, conv))
		})
	}
}
