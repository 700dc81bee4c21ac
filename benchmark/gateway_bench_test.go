package benchmark

import (
	"context"
	"runtime"
	"testing"
)

// BenchmarkGatewayCall is one Chat Completions call (a ~12 KB history,
// continued in chains of five) through the recording gateway, and through
// a reverse proxy that records nothing, against an upstream that answers
// at once, with as many callers as GOMAXPROCS: ns/op is the CPU a call
// costs each way.
func BenchmarkGatewayCall(b *testing.B) { benchGatewayCalls(b, 1) }

// BenchmarkGatewaySaturated is BenchmarkGatewayCall with 64 callers (as
// bench --gateway's saturation phase): the processors are never idle, so
// a run's process CPU divided by its calls is what a call costs.
func BenchmarkGatewaySaturated(b *testing.B) {
	benchGatewayCalls(b, max(1, 64/runtime.GOMAXPROCS(0)))
}

// benchGatewayCalls runs parallelism callers per processor through the
// pass-through and the gateway.
func benchGatewayCalls(b *testing.B, parallelism int) {
	ctx := context.Background()
	rig, err := startGatewayRig(ctx, 64)
	if err != nil {
		b.Fatal(err)
	}
	defer rig.stop()
	for _, t := range rig.targets[1:] {
		b.Run(t.name, func(b *testing.B) {
			b.SetParallelism(parallelism)
			b.RunParallel(func(pb *testing.PB) {
				ch := chain{id: int(chainIDs.Add(1))}
				for pb.Next() {
					if _, _, err := rig.call(ctx, t, &ch); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
