package privatedir

import (
	"fmt"
	"os"
	"path/filepath"
)

// checkAncestors refuses dir when a directory above it lets another user
// rename an entry on its path, and so put a directory of theirs where
// dir was between Check and a later write. It walks the path as given
// (made absolute: a relative dir is under the working directory) and,
// when a symbolic link is on it, the path the links lead to.
func checkAncestors(dir string, use Use) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("%s: %w", use.Name, err)
	}
	if err := checkChain(dir, abs, use); err != nil {
		return err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return fmt.Errorf("%s: %w", use.Name, err)
	}
	if real == abs {
		return nil
	}
	return checkChain(dir, real, use)
}

// checkChain checks each directory above path, the absolute path of dir,
// against the entry below it on the path.
func checkChain(dir, path string, use Use) error {
	for child := path; ; {
		parent := filepath.Dir(child)
		if parent == child {
			return nil
		}
		// The entry itself, not what a link leads to: a link's owner is who
		// may rename it out of a sticky directory.
		entry, err := os.Lstat(child)
		if err != nil {
			return fmt.Errorf("%s: %w", use.Name, err)
		}
		info, err := os.Stat(parent)
		if err != nil {
			return fmt.Errorf("%s: %w", use.Name, err)
		}
		if uid, ok := ownedByUs(info); !ok {
			return fmt.Errorf("%s %s is inside %s, which belongs to another user (uid %d), who may rename it and put a directory of theirs in its place: give %s a directory of your own",
				use.Name, dir, parent, uid, use.Flag)
		}
		_, entryOurs := ownedByUs(entry)
		sticky := info.Mode()&os.ModeSticky != 0
		if (info.Mode().Perm()&0o002 != 0 || groupMayWrite(info)) && !(sticky && entryOurs) {
			return fmt.Errorf("%s %s is inside %s, which other users may write (mode %04o): they could rename %s and put a directory of theirs in its place, and so %s: run chmod go-w %s, or give %s a directory of your own",
				use.Name, dir, parent, info.Mode().Perm(), child, use.Risk, parent, use.Flag)
		}
		child = parent
	}
}
