package benchmark

import (
	"context"
	"testing"

	"github.com/turnlog/turnlog/embedded"
)

// BenchmarkStorage runs the storage step of `turnlog bench`: the bytes of
// a 200-exchange conversation as events (logical, and in the stream's
// files with and without S2 compression) and as a snapshot per exchange.
func BenchmarkStorage(b *testing.B) {
	for b.Loop() {
		dir := b.TempDir()
		srv, err := embedded.Start(embedded.Config{DataDir: dir})
		if err != nil {
			b.Fatal(err)
		}
		nc, err := srv.Connect()
		if err != nil {
			b.Fatal(err)
		}
		r := &runner{nc: nc, dir: dir}
		if err := r.bytes(context.Background(), nil); err != nil {
			b.Fatal(err)
		}
		nc.Close()
		srv.Shutdown()
		b.ReportMetric(float64(r.res.BytesEvents200), "events-B")
		b.ReportMetric(float64(r.res.BytesEvents200Disk), "events-disk-s2-B")
		b.ReportMetric(float64(r.res.BytesEvents200DiskUncompressed), "events-disk-B")
		b.ReportMetric(float64(r.res.BytesSnapshots200), "snapshots-B")
		b.ReportMetric(float64(r.res.BytesSnapshots200)/float64(r.res.BytesEvents200Disk), "snapshots/events-disk")
	}
}
