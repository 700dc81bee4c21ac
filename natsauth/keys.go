package natsauth

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/nats-io/nkeys"
)

// DirName is the directory of a data directory that holds its keys:
// <data>/auth/<role>.nk.
const DirName = "auth"

// Dir is the key directory of the data directory dataDir.
func Dir(dataDir string) string { return filepath.Join(dataDir, DirName) }

// KeyFile is where role r's key lives in the key directory dir.
func KeyFile(dir string, r Role) string { return filepath.Join(dir, string(r)+".nk") }

// keyHeader precedes the seed in a key file. nats.go and the nats CLI take
// the first line that starts with "SU" as the seed, so comments may stand
// before it.
const keyHeader = "# turnlog NATS credential for the %s role: an nkey seed. Keep it secret.\n" +
	"# Use it with: turnlog --creds %s, or nats --nkey %s\n"

// Ensure makes sure dir holds a key for every role: it creates dir (mode
// 0700) and each missing key file (mode 0600), and returns the roles whose
// keys it created. Existing keys are kept. A directory or key file that
// other users may read is refused, not repaired: someone else may already
// have the keys.
func Ensure(dir string) ([]Role, error) {
	if err := keyDir(dir); err != nil {
		return nil, err
	}
	var created []Role
	for _, r := range Roles {
		path := KeyFile(dir, r)
		_, err := os.Stat(path)
		if err == nil {
			if err := privateMode(path, 0o600); err != nil {
				return nil, err
			}
			if _, err := PublicKey(path); err != nil {
				return nil, err
			}
			continue
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("key of role %s: %w", r, err)
		}
		if err := writeKey(path, r); err != nil {
			return nil, err
		}
		created = append(created, r)
	}
	return created, nil
}

// keyDir creates the key directory dir (mode 0700) when missing, and
// refuses it when other users may read it.
func keyDir(dir string) error {
	return keyDirHolding(dir, "NATS credentials", renewKeys)
}

// keyDirHolding is keyDir, saying that dir holds what (see private).
func keyDirHolding(dir, what, renew string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create key directory: %w", err)
	}
	return private(dir, 0o700, what, renew)
}

// renewKeys says how to replace NATS keys that may have leaked.
const renewKeys = "make new keys if it was exposed (delete the key files; the next start makes new ones)"

// privateMode refuses path, which holds NATS keys, when group or others
// have any permission on it.
func privateMode(path string, want fs.FileMode) error {
	return private(path, want, "NATS credentials", renewKeys)
}

// private refuses path, which holds secrets (what), when group or others
// have any permission on it; renew says how to replace secrets that may
// have leaked.
func private(path string, want fs.FileMode, what, renew string) error {
	info, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("check %s: %w", path, err)
	}
	if info.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("%s holds %s but other users may read it (mode %04o); run chmod %o %s, and %s",
			path, what, info.Mode().Perm(), want, path, renew)
	}
	return nil
}

func writeKey(path string, r Role) error {
	kp, err := nkeys.CreateUser()
	if err != nil {
		return fmt.Errorf("create key of role %s: %w", r, err)
	}
	defer kp.Wipe()
	seed, err := kp.Seed()
	if err != nil {
		return fmt.Errorf("create key of role %s: %w", r, err)
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, keyHeader, r, path, path)
	b.Write(seed)
	b.WriteByte('\n')
	if err := writeSecret(path, b.Bytes()); err != nil {
		return fmt.Errorf("write key of role %s: %w", r, err)
	}
	return nil
}

// writeSecret writes data to a new file at path, mode 0600, synced before
// it returns; nothing is left behind when it fails. O_EXCL: two processes
// starting on the same directory at once must not overwrite each other's
// secret, so an existing file is an error matching fs.ErrExist.
func writeSecret(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return err
	}
	return nil
}

// PublicKey reads a key file (an nkey seed, as written by Ensure or nsc)
// and returns the user's public key, which a server's configuration names.
func PublicKey(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read NATS key: %w", err)
	}
	kp, err := nkeys.ParseDecoratedNKey(data)
	clear(data)
	if err != nil {
		return "", fmt.Errorf("%s is not an nkey seed file (%v); delete it and start turnlog serve again, or run turnlog auth init, to make a new one", path, err)
	}
	defer kp.Wipe()
	pub, err := kp.PublicKey()
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	if !nkeys.IsValidPublicUserKey(pub) {
		return "", fmt.Errorf("%s holds a %s key, not a user key; use a user seed (it starts with SU)", path, pubKind(pub))
	}
	return pub, nil
}

func pubKind(pub string) string {
	if pub == "" {
		return "empty"
	}
	switch pub[0] {
	case 'O':
		return "operator"
	case 'A':
		return "account"
	case 'N':
		return "server"
	}
	return "non-user"
}
