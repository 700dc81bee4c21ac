package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/replay"
)

// TestImportCallsLatencyUnknown: a logged call without "duration_ms" was
// recorded with the importer's own time to record it as its latency
// (replay said "finished in 36µs", the calls view latency_ms 0.035). Its
// latency is unknown: replay says none, the calls view says null, as it
// does for usage; a logged duration is kept.
func TestImportCallsLatencyUnknown(t *testing.T) {
	e := newAuditEnv(t, false)
	req := chatReq(`{"role":"user","content":"hi"}`)
	withDuration := strings.TrimSuffix(callLine("2025-03-01T10:01:00Z", "timed", "chat.completions", req, chatResp("Hello.")), "}") + `,"duration_ms":1500}`
	failed := `{"api":"chat.completions","time":"2025-03-01T10:02:00Z","conversation":"untimed-failed","request":` + req + `,"status":500,"response":{"error":{"message":"boom"}}}`
	file := e.file("calls.jsonl", strings.Join([]string{
		callLine("2025-03-01T10:00:00Z", "untimed", "chat.completions", req, chatResp("Hello.")),
		withDuration,
		failed,
	}, "\n")+"\n")
	_, errOut, code := e.run("", "import", "--calls", file)
	require.Equal(t, 0, code, errOut)

	for _, tc := range []struct {
		name, conv string
		text       string // what replay says of the call's end
		latency    string // the calls view's latency_ms
	}{
		{name: "finished, no duration logged", conv: "untimed", text: "inference.finished", latency: "null"},
		{name: "failed, no duration logged", conv: "untimed-failed", text: "inference.failed", latency: "null"},
		{name: "duration logged", conv: "timed", text: "finished in 1.5s", latency: "1500"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := e.run("", "replay", tc.conv)
			require.Equal(t, 0, code, errOut)
			assert.Contains(t, out, tc.text)
			if tc.latency == "null" {
				assert.NotContains(t, out, "finished in", "no latency is invented")
				assert.NotContains(t, out, "failed after", "no latency is invented")
			}
			page, err := replay.Calls(context.Background(), e.log, tc.conv, replay.Page{})
			require.NoError(t, err)
			require.Len(t, page.Calls, 1)
			b, err := json.Marshal(page.Calls[0])
			require.NoError(t, err)
			assert.Contains(t, string(b), `"latency_ms":`+tc.latency+`,`)
		})
	}
}
