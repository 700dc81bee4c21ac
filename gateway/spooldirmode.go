package gateway

import (
	"fmt"
	"os"
	"syscall"
)

// checkSpoolDir refuses a spool directory that users other than this
// process's may control. Every file in it is a call that the gateway
// records once NATS is back, with its own credential: whoever may write
// the directory could put calls of their own into any conversation, or
// remove the gateway's before they are recorded, without a credential.
// So the directory must be this user's (or root's), and not writable by
// every user (the sticky bit does not help: others may still add files).
// The directory the gateway makes is 0700; only one made beforehand, or a
// shared one such as /tmp given as --spool-dir, can be open.
func checkSpoolDir(dir string) error {
	info, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("gateway: the spool directory: %w", err)
	}
	if info.Mode().Perm()&0o002 != 0 {
		return fmt.Errorf("gateway: the spool directory %s may be written by every user of this machine (mode %04o), who could add calls to the record or remove the gateway's: run chmod o-w %s (chmod 700 keeps it to you), or give --spool-dir a directory of your own",
			dir, info.Mode().Perm(), dir)
	}
	if st, ok := info.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() && st.Uid != 0 {
		return fmt.Errorf("gateway: the spool directory %s belongs to another user (uid %d), who may change what it holds, its mode too: give --spool-dir a directory of your own",
			dir, st.Uid)
	}
	return nil
}
