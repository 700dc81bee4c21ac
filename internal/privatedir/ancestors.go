package privatedir

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// checkAncestors refuses dir when a directory above it lets another user
// rename an entry on its path, and so put a directory of theirs where
// dir was between Check and a later write. It walks the path as given
// (made absolute: a relative dir is under the working directory) and,
// for each symbolic link on it, the path the link leads to, one link at
// a time (linkedPaths): a link that leads to another link is checked
// there too, since whoever may replace that one may send dir elsewhere.
func checkAncestors(dir string, use Use) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("%s: %w", use.Name, err)
	}
	paths, err := linkedPaths(abs)
	if err != nil {
		return fmt.Errorf("%s: %w", use.Name, err)
	}
	for _, path := range paths {
		if err := checkChain(dir, path, use); err != nil {
			return err
		}
	}
	return nil
}

// maxLinks bounds linkedPaths as the kernel bounds a lookup (ELOOP).
const maxLinks = 40

// linkedPaths are abs, an absolute path, and each path it becomes as its
// first symbolic link is replaced by where that link leads, one link at
// a time, up to the path without links.
func linkedPaths(abs string) ([]string, error) {
	paths := []string{abs}
	for path := abs; ; {
		next, ok, err := followFirstLink(path)
		if err != nil || !ok {
			return paths, err
		}
		if len(paths) > maxLinks {
			return nil, fmt.Errorf("%s: too many levels of symbolic links", abs)
		}
		paths, path = append(paths, next), next
	}
}

// followFirstLink replaces the first symbolic link of path, an absolute
// and clean path, by where it leads, and reports whether it found one.
func followFirstLink(path string) (string, bool, error) {
	parts := strings.Split(strings.TrimPrefix(path, string(filepath.Separator)), string(filepath.Separator))
	prefix := string(filepath.Separator)
	for i, part := range parts {
		here := filepath.Join(prefix, part)
		info, err := os.Lstat(here)
		if err != nil {
			return "", false, err
		}
		if info.Mode()&os.ModeSymlink == 0 {
			prefix = here
			continue
		}
		target, err := os.Readlink(here)
		if err != nil {
			return "", false, err
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(prefix, target)
		}
		return filepath.Join(append([]string{target}, parts[i+1:]...)...), true, nil
	}
	return path, false, nil
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
