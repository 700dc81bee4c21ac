//go:build windows

package embedded

import (
	"errors"
	"os"

	"golang.org/x/sys/windows"
)

// errWouldBlock is lockFile's answer when another holds the lock.
var errWouldBlock = errors.New("locked by another process")

// lockRange is the byte the lock covers: far past the holder's details,
// since Windows locks are mandatory and a refused server must still read
// them.
var lockRange = windows.Overlapped{OffsetHigh: 0x7fffffff}

// lockFile takes an exclusive LockFileEx lock on f without waiting.
func lockFile(f *os.File) error {
	ol := lockRange
	err := windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, &ol)
	if errors.Is(err, windows.ERROR_LOCK_VIOLATION) {
		return errWouldBlock
	}
	return err
}

// probeFile takes a shared LockFileEx lock on f without waiting:
// errWouldBlock while a server holds the exclusive one.
func probeFile(f *os.File) error {
	ol := lockRange
	err := windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, &ol)
	if errors.Is(err, windows.ERROR_LOCK_VIOLATION) {
		return errWouldBlock
	}
	return err
}

func unlockFile(f *os.File) error {
	ol := lockRange
	return windows.UnlockFileEx(windows.Handle(f.Fd()), 0, 1, 0, &ol)
}
