// Command turnlog is the one binary of turnlog: the embedded server, the
// workers, the chat client and the audit tools. Each subcommand parses its
// flags and calls a package; main only maps errors to exit codes.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// exitError carries a specific exit code (diff-turns: 1 = different,
// replay --verify: 1 = mismatch) through cobra.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

func main() {
	err := newRootCmd().Execute()
	if err == nil {
		return
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintln(os.Stderr, "turnlog:", ee.err)
		}
		os.Exit(ee.code)
	}
	fmt.Fprintln(os.Stderr, "turnlog:", err)
	os.Exit(2)
}

// printJSON is how every command prints JSON: indented, with <, > and &
// left as they are (a prompt or a tool argument must read as written).
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
