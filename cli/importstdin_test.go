package cli

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/gateway"
	"github.com/turnlog/turnlog/replay"
)

// TestImportReadsStdinForDash reproduces an adopter's report: `turnlog
// import --calls -` failed with "open -: no such file or directory"
// instead of reading the calls from standard input, as "-" means for
// every other file argument of turnlog (template set -, prompt set -) and
// of most tools; plain import had the same fault with a chat file.
func TestImportReadsStdinForDash(t *testing.T) {
	e := newAuditEnv(t, false)
	ctx := context.Background()

	calls := callLine("2025-03-01T10:00:00Z", "piped-calls", "chat.completions", chatReq(callSys), chatResp("Sunny.")) + "\n"
	out, errOut, code := e.run(calls, "import", "--calls", "-", "-o", "json")
	require.Equal(t, 0, code, errOut)
	var res []gateway.Imported
	require.NoError(t, json.Unmarshal([]byte(out), &res), out)
	require.Len(t, res, 1)
	assert.Equal(t, "piped-calls", res[0].Conversation)
	seq, err := e.log.LastSeq(ctx, "piped-calls")
	require.NoError(t, err)
	assert.NotZero(t, seq, "the piped call is recorded")

	out, errOut, code = e.run(calls, "import", "--calls", "-")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "<stdin>:1: unchanged", "lines of standard input are named <stdin>:N")

	_, errOut, code = e.run("", "import", "--calls", "-")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "<stdin>")
	assert.Contains(t, errOut, "holds no calls")

	chat := `{"id": "piped-chat", "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello."}]}`
	out, errOut, code = e.run(chat, "import", "-")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "<stdin>: imported as piped-chat")
	exported, errOut, code := e.run("", "export", "piped-chat")
	require.Equal(t, 0, code, errOut)
	var got replay.Chat
	require.NoError(t, json.Unmarshal([]byte(exported), &got))
	assert.Len(t, got.Messages, 3)

	_, errOut, code = e.run(chat, "import", "-", "-")
	assert.Equal(t, 2, code, "standard input is read once")
	assert.Contains(t, errOut, "once")

	_, errOut, code = e.run(`{"id": "bad", "messages": [{"role": "wizard", "content": "x"}]}`, "import", "-")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "<stdin>: ")
	assert.Contains(t, errOut, "nothing imported")
}

// TestImportHelpSaysDashIsStdin: the help says "-" reads standard input.
func TestImportHelpSaysDashIsStdin(t *testing.T) {
	out, code := runCmdStdout(t, "import", "--help")
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "turnlog import -.", "import's help shows - for a chat file")
	assert.Contains(t, out, "turnlog import --calls -", "and for --calls")
}
