package cli

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/natstest"
)

// storedEventBytes is every byte the events streams hold (each message's
// data and headers), to search for what an erasure must have removed.
func storedEventBytes(t *testing.T, e *auditEnv) []byte {
	t.Helper()
	return natstest.StoredBytes(t, e.log.JetStream(), e.log.Names().EventStreams()...)
}

// listAfter is the conversation IDs listed after the line header in out,
// as a script reads erase's lists: one a line, first on it, up to an empty
// line.
func listAfter(t *testing.T, out, header string) []string {
	t.Helper()
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		if l != header {
			continue
		}
		var ids []string
		for _, line := range lines[i+1:] {
			if line == "" {
				return ids
			}
			id := strings.Fields(line)[0]
			require.NoError(t, events.ValidateConversationID(id), "line %q", line)
			ids = append(ids, id)
		}
		t.Errorf("no empty line after the list %q", header)
		return ids
	}
	return nil
}

// forkedEnv holds conversation a with a private address, its fork f1 (by
// turnlog fork) with more of its own, f1's fork f2, and u, unrelated.
func forkedEnv(t *testing.T) *auditEnv {
	t.Helper()
	e := newAuditEnv(t, false)
	appendStep(t, e, "a", events.UserAppended{BlockID: "u1", Text: "my address is 1 Main St"},
		events.LLMTextAppended{BlockID: "l1", Text: "noted: 1 Main St"})
	_, errOut, code := e.run("", "fork", "a", "f1")
	require.Equal(t, 0, code, errOut)
	appendStep(t, e, "f1", events.UserAppended{BlockID: "u2", Text: "my phone is 555-0100"})
	_, errOut, code = e.run("", "fork", "f1", "f2")
	require.Equal(t, 0, code, errOut)
	appendStep(t, e, "u", events.UserAppended{BlockID: "u1", Text: "nothing private here"})
	return e
}

func TestEraseFindsForks(t *testing.T) {
	ctx := context.Background()
	private := []string{"1 Main St", "555-0100"}
	for _, tc := range []struct {
		name string
		args []string
		// kept are the forks left, and listed as such.
		kept []string
		out  []string
	}{
		{name: "without --forks, the forks are named and kept", args: []string{"erase", "a", "--yes"},
			kept: []string{"f1", "f2"}, out: []string{"erased a: "}},
		{name: "--forks erases them too, deepest first", args: []string{"erase", "a", "--forks", "--yes"},
			out: []string{"erased f2: ", "erased f1: ", "erased a: "}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := forkedEnv(t)
			exists := func(conv string) bool {
				seq, err := e.log.LastSeq(ctx, conv)
				require.NoError(t, err)
				return seq > 0
			}
			out, errOut, code := e.run("", tc.args...)
			require.Equal(t, 0, code, errOut)
			lines := strings.Split(strings.TrimSpace(out), "\n")
			require.Len(t, lines, len(tc.out), out)
			for i, prefix := range tc.out {
				assert.True(t, strings.HasPrefix(lines[i], prefix), "got %q, want %q...", lines[i], prefix)
			}
			assert.False(t, exists("a"))
			assert.True(t, exists("u"), "an unrelated conversation is left alone")
			stored := storedEventBytes(t, e)
			assert.Contains(t, string(stored), "nothing private here")
			if tc.kept == nil {
				for _, conv := range []string{"f1", "f2"} {
					assert.False(t, exists(conv), conv)
				}
				for _, text := range private {
					assert.NotContains(t, string(stored), text, "no copy of the erased blocks is left")
				}
				assert.NotContains(t, errOut, "not erased")
				return
			}
			for _, conv := range tc.kept {
				assert.True(t, exists(conv), conv)
			}
			assert.Contains(t, string(stored), private[0], "the forks keep their copy")
			assert.Equal(t, tc.kept, listAfter(t, errOut, "forks of a not erased:"), "%s", errOut)
			assert.Contains(t, errOut, "turnlog erase --forks f1", "the command that erases them")

			t.Run("the command it gives erases what is left", func(t *testing.T) {
				_, errOut, code := e.run("", "erase", "f1", "--forks", "--yes")
				require.Equal(t, 0, code, errOut)
				for _, conv := range []string{"f1", "f2"} {
					assert.False(t, exists(conv), conv)
				}
				stored := storedEventBytes(t, e)
				for _, text := range private {
					assert.NotContains(t, string(stored), text)
				}
			})
		})
	}
}

func TestEraseConfirmationListsForks(t *testing.T) {
	e := forkedEnv(t)
	old := isTerminal
	isTerminal = func(any) bool { return true }
	t.Cleanup(func() { isTerminal = old })
	for _, tc := range []struct {
		name   string
		args   []string
		header string
	}{
		{name: "kept", args: []string{"erase", "a"}, header: "forks of a kept (--forks erases them too):"},
		{name: "erased too", args: []string{"erase", "a", "--forks"}, header: "forks of a erased too:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errOut, code := e.run("f1\n", tc.args...)
			assert.Equal(t, 2, code)
			assert.Contains(t, errOut, `you typed "f1", not the conversation ID; nothing erased`)
			before, _, found := strings.Cut(errOut, "Type the conversation ID to confirm")
			require.True(t, found, errOut)
			assert.Equal(t, []string{"f1", "f2"}, listAfter(t, before, tc.header), "listed before the question: %s", errOut)
		})
	}
	t.Run("typing the ID erases them all", func(t *testing.T) {
		out, errOut, code := e.run("a\n", "erase", "a", "--forks")
		require.Equal(t, 0, code, errOut)
		assert.Contains(t, errOut, "This erases conversation a and its 2 forks for good")
		assert.Contains(t, out, "erased f1: ")
	})
}

func TestEraseNamesConversationsItCannotCheck(t *testing.T) {
	ctx := context.Background()
	e := forkedEnv(t)
	// A NATS reply stored on x's subject: its first message is not a step.
	_, err := e.log.JetStream().Publish(ctx, e.log.Names().EventsRoleSubject("x", "admin"), []byte(`{"stream":"TURNLOG_EVENTS"}`))
	require.NoError(t, err)

	_, errOut, code := e.run("", "erase", "u", "--yes")
	require.Equal(t, 0, code, "the erase asked for happened: %s", errOut)
	assert.Equal(t, []string{"x"}, listAfter(t, errOut, "conversations not checked:"), "%s", errOut)
	assert.Contains(t, errOut, "turnlog repair x")

	_, errOut, code = e.run("", "erase", "a", "--forks", "--yes")
	assert.Equal(t, 1, code, "a fork may be left: %s", errOut)
	assert.Equal(t, []string{"x"}, listAfter(t, errOut, "conversations not checked:"), "%s", errOut)
	for _, conv := range []string{"a", "f1", "f2"} {
		seq, err := e.log.LastSeq(ctx, conv)
		require.NoError(t, err)
		assert.Zero(t, seq, "%s: what could be found is erased", conv)
	}
}

// readerFunc is an io.Reader made of a function.
type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }

// TestEraseFindsForksMadeWhileItRan: erase searched for forks before it
// erased, so a fork made after the search (while the confirmation waited
// for the ID, or by a gateway call or turnlog fork between the search and
// the erasure) kept its copy of the erased blocks, unnamed: --forks left
// it, and without --forks it was missing from the list of forks kept.
// The search runs again once the conversation is gone.
func TestEraseFindsForksMadeWhileItRan(t *testing.T) {
	ctx := context.Background()
	old := isTerminal
	isTerminal = func(any) bool { return true }
	t.Cleanup(func() { isTerminal = old })
	for _, tc := range []struct {
		name  string
		forks bool
	}{
		{name: "--forks erases it", forks: true},
		{name: "without --forks it is listed as kept"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := forkedEnv(t)
			answered := false
			confirm := readerFunc(func(p []byte) (int, error) {
				if !answered {
					answered = true
					// While erase waits for the ID: a fork of a, and a
					// fork of f2, each with a copy of a's blocks.
					for _, f := range [][2]string{{"a", "late1"}, {"f2", "late2"}} {
						_, errOut, code := e.run("", "fork", f[0], f[1])
						require.Equal(t, 0, code, errOut)
					}
				}
				return copy(p, "a\n"), io.EOF
			})
			args := []string{"erase", "a"}
			if tc.forks {
				args = append(args, "--forks")
			}
			out, errOut, code := e.runIn(confirm, args...)
			require.Equal(t, 0, code, "%s\n%s", out, errOut)
			exists := func(conv string) bool {
				seq, err := e.log.LastSeq(ctx, conv)
				require.NoError(t, err)
				return seq > 0
			}
			stored := string(storedEventBytes(t, e))
			if tc.forks {
				for _, conv := range []string{"a", "f1", "f2", "late1", "late2"} {
					assert.False(t, exists(conv), "%s erased", conv)
				}
				assert.NotContains(t, stored, "1 Main St", "no copy of the erased blocks is left")
				assert.Contains(t, out, "erased late1: ")
				assert.Contains(t, out, "erased late2: ")
				return
			}
			assert.ElementsMatch(t, []string{"f1", "f2", "late1", "late2"}, listAfter(t, errOut, "forks of a not erased:"), "%s", errOut)
		})
	}
}
