// Package natsauth is how turnlog's NATS servers know who may do what:
// three roles (admin, client, worker), one nkey per role, and for each role
// the subjects it may publish and subscribe to, enforced by nats-server
// itself. The client role is in a NATS account of its own, without
// JetStream, that imports its grants from turnlog's (accounts.go): no reply
// subject a client names can be stored. The embedded server of `turnlog
// serve` creates the keys on first start and loads the roles' accounts and
// permissions into its options; a cluster operator generates the keys with
// `turnlog auth init` and gives the servers the configuration `turnlog auth
// conf` prints (deploy/auth.conf).
//
// A key file (<role>.nk) is an identity only: what a role may do lives in
// the server's configuration, derived from the installation's subject
// prefix, so a newer turnlog that needs another subject updates the
// permissions without new keys.
package natsauth

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Role is a set of NATS permissions, one per kind of turnlog process.
type Role string

// The roles. Each has exactly the permissions its commands need.
const (
	// Admin may do everything: provision streams, set templates, import,
	// fork, erase, repair. The owner of a data directory is its admin.
	Admin Role = "admin"
	// Client may send chat requests and read what chat, replay, export,
	// diff-turns and status show; it cannot write the log.
	Client Role = "client"
	// Worker may consume chat requests, append events, publish deltas and
	// read and write snapshots; it cannot erase, purge or set templates.
	Worker Role = "worker"
)

// Roles lists every role, in the order documents show them.
var Roles = []Role{Admin, Client, Worker}

// InboxPrefix is the prefix of role r's reply subjects (nats.go's
// nats.CustomInboxPrefix): each role may subscribe to its own prefix only,
// so no credential reads the replies meant for another role (a worker's
// pulled chat requests, the admin's reads). Two processes with the same
// key share a prefix: they are one NATS user with the same rights, and the
// replies of one (JetStream API answers, direct gets, status pongs) hold
// nothing the other may not ask for itself.
func InboxPrefix(r Role) string { return "_INBOX_" + string(r) }

// RoleOfKeyFile returns the role whose key file is named like path
// (<role>.nk, as `turnlog serve` and `turnlog auth init` write them), or
// "" for any other name: how a command given --creds worker.nk knows the
// inbox prefix the server allows it.
func RoleOfKeyFile(path string) Role {
	base := filepath.Base(path)
	for _, r := range Roles {
		if base == string(r)+".nk" {
			return r
		}
	}
	return ""
}

// ParseRole returns the role named s.
func ParseRole(s string) (Role, error) {
	for _, r := range Roles {
		if string(r) == s {
			return r, nil
		}
	}
	names := make([]string, len(Roles))
	for i, r := range Roles {
		names[i] = string(r)
	}
	return "", fmt.Errorf("role %q: use one of %s", s, strings.Join(names, ", "))
}
