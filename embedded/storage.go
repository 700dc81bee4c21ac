package embedded

// This file holds how much the embedded server may store: a limit that
// JetStream enforces itself (max_store) below what the disk holds, so that
// a filling disk makes JetStream refuse writes, which it accepts again as
// soon as there is room, instead of a file system error, which stops a
// stream's writes until the server restarts.

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Storage is what the embedded server may store and what it holds.
type Storage struct {
	// MaxStore is the server's max_store: JetStream refuses writes past it.
	MaxStore int64
	// Used is what JetStream's streams hold now.
	Used int64
	// Reserved is what streams with a byte limit reserve of MaxStore.
	Reserved int64
	// DiskFree is the free space of the data directory's file system,
	// -1 when it cannot be read.
	DiskFree int64
}

// AutoMaxStore is the max_store the server gets when Config.MaxStore is 0
// and the disk can be measured: what the store in dataDir already holds
// plus three quarters of the file system's free space (nats-server's own
// rule, computed here so that it is a number that can be raised while the
// server runs). ok is false when the free space cannot be read.
func AutoMaxStore(dataDir string) (maxStore int64, ok bool) {
	free, ok := diskFree(dataDir)
	if !ok {
		return 0, false
	}
	return storeBytes(dataDir) + free/4*3, true
}

// storeBytes is what the files under dir take.
func storeBytes(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

// DataDir is where the server keeps its store.
func (s *Server) DataDir() string { return s.dataDir }

// Storage reports the server's storage.
func (s *Server) Storage() (Storage, error) {
	info, err := s.ns.Jsz(&server.JSzOptions{})
	if err != nil {
		return Storage{}, fmt.Errorf("JetStream storage: %w", err)
	}
	st := Storage{MaxStore: info.Config.MaxStore, Used: int64(info.Store), Reserved: int64(info.ReservedStore), DiskFree: -1}
	if free, ok := diskFree(s.dataDir); ok {
		st.DiskFree = free
	}
	return st, nil
}

// RaiseMaxStore raises the server's max_store to n while it runs (JetStream
// takes a larger limit at once; it never lowers one while running).
func (s *Server) RaiseMaxStore(n int64) error {
	opts := s.opts.Clone()
	opts.JetStreamMaxStore = n
	if err := s.ns.ReloadOptions(opts); err != nil {
		return fmt.Errorf("raise JetStream max_store to %d bytes: %w", n, err)
	}
	s.opts = opts
	return nil
}

// FollowDisk raises max_store every interval, until ctx ends, to what
// AutoMaxStore says when that is more: space freed on the disk (other
// files removed, the file system grown) becomes room for JetStream
// without a restart. report, if not nil, is told of each raise.
func (s *Server) FollowDisk(ctx context.Context, interval time.Duration, report func(from, to int64)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		st, err := s.Storage()
		if err != nil || st.DiskFree < 0 {
			continue
		}
		target := st.Used + st.DiskFree/4*3
		// Steps of less than 1 MiB are not worth a reload.
		if target > st.MaxStore+1<<20 {
			if err := s.RaiseMaxStore(target); err == nil && report != nil {
				report(st.MaxStore, target)
			}
		}
	}
}
