package cli

// This file holds what serve tells about, and decides on, the storage its
// embedded JetStream may use.

import (
	"fmt"
	"strconv"
	"time"

	"github.com/turnlog/turnlog/embedded"
	"github.com/turnlog/turnlog/eventlog"
)

// followDiskEvery is how often serve looks for freed disk space.
const followDiskEvery = 10 * time.Second

// servePlan is the storage serve gives JetStream.
type servePlan struct {
	// maxStore is the limit (0: the server's own default, where the disk
	// cannot be measured); auto says serve chose it from the disk.
	maxStore int64
	auto     bool
}

// planStorage decides serve's max_store: flag when set, else
// embedded.AutoMaxStore. It refuses one below eventlog.MinMaxStore with
// what is needed and what to do.
func planStorage(data string, flag int64) (servePlan, error) {
	if flag > 0 {
		if flag < eventlog.MinMaxStore {
			return servePlan{}, fmt.Errorf("--max-store %s: turnlog needs at least %s of JetStream storage; raise it", formatBytes(flag), formatBytes(eventlog.MinMaxStore))
		}
		return servePlan{maxStore: flag}, nil
	}
	n, ok := embedded.AutoMaxStore(data)
	if !ok {
		return servePlan{}, nil
	}
	if n < eventlog.MinMaxStore {
		return servePlan{}, fmt.Errorf("the file system of %s has room for %s of JetStream storage (three quarters of its free space); turnlog needs at least %s: free space there, use --data on a larger disk, or set --max-store (at least %s, and less than the free space)",
			data, formatBytes(n), formatBytes(eventlog.MinMaxStore), formatBytes(eventlog.MinMaxStore))
	}
	return servePlan{maxStore: n, auto: true}, nil
}

// banner is serve's line about its storage.
func (p servePlan) banner(srv *embedded.Server) string {
	st, err := srv.Storage()
	if err != nil {
		return "turnlog: JetStream storage: " + err.Error()
	}
	how := "--max-store"
	if p.auto {
		how = "what the store holds plus 75% of the free disk space, raised as space is freed; --max-store sets it"
	} else if p.maxStore == 0 {
		how = "the server's default: 75% of the free disk space at start; --max-store sets it"
	}
	line := fmt.Sprintf("turnlog: JetStream storage: up to %s in %s (%s); %s used, %s reserved",
		formatBytes(st.MaxStore), srv.DataDir(), how, formatBytes(st.Used), formatBytes(st.Reserved))
	if p.maxStore > 0 {
		req, dead := eventlog.Reservations(p.maxStore)
		line += fmt.Sprintf(" (pending requests up to %s, dead letters up to %s)", formatBytes(req), formatBytes(dead))
	}
	if st.DiskFree >= 0 {
		line += fmt.Sprintf("; %s free on its disk", formatBytes(st.DiskFree))
	}
	return line
}

// formatBytes writes n in the largest binary unit that keeps it at 1 or
// more, with one decimal: 1.5 GiB, 300.0 MiB, 512 B.
func formatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return strconv.FormatInt(n, 10) + " B"
	}
	f, i := float64(n), 0
	for f >= unit && i < 4 {
		f /= unit
		i++
	}
	return fmt.Sprintf("%.1f %s", f, [...]string{"B", "KiB", "MiB", "GiB", "TiB"}[i])
}
