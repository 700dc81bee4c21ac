package cli

// How serve runs its embedded NATS server with authentication: a key per
// role in the data directory, the accounts and users made of them, and the
// keys serve's own connections use.

import (
	"fmt"
	"io"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/natsauth"
)

func authName(noAuth bool) string {
	if noAuth {
		return "NO authentication"
	}
	return "authentication on"
}

// serveAuth is what serve needs to run NATS with authentication: the
// server's accounts and users and the keys serve's own connections use.
type serveAuth struct {
	auth          natsauth.Auth
	admin, worker nats.Option
}

// serveKeys makes sure <data>/auth holds a key per role, says so when it
// created them, and loads them.
func serveKeys(data string, names eventlog.Names, out io.Writer) (*serveAuth, error) {
	dir := natsauth.Dir(data)
	created, err := natsauth.Ensure(dir)
	if err != nil {
		return nil, err
	}
	if len(created) > 0 {
		files := make([]string, len(created))
		for i, r := range created {
			files[i] = string(r) + ".nk"
		}
		fmt.Fprintf(out, "turnlog: created NATS keys in %s (%s): turnlog commands run here use admin.nk; see docs/security.md\n", dir, strings.Join(files, ", "))
	}
	a := &serveAuth{}
	if a.auth, err = natsauth.ServerAuth(dir, names); err != nil {
		return nil, err
	}
	if a.admin, err = nats.NkeyOptionFromSeed(natsauth.KeyFile(dir, natsauth.Admin)); err != nil {
		return nil, fmt.Errorf("admin key: %w", err)
	}
	if a.worker, err = nats.NkeyOptionFromSeed(natsauth.KeyFile(dir, natsauth.Worker)); err != nil {
		return nil, fmt.Errorf("worker key: %w", err)
	}
	return a, nil
}

// withKey is the options of an in-process connection: the key, if any.
func withKey(key nats.Option) []nats.Option {
	if key == nil {
		return nil
	}
	return []nats.Option{key}
}
