package cli

// This file holds the storage part of `turnlog status`.

import (
	"fmt"

	"github.com/turnlog/turnlog/worker"
)

// storageStatus is JetStream's storage as status shows it. Where a worker
// runs beside the server (turnlog serve's), it reports the server's
// storage; else Used is what turnlog's streams listed above hold and the
// rest is unknown (-1): a JetStream client is not told the server's limit
// (and the account's figures need an API a client key may not call).
type storageStatus struct {
	Used     int64 `json:"used"`
	Reserved int64 `json:"reserved"`
	MaxStore int64 `json:"max_store"`
	// Free is what JetStream may still store: MaxStore-Used.
	Free     int64 `json:"free"`
	DiskFree int64 `json:"disk_free"`
}

// readStorage is the first storage report among workers, else what the
// streams hold (streamBytes).
func readStorage(workers []worker.Status, streamBytes int64) storageStatus {
	for _, w := range workers {
		if r := w.Storage; r != nil {
			return storageStatus{Used: r.Used, Reserved: r.Reserved, MaxStore: r.MaxStore, Free: max(r.MaxStore-r.Used, 0), DiskFree: r.DiskFree}
		}
	}
	return storageStatus{Used: streamBytes, Reserved: -1, MaxStore: -1, Free: -1, DiskFree: -1}
}

func (s storageStatus) String() string {
	if s.MaxStore < 0 {
		return fmt.Sprintf("the streams above hold %s; the limit and the free space are shown while turnlog serve runs its workers", formatBytes(s.Used))
	}
	out := fmt.Sprintf("%s used of %s, %s free (%s reserved)", formatBytes(s.Used), formatBytes(s.MaxStore), formatBytes(s.Free), formatBytes(s.Reserved))
	if s.DiskFree >= 0 {
		out += fmt.Sprintf("; %s free on the disk", formatBytes(s.DiskFree))
	}
	if s.Free == 0 {
		out += "; FULL: new requests are refused, free space or raise --max-store"
	}
	return out
}
