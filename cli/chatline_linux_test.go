package cli

import (
	"io"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/internal/syncbuf"
	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal: the side a terminal emulator holds and
// the side a program reads as its terminal.
func openPTY(t *testing.T) (terminal, program *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	require.NoError(t, unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0))
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	require.NoError(t, err)
	s, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return m, s
}

// TestLineEditorUsesTheTerminalsWidth (issue 23, item 6): the interactive
// line editor wrapped at 80 columns in a 200-column terminal. A line of
// 150 characters typed at a 200-column terminal is echoed on one row; a
// terminal that reports no size keeps the editor's 80 columns (a width of
// 0 broke the line after every character).
func TestLineEditorUsesTheTerminalsWidth(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cols  uint16
		typed int
	}{
		{name: "200 columns", cols: 200, typed: 150},
		{name: "no size reported", cols: 0, typed: 60},
	} {
		t.Run(tc.name, func(t *testing.T) {
			terminal, program := openPTY(t)
			if tc.cols > 0 {
				require.NoError(t, unix.IoctlSetWinsize(int(program.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 50, Col: tc.cols}))
			}
			screen := &syncbuf.Buffer{}
			go func() { _, _ = io.Copy(screen, terminal) }()

			input, err := lineReader(program, program)
			require.NoError(t, err)
			defer input.close()
			typed := strings.Repeat("a", tc.typed)
			got := make(chan lineRead, 1)
			go func() {
				line, err := input.read()
				got <- lineRead{line, err}
			}()
			// The prompt shows once the editor has the terminal in raw
			// mode: typed before, the line would be echoed by the
			// terminal itself.
			eventually(t, "the prompt shows", func() bool { return strings.Contains(screen.String(), "> ") })
			_, err = terminal.WriteString(typed + "\r")
			require.NoError(t, err)
			r := <-got
			require.NoError(t, r.err)
			assert.Equal(t, typed, r.line)
			eventually(t, "the line is echoed", func() bool { return strings.Count(screen.String(), "a") >= len(typed) })
			assert.Contains(t, screen.String(), "> "+typed, "echoed on one row: %q", screen.String())
		})
	}
}
