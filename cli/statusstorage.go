package cli

// This file holds the storage part of `turnlog status`.

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/turnlog/turnlog/worker"
)

// storageStatus is JetStream's storage as status shows it. Used and
// Reserved come from the account; the rest is known only where a worker
// runs beside the server (turnlog serve), else it is -1.
type storageStatus struct {
	Used     int64 `json:"used"`
	Reserved int64 `json:"reserved"`
	MaxStore int64 `json:"max_store"`
	// Free is what JetStream may still store: MaxStore-Used.
	Free     int64 `json:"free"`
	DiskFree int64 `json:"disk_free"`
	// Error says why Used could not be read ("" when it was).
	Error string `json:"error,omitempty"`
}

// readStorage reads the account's storage and the first storage report
// among workers.
func readStorage(ctx context.Context, js jetstream.JetStream, workers []worker.Status) storageStatus {
	st := storageStatus{MaxStore: -1, Free: -1, DiskFree: -1}
	if ai, err := js.AccountInfo(ctx); err != nil {
		st.Error = err.Error()
	} else {
		st.Used, st.Reserved = int64(ai.Store), int64(ai.ReservedStore)
	}
	for _, w := range workers {
		if r := w.Storage; r != nil {
			st.MaxStore, st.Free, st.DiskFree = r.MaxStore, max(r.MaxStore-r.Used, 0), r.DiskFree
			if st.Error != "" {
				st.Used, st.Reserved, st.Error = r.Used, r.Reserved, ""
			}
			break
		}
	}
	return st
}

func (s storageStatus) String() string {
	if s.Error != "" && s.MaxStore < 0 {
		return "unknown (" + s.Error + ")"
	}
	out := fmt.Sprintf("%s used, %s reserved", formatBytes(s.Used), formatBytes(s.Reserved))
	if s.MaxStore < 0 {
		return out + "; the limit and the free space are known while turnlog serve runs its workers"
	}
	out = fmt.Sprintf("%s used of %s, %s free (%s reserved)", formatBytes(s.Used), formatBytes(s.MaxStore), formatBytes(s.Free), formatBytes(s.Reserved))
	if s.DiskFree >= 0 {
		out += fmt.Sprintf("; %s free on the disk", formatBytes(s.DiskFree))
	}
	if s.Free == 0 {
		out += "; FULL: new requests are refused, free space or raise --max-store"
	}
	return out
}
