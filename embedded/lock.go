package embedded

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// LockFileName is the file in a data directory that the server holding the
// directory locks, and in which it says who it is.
const LockFileName = "turnlog.lock"

// ErrLocked is what LockDataDir and Start return (wrapped in a
// *LockedError) when another process holds the data directory.
var ErrLocked = errors.New("data directory in use")

// Holder is who holds a data directory: what its lock file says.
type Holder struct {
	// PID is the holding process.
	PID int `json:"pid"`
	// NATS is the nats:// URL its server listens on, "" while it starts
	// or when it listens nowhere.
	NATS string `json:"nats,omitempty"`
}

// LockedError says which directory is held, and by whom, so the user can
// find the running server instead of starting a second one.
type LockedError struct {
	Dir string
	// Holder is what the lock file says; zero when the holder has not
	// written it yet (it is starting) or it could not be read.
	Holder Holder
}

func (e *LockedError) Error() string {
	who := "another process"
	switch {
	case e.Holder.PID != 0 && e.Holder.NATS != "":
		who = fmt.Sprintf("PID %d, NATS at %s", e.Holder.PID, e.Holder.NATS)
	case e.Holder.PID != 0:
		who = fmt.Sprintf("PID %d, not listening for NATS clients yet", e.Holder.PID)
	}
	return fmt.Sprintf("data directory %s is in use by another turnlog server (%s): two servers on one directory would destroy each other's writes; use that server (--nats-url), stop it first, or pass another --data", e.Dir, who)
}

// Is makes errors.Is(err, ErrLocked) true.
func (e *LockedError) Is(target error) bool { return target == ErrLocked }

// DataDirLock is an exclusive lock on a data directory. The lock is the
// kernel's (flock on Unix, LockFileEx on Windows): it goes with the open
// file, so a process that dies, SIGKILL included, never leaves a stale lock
// that would keep the next server out.
//
// Why it exists: two JetStream servers on one store directory both accept
// and acknowledge writes, and whichever shuts down last overwrites the
// other's files: acknowledged conversations vanish.
type DataDirLock struct {
	dir string
	f   *os.File
}

// LockDataDir creates dir if needed and locks it for this process, or
// returns a *LockedError (errors.Is ErrLocked) naming the holder when
// another process (or another lock in this one) holds it. It does not wait
// for a holder: only, for at most probeGrace, for a client command's
// Running, which holds the lock for an instant.
func LockDataDir(dir string) (*DataDirLock, error) {
	if dir == "" {
		return nil, errors.New("data directory is empty; pass --data DIR")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create data directory: %w", err)
	}
	if err := checkDataDirMode(dir); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, LockFileName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock file: %w", err)
	}
	if err := lockFileRetrying(f); err != nil {
		f.Close()
		if errors.Is(err, errWouldBlock) {
			return nil, &LockedError{Dir: displayDir(dir), Holder: readHolder(path)}
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	l := &DataDirLock{dir: dir, f: f}
	if err := l.SetNATS(""); err != nil {
		l.Release()
		return nil, err
	}
	return l, nil
}

// Dir is the locked directory.
func (l *DataDirLock) Dir() string { return l.dir }

// SetNATS writes this process's PID and its server's client URL into the
// lock file, so a refused second server can name where the first listens.
func (l *DataDirLock) SetNATS(url string) error {
	b, err := json.Marshal(Holder{PID: os.Getpid(), NATS: url})
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if err := l.f.Truncate(0); err != nil {
		return fmt.Errorf("write lock file: %w", err)
	}
	if _, err := l.f.WriteAt(b, 0); err != nil {
		return fmt.Errorf("write lock file: %w", err)
	}
	return nil
}

// Release gives the directory up. The file stays: removing it would let a
// process that opened it a moment before lock a file no one else sees.
func (l *DataDirLock) Release() {
	if l == nil || l.f == nil {
		return
	}
	_ = l.f.Truncate(0)
	_ = unlockFile(l.f)
	_ = l.f.Close()
	l.f = nil
}

// readHolder reads what the holder wrote; a zero Holder when there is
// nothing yet or it is unreadable (the refusal names the directory anyway).
func readHolder(path string) Holder {
	var h Holder
	if b, err := os.ReadFile(path); err == nil {
		_ = json.Unmarshal(b, &h)
	}
	return h
}

// displayDir is dir as the user will recognise it: absolute, so a refusal
// is clear whatever the current directory of whoever reads it.
func displayDir(dir string) string {
	if abs, err := filepath.Abs(dir); err == nil {
		return abs
	}
	return dir
}

// probeGrace is how long LockDataDir tries again before it calls the
// directory held: Running takes a shared lock for the instant it reads
// the file, and a server starting in that instant must not be refused.
const probeGrace = 200 * time.Millisecond

// lockFileRetrying is lockFile, tried again while probeGrace lasts.
func lockFileRetrying(f *os.File) error {
	deadline := time.Now().Add(probeGrace)
	for {
		err := lockFile(f)
		if !errors.Is(err, errWouldBlock) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Running reports the server that holds data directory dir, as its lock
// file says, and whether a process holds the directory now. A lock file
// whose writer is gone (it stopped, or died and left its address behind)
// says nothing: ok is false, whatever the file holds, as it is when dir
// or its lock file does not exist. Running creates nothing and never
// waits; it is how client commands find the server of their data
// directory when no URL was given. NATS is "" while the holder starts.
func Running(dir string) (h Holder, ok bool) {
	path := filepath.Join(dir, LockFileName)
	f, err := os.Open(path)
	if err != nil {
		return Holder{}, false
	}
	defer f.Close()
	// A file with no holder's details (a server that stopped cleanly
	// empties it) is not probed: no lock to try, nothing to follow.
	if h = readHolder(path); h.PID == 0 {
		return Holder{}, false
	}
	// The kernel's lock says whether the writer lives: a shared lock is
	// granted only when no server holds the exclusive one.
	switch err := probeFile(f); {
	case errors.Is(err, errWouldBlock):
		// Read again: the holder may have written since (its address
		// once it listens, or a new server its own details).
		if again := readHolder(path); again.PID != 0 {
			h = again
		}
		return h, true
	case err == nil:
		_ = unlockFile(f)
	}
	return Holder{}, false
}
