package embedded

// This file holds where the store of a data directory lives when the
// server's users are in accounts: JetStream keeps each account's streams
// in a directory of its own, named after the account.

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/nats-io/nats-server/v2/server"
)

// storesAccount is the account whose store the server opens: the global
// account's when the users are in none (no authentication, or users
// without accounts), else StreamsAccount's.
func (c Config) storesAccount() string {
	if len(c.Users) == 0 || len(c.Accounts) == 0 || c.StreamsAccount == "" {
		return server.DEFAULT_GLOBAL_ACCOUNT
	}
	return c.StreamsAccount
}

// moveStore gives the account whose streams the server is about to open
// (storesAccount) the streams of the data directory that are in the store
// of the other account turnlog may have used: a data directory made before
// the roles had accounts, or served with --no-auth, holds its streams in
// the global account's store ($G); one served with authentication, in
// StreamsAccount's. Without the move they would still be on disk, but the
// server would open none of them, and the log would start empty. A single
// server's store holds nothing that names its account (a cluster's does,
// in its meta group: there the streams must be restored into the new
// account), so a rename of the directory is the whole move. Nothing moves
// when the store in use exists already: two stores holding streams are for
// a person to sort out, not for a rename to overwrite: Warn is told.
func (c Config) moveStore() error {
	to, from := c.storesAccount(), c.StreamsAccount
	if to != server.DEFAULT_GLOBAL_ACCOUNT {
		from = server.DEFAULT_GLOBAL_ACCOUNT
	}
	if from == "" || from == to {
		return nil
	}
	root := filepath.Join(c.DataDir, server.JetStreamStoreDir)
	src, dst := filepath.Join(root, from), filepath.Join(root, to)
	if _, err := os.Stat(src); errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		return fmt.Errorf("look for the store of account %s: %w", from, err)
	}
	if _, err := os.Stat(dst); err == nil {
		if held, _ := os.ReadDir(filepath.Join(src, "streams")); len(held) > 0 && c.Warn != nil {
			c.Warn(fmt.Sprintf("%s holds streams that this server does not open: it opens %s, the store of account %s (turnlog moved the store there, and then something wrote to %s again, e.g. an older turnlog). "+
				"Nothing is moved or deleted: with the server stopped, keep the store you want as %s", src, dst, to, from, dst))
		}
		return nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("look for the store of account %s: %w", to, err)
	}
	if err := os.Rename(src, dst); err != nil {
		return fmt.Errorf("move the streams of account %s to account %s (%v); move %s to %s by hand, with the server stopped", from, to, err, src, dst)
	}
	return nil
}
