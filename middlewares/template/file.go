package template

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// kernelDirs hold files that are not documents but views of the running
// system: /proc/self/environ and /proc/self/cmdline are the worker's
// environment and command line (serve's --token among them), /sys and
// /dev expose the machine. A file: variable never reads there, nor git
// runs there, whatever path leads there.
var kernelDirs = []string{"/proc", "/sys", "/dev"}

// inKernelDir reports whether the absolute, clean path p is one of
// kernelDirs or below one.
func inKernelDir(p string) bool {
	for _, d := range kernelDirs {
		if p == d || strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}

// workDir returns env.Cwd with its symbolic links resolved, and false when
// there is none or when it lies in a kernel directory, as written (so
// /proc/self/cwd, a link to the worker's own directory, is refused) or once
// resolved (so a link to /proc/self is refused), or on a kernel file system
// mounted elsewhere.
func (e Env) workDir() (string, bool) {
	if e.Cwd == "" {
		return "", false
	}
	abs, err := filepath.Abs(e.Cwd)
	if err != nil || inKernelDir(abs) {
		return "", false
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil || inKernelDir(real) || onKernelFSPath(real) || e.denied(abs) || e.denied(real) {
		return "", false
	}
	return real, true
}

// denied reports whether the absolute path p is one of env.DenyDirs or
// lies below one, as written or with the directory's links resolved.
func (e Env) denied(p string) bool {
	p = filepath.Clean(p)
	for _, d := range e.DenyDirs {
		d = filepath.Clean(d)
		if Within(p, d) {
			return true
		}
		if real, err := filepath.EvalSymlinks(d); err == nil && Within(p, real) {
			return true
		}
	}
	return false
}

// Within reports whether the clean absolute path p is dir or lies below
// it. The file variable's denied directories and the worker's cwd roots
// (middlewares) are both judged by it.
func Within(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && filepath.IsLocal(rel)
}

// truncationNote ends a value cut at the file cap, so that the model, and
// whoever reads the recorded prompt and variables, sees it is not whole.
func truncationNote(ref string, limit int64) string {
	return fmt.Sprintf("\n[truncated by turnlog: %s is longer than %d bytes]", ref, limit)
}

// readFile resolves file:<name>: a regular file under the working
// directory, at most env.maxFileBytes() of it. Any refusal means "does not
// exist":
//
//   - The file is opened through an os.Root on the working directory
//     (symbolic links resolved), which refuses any path that leaves it:
//     ".." escapes, and symbolic links pointing outside (or absolute
//     symbolic links, even to inside). An absolute name is accepted only
//     when it lies lexically inside the working directory.
//   - Nothing in /proc, /sys or /dev is read (see workDir), nor on Linux
//     any file on a kernel file system (procfs, sysfs, ...) wherever it is
//     mounted.
//   - Nothing in env.DenyDirs is read, by the path the file really has
//     once open.
//   - Only regular files are read: not directories, devices or FIFOs. The
//     file is checked before it is opened and again once open, and it is
//     opened non-blocking, so a FIFO swapped in between cannot hang the
//     worker.
//
// A file longer than the cap is cut to it, back to a whole UTF-8
// character, and ends with a truncation note naming the variable and the
// cap.
func readFile(env Env, name string) (string, bool) {
	cwd, ok := env.workDir()
	if !ok {
		return "", false
	}
	if filepath.IsAbs(name) {
		rel, ok := relativeInside(env.Cwd, name)
		if !ok {
			if rel, ok = relativeInside(cwd, name); !ok {
				return "", false
			}
		}
		name = rel
	}
	if inKernelDir(filepath.Join(cwd, name)) || env.denied(filepath.Join(cwd, name)) {
		return "", false // e.g. cwd "/" and name "proc/self/environ"
	}
	root, err := os.OpenRoot(cwd)
	if err != nil {
		return "", false
	}
	defer root.Close()
	info, err := root.Stat(name)
	if err != nil || !info.Mode().IsRegular() {
		return "", false
	}
	f, err := root.OpenFile(name, os.O_RDONLY|openFlags, 0)
	if err != nil {
		return "", false
	}
	defer f.Close()
	if info, err = f.Stat(); err != nil || !info.Mode().IsRegular() || onKernelFS(f) {
		return "", false
	}
	if len(env.DenyDirs) > 0 {
		// Where the file really is, links inside the working directory
		// followed: a link to <data>/auth that stays inside the working
		// directory passes the root's check, not this one.
		real, ok := openedPath(f, filepath.Join(cwd, name))
		if !ok || env.denied(real) {
			return "", false
		}
	}
	limit := env.maxFileBytes()
	b, err := readCapped(f, info.Size(), limit)
	if err != nil {
		return "", false
	}
	if int64(len(b)) <= limit {
		return string(b), true
	}
	return string(wholeRunes(b[:limit], true)) + truncationNote("file:"+name, limit), true
}

// readCapped reads r up to limit+1 bytes (one more than the cap, to tell
// whether there is more), into a buffer sized from size, the length the
// file had when opened, so that a file read whole is allocated once.
func readCapped(r io.Reader, size, limit int64) ([]byte, error) {
	r = io.LimitReader(r, limit+1)
	b := make([]byte, 0, max(min(size, limit)+1, 512))
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // the file grew since it was opened
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// relativeInside returns name relative to dir when it lies lexically
// inside it.
func relativeInside(dir, name string) (string, bool) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", false
	}
	rel, err := filepath.Rel(abs, name)
	if err != nil || !filepath.IsLocal(rel) {
		return "", false
	}
	return rel, true
}

// wholeRunes drops a UTF-8 character cut in half at the end of b when b was
// truncated, so the limit never produces an invalid trailing byte sequence.
func wholeRunes(b []byte, truncated bool) []byte {
	if !truncated {
		return b
	}
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return b[:i]
			}
			break
		}
	}
	return b
}
