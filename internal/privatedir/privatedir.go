// Package privatedir checks that a directory whose files turnlog trusts
// (the embedded server's data directory, the gateway's spool) is
// controlled by this process's user alone.
package privatedir

import (
	"fmt"
	"os"
	"runtime"
)

// Use says what a directory is for, in the words of the error that
// refuses it.
type Use struct {
	// Name names the directory: "the spool directory".
	Name string
	// Risk is what another user could do with it, after "who could":
	// "add calls to the record or remove the gateway's".
	Risk string
	// Flag is the option that picks another directory: "--spool-dir".
	Flag string
}

// Check refuses dir when users other than this process's may control
// it, in the manner of OpenSSH's StrictModes: whoever may write a
// directory may rename, remove or add its entries (the sticky bit does
// not stop them adding), and whoever owns it may change its mode at
// will. So dir must be this user's (or root's), writable by no other
// user, nor by its group unless that is the user's private group (the
// group named as the user, whose only member the user is: a plain mkdir
// under Debian's umask 002). Every later write looks the path up again,
// so each directory above dir, up to /, must be root's or this user's
// and writable by neither group nor others, or sticky (as /tmp is) with
// its entry on the path this user's or root's, which only they may then
// rename; a path through a symbolic link is checked along the link,
// along each link it leads through and along where it ends. A directory
// turnlog makes is 0700 and passes; only one made beforehand, or in a
// shared place, can be open. Windows reports no such bits, and is not
// checked.
func Check(dir string, use Use) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	info, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("%s: %w", use.Name, err)
	}
	if info.Mode().Perm()&0o002 != 0 {
		return fmt.Errorf("%s %s may be written by every user of this machine (mode %04o), who could %s: run chmod o-w %s (chmod 700 keeps it to you), or give %s a directory of your own",
			use.Name, dir, info.Mode().Perm(), use.Risk, dir, use.Flag)
	}
	if uid, ok := ownedByUs(info); !ok {
		return fmt.Errorf("%s %s belongs to another user (uid %d), who may change what it holds, its mode too: give %s a directory of your own",
			use.Name, dir, uid, use.Flag)
	}
	if groupMayWrite(info) {
		return fmt.Errorf("%s %s may be written by its group (mode %04o), whose members could %s: run chmod g-w %s (chmod 700 keeps it to you), or give %s a directory of your own",
			use.Name, dir, info.Mode().Perm(), use.Risk, dir, use.Flag)
	}
	return checkAncestors(dir, use)
}
