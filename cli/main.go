// Package cli is the whole turnlog command: the embedded server, the
// workers, the chat client and the audit tools. Each subcommand parses its
// flags and calls a package; Main only maps errors to exit codes.
//
// A program that registers its own engines and middlewares (see
// profile.RegisterEngine and profile.RegisterMiddleware) and then calls
// Main gets every turnlog command with them, as database/sql programs get
// their drivers by importing them.
package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	_ "github.com/turnlog/turnlog/engine/builtin" // the stock command has every engine turnlog ships
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

// Main runs the turnlog command with os.Args and exits with its status:
// 0 on success, the command's own code (diff-turns: 1 = different,
// replay --verify: 1 = mismatch) where it sets one, 2 on any other error.
// cmd/turnlog is nothing but a call to Main.
func Main() {
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
