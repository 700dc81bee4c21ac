package cli

import (
	"bufio"
	"io"
	"os"

	"golang.org/x/term"
)

// lineInput is what interactive chat reads its lines from and writes to.
type lineInput struct {
	// read returns the next line typed, io.EOF at the end (Ctrl-D, or
	// Ctrl-C at a terminal's prompt).
	read func() (string, error)
	// w is where chat writes: through the line editor on a terminal, so
	// that output and the line being typed do not mix.
	w io.Writer
	// close gives the terminal back as it was.
	close func()
}

// lineReader gives line editing and history on a terminal (x/term) and
// plain line reading otherwise.
//
// On a terminal, raw mode is on only while a line is read: while a request
// runs the terminal is in its usual mode, so Ctrl-C is SIGINT and stops
// the wait (in raw mode it is a byte no one reads). Each line is edited at
// the terminal's width as it is when the line starts (x/term's default is
// 80 columns, whatever the window).
func lineReader(in io.Reader, out io.Writer) (lineInput, error) {
	if f, ok := in.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		fd := int(f.Fd())
		cooked, err := term.GetState(fd)
		if err != nil {
			return lineInput{}, err
		}
		t := term.NewTerminal(struct {
			io.Reader
			io.Writer
		}{f, out}, "> ")
		read := func() (string, error) {
			// A terminal that reports no size (a bare pseudo-terminal)
			// keeps the editor's default rather than a width of 0.
			if width, height, err := term.GetSize(fd); err == nil && width > 0 && height > 0 {
				_ = t.SetSize(width, height)
			}
			state, err := term.MakeRaw(fd)
			if err != nil {
				return "", err
			}
			defer func() { _ = term.Restore(fd, state) }()
			return t.ReadLine()
		}
		return lineInput{read: read, w: t, close: func() { _ = term.Restore(fd, cooked) }}, nil
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	read := func() (string, error) {
		if !sc.Scan() {
			if sc.Err() != nil {
				return "", sc.Err()
			}
			return "", io.EOF
		}
		return sc.Text(), nil
	}
	return lineInput{read: read, w: out, close: func() {}}, nil
}
