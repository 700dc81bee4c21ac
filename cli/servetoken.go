package cli

// How serve decides the HTTP API's token: the one it is given, else the
// one in <data>/auth/http.token (made on first start), unless --no-token.

import (
	"errors"
	"fmt"
	"io"

	"github.com/turnlog/turnlog/natsauth"
)

// httpToken is the HTTP API's token as serve resolved it.
type httpToken struct {
	// value is the token; "" only with --no-token.
	value string
	// file is the token file it came from; "" when given by flag or
	// environment, or with --no-token.
	file string
	// created is true when serve made the file now.
	created bool
}

// resolveHTTPToken returns the token serve requires of the HTTP API (at
// listen; "" when only the --metrics listener needs it) and of its
// --metrics listener: flag (--token, fromArgs when it was on the command
// line) or TURNLOG_TOKEN, else the data directory's token file, made when
// missing. --no-token turns the token off, with a warning on warn; a
// token given on the command line gets a warning too, since every local
// user sees a process's arguments.
func resolveHTTPToken(data, given string, fromArgs, noToken bool, listen string, warn io.Writer) (httpToken, error) {
	if noToken {
		if given != "" {
			return httpToken{}, errors.New("--no-token and a token (--token or TURNLOG_TOKEN) contradict each other; drop one")
		}
		if listen != "" {
			fmt.Fprintf(warn, "turnlog: WARNING: the HTTP API needs no token (--no-token): anyone who can reach %s can read every conversation, write to it, set the template, and read files through template previews\n", listen)
		}
		return httpToken{}, nil
	}
	if given != "" {
		if fromArgs {
			fmt.Fprintf(warn, "turnlog: WARNING: --token on the command line is visible to every user of this machine (ps, /proc/<pid>/cmdline); set TURNLOG_TOKEN instead, or write the token to %s\n",
				natsauth.TokenFile(natsauth.Dir(data)))
		}
		return httpToken{value: given}, nil
	}
	dir := natsauth.Dir(data)
	token, created, err := natsauth.EnsureToken(dir)
	if err != nil {
		return httpToken{}, err
	}
	return httpToken{value: token, file: natsauth.TokenFile(dir), created: created}, nil
}

// banner says where the API is and how to reach it with its token: where
// the token is and the console's address with it. The token itself is
// printed only on a terminal, for the operator's eyes, not into a log file
// or a journal.
func (t httpToken) banner(url string, terminal bool) string {
	head := "turnlog: HTTP API and web console on " + url + "\n"
	switch {
	case t.value == "":
		return head + "turnlog: the HTTP API needs NO token (--no-token)\n"
	case t.file == "":
		return head + "turnlog: every HTTP request needs the token of --token or TURNLOG_TOKEN; open the console at " + url + "/#token=<the token>\n"
	}
	state := "kept"
	if t.created {
		state = "created"
	}
	link := url + "/#token=<the token in that file>"
	if terminal {
		link = url + "/#token=" + t.value
	}
	return head + fmt.Sprintf("turnlog: every HTTP request needs the token in %s (%s, readable by you only): open the console at %s, or send -H \"Authorization: Bearer $(cat %s)\"\n",
		t.file, state, link, t.file)
}
