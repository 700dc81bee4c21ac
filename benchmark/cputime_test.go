//go:build unix

package benchmark

import (
	"syscall"
	"testing"
	"time"
)

// reportPerCPUSecond reports n items per op per CPU-second of the whole
// process (GC included) spent since start: on a machine shared with
// other work, CPU time moves far less than wall time.
func reportPerCPUSecond(b *testing.B, start time.Duration, n float64, unit string) {
	b.ReportMetric(n*float64(b.N)/(cpuTime()-start).Seconds(), unit)
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
