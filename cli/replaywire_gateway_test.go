package cli

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A call the recording gateway recorded (here by import --calls, which
// records through the same code) was sent by an app, not rendered by an
// engine: `replay --inference N --wire` prints its request as the
// canonical JSON its input hash is of, and says so, naming the hash of
// the bytes the app sent. It said the call "recorded no wire request"
// and failed (exit 2).
func TestReplayWireOfAGatewayCall(t *testing.T) {
	e := newAuditEnv(t, false)
	answer := func(id, text string) string {
		return `{"id":"` + id + `","object":"chat.completion","created":1,"model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":"` + text + `"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}}`
	}
	first := `{"model":"gpt-4o","temperature":0.5,"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi"}]}`
	second := `{ "model": "gpt-4o", "temperature": 0.5, "messages": [{"role":"system","content":"be brief"},{"role":"user","content":"hi"},{"role":"assistant","content":"hello"},{"role":"user","content":"more"}] }`
	importLoggedCalls(t, e,
		`{"api":"chat.completions","time":"2026-11-20T10:00:00Z","conversation":"gw","request":`+first+`,"response":`+answer("c1", "hello")+"}",
		`{"api":"chat.completions","time":"2026-11-20T10:01:00Z","conversation":"gw","request":`+second+`,"response":`+answer("c2", "more hello")+"}")

	out, errOut, code := e.run("", "replay", "gw", "--inference", "2", "--wire")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, `{"messages":[{"content":"be brief","role":"system"},{"content":"hi","role":"user"},{"content":"hello","role":"assistant"},{"content":"more","role":"user"}],"model":"gpt-4o","temperature":0.5}`, out)

	doc, _, code := e.run("", "replay", "gw", "--inference", "2", "-o", "json")
	require.Equal(t, 0, code)
	var got struct {
		Event struct {
			Inference struct {
				InputHash string            `json:"input_hash"`
				Verified  bool              `json:"verified"`
				Gateway   map[string]string `json:"gateway"`
			} `json:"inference"`
		} `json:"event"`
	}
	require.NoError(t, json.Unmarshal([]byte(doc), &got), doc)
	sum := sha256.Sum256([]byte(out))
	assert.Equal(t, "jcs:"+hex.EncodeToString(sum[:]), got.Event.Inference.InputHash, "what --wire prints is what the input hash is of")
	assert.True(t, got.Event.Inference.Verified)
	require.NotEmpty(t, got.Event.Inference.Gateway["wire_sha256"])
	assert.Contains(t, errOut, "canonical JSON")
	assert.Contains(t, errOut, got.Event.Inference.Gateway["wire_sha256"], "the note names the hash of the bytes the app sent")
}

// --rerun re-runs turnlog's middleware chain; an app's calls through the
// gateway were not made by it, and the result says so instead of only
// "re-ran 0 requests".
func TestRerunOfAGatewayConversationSaysWhy(t *testing.T) {
	e := newAuditEnv(t, false)
	importLoggedCalls(t, e, `{"api":"chat.completions","time":"2026-11-20T10:00:00Z","conversation":"gw","request":{"model":"m","messages":[{"role":"user","content":"hi"}]},"response":{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hello"},"finish_reason":"stop"}]}}`)
	out, errOut, code := e.run("", "replay", "gw", "--rerun")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "note: 1 model call was an app's, recorded by the recording gateway: no middleware chain made it, so --rerun has nothing of it to re-run; replay --verify proves its input and replay --check checks it")
}

// importLoggedCalls records logged calls (JSON lines of import --calls) into e's
// log, as the recording gateway records live ones.
func importLoggedCalls(t *testing.T, e *auditEnv, lines ...string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "calls.jsonl")
	require.NoError(t, os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o600))
	_, errOut, code := e.run("", "import", "--calls", file)
	require.Equal(t, 0, code, errOut)
}
