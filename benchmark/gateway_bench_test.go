package benchmark

import (
	"context"
	"testing"
)

// BenchmarkGatewayCall is one Chat Completions call (a ~12 KB history,
// continued in chains of five) through the recording gateway, and through
// a reverse proxy that records nothing, against an upstream that answers
// at once, with as many callers as GOMAXPROCS: ns/op is the CPU a call
// costs each way.
func BenchmarkGatewayCall(b *testing.B) {
	ctx := context.Background()
	rig, err := startGatewayRig(ctx, 64)
	if err != nil {
		b.Fatal(err)
	}
	defer rig.stop()
	for _, t := range rig.targets[1:] {
		b.Run(t.name, func(b *testing.B) {
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
