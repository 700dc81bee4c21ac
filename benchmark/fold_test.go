package benchmark

import (
	"testing"
)

// BenchmarkFold decodes and applies 100,000 events of chat exchanges from
// their stored messages: fold_events_per_s of `turnlog bench`.
func BenchmarkFold(b *testing.B) {
	msgs, err := foldMessages(100_000)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	cpu := cpuTime()
	for b.Loop() {
		if _, err := foldBytes(msgs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(100_000*float64(b.N)/b.Elapsed().Seconds(), "events/s")
	reportPerCPUSecond(b, cpu, 100_000, "events/cpu-s")
}

// BenchmarkApply applies the same events decoded beforehand:
// apply_events_per_s.
func BenchmarkApply(b *testing.B) {
	msgs, err := foldMessages(100_000)
	if err != nil {
		b.Fatal(err)
	}
	evs, err := decodeAll(msgs)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	cpu := cpuTime()
	for b.Loop() {
		if err := applyAll(evs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(100_000*float64(b.N)/b.Elapsed().Seconds(), "events/s")
	reportPerCPUSecond(b, cpu, 100_000, "events/cpu-s")
}
