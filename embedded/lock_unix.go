//go:build unix

package embedded

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// errWouldBlock is lockFile's answer when another holds the lock.
var errWouldBlock = unix.EWOULDBLOCK

// lockFile takes an exclusive flock on f without waiting. flock, not
// fcntl's record locks: those belong to the process, so a second lock in
// the same process (two servers in one test binary) would be granted.
func lockFile(f *os.File) error {
	err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	if errors.Is(err, unix.EAGAIN) {
		return errWouldBlock
	}
	return err
}

func unlockFile(f *os.File) error { return unix.Flock(int(f.Fd()), unix.LOCK_UN) }

// probeFile takes a shared flock on f without waiting: errWouldBlock while
// a server holds the exclusive one.
func probeFile(f *os.File) error {
	err := unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB)
	if errors.Is(err, unix.EAGAIN) {
		return errWouldBlock
	}
	return err
}
