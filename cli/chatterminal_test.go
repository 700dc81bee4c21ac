package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/worker"
)

// hostile is text with escape sequences that retitle the window (OSC),
// clear the screen (CSI, also as the one-byte C1 CSI) and ring the bell.
const hostile = "before \x1b]0;pwned\x07 \x1b[2J \u009b31m \rafter"

// assertNoTerminalControls fails when out holds a byte that starts or
// ends a terminal control sequence.
func assertNoTerminalControls(t *testing.T, out string) {
	t.Helper()
	for _, c := range []string{"\x1b", "\x07", "\u009b", "\r"} {
		assert.NotContains(t, out, c, "a control character reached the terminal: %q", out)
	}
}

// TestChatPrintsNoTerminalControls: `turnlog chat` printed the model's
// answer, its tool calls and results and a failed call's error as they
// came, so an answer (a provider's, or text a prompt injection made a
// model repeat) could drive the terminal of whoever chats: retitle the
// window, clear or rewrite the screen. ls already drops such characters
// from the text it lists; chat now does too, in -m and interactive mode.
func TestChatPrintsNoTerminalControls(t *testing.T) {
	e := newAuditEnv(t, true)

	out, errOut, code := e.run("", "chat", "-m", hostile, "esc-m")
	require.Equal(t, 0, code, errOut)
	assertNoTerminalControls(t, out)
	assert.Contains(t, out, "before ]0;pwned [2J 31m after")

	out, errOut, code = e.run(hostile+"\n/quit\n", "chat", "esc-interactive")
	require.Equal(t, 0, code, errOut)
	assertNoTerminalControls(t, out)
	assert.Contains(t, out, "before ]0;pwned [2J 31m after")

	var printed bytes.Buffer
	p := newAnswerPrinter(&printed)
	p.event(eventlog.Record{Event: events.Event{Step: 0, Payload: events.ToolCalled{Name: "t", Arguments: hostile}}})
	p.event(eventlog.Record{Event: events.Event{Step: 1, Payload: events.ToolResult{Text: hostile}}})
	p.event(eventlog.Record{Event: events.Event{Step: 2, Payload: events.InferenceFailed{Error: hostile}}})
	p.delta(worker.Delta{Kind: events.KindLLMText, Text: hostile, Step: 3})
	p.finish()
	assertNoTerminalControls(t, printed.String())
	assert.Equal(t, 4, strings.Count(printed.String(), "after"), printed.String())
}

// TestTableCellsHoldNoBidiOverrides: ls and status print text a user or
// a provider wrote in table cells; a right-to-left override (U+202E) in
// one showed it, and the cells after it on the line, reversed.
func TestTableCellsHoldNoBidiOverrides(t *testing.T) {
	got := oneLine("invoice \u202egpj.exe\u202c and \u2067isolated\u2069 "+hostile, 200)
	for _, r := range []string{"\u202e", "\u202c", "\u2067", "\u2069"} {
		assert.NotContains(t, got, r)
	}
	assertNoTerminalControls(t, got)
	assert.Equal(t, "invoice gpj.exe and isolated before ]0;pwned [2J 31m after", got)
}
