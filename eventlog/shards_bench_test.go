package eventlog_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/internal/natstest"
)

// BenchmarkShardedAppendCluster appends one-event steps from 12 writers
// (each its own conversation) to R3 event streams on an in-process 3-node
// cluster with 1 and with 3 shards (leaders spread), and reports
// appends/s. All three servers share this process's cores, so on a small
// machine it measures what one leader sustains, not what three machines
// would: see BENCHMARKS.md for how the figure scales.
func BenchmarkShardedAppendCluster(b *testing.B) {
	for _, shards := range []int{1, 3} {
		b.Run(fmt.Sprintf("shards=%d", shards), func(b *testing.B) {
			c := natstest.StartCluster(b, 3)
			nc := c.Dial(b, "bench")
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			var l *eventlog.Log
			require.NoError(b, natstest.Retry(ctx, 10*time.Second, func(ctx context.Context) (err error) {
				l, err = eventlog.Open(ctx, nc, eventlog.WithReplicas(3), eventlog.WithEventShards(shards))
				return err
			}))
			if shards > 1 {
				for {
					seen := map[string]bool{}
					rep, err := l.ShardLeaders(ctx)
					require.NoError(b, err)
					for _, r := range rep {
						seen[r.Leader] = r.Leader != ""
					}
					if len(seen) == shards && !seen[""] {
						break
					}
					_, _ = l.BalanceLeaders(ctx)
					time.Sleep(500 * time.Millisecond)
				}
			}
			const writers = 12
			var wg sync.WaitGroup
			per := b.N/writers + 1
			b.ResetTimer()
			start := time.Now()
			for w := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					conv := fmt.Sprintf("bench-%d-%d", shards, w)
					var seq uint64
					for i := range per {
						cause := fmt.Sprintf("%s-r%d", conv, i)
						err := natstest.Retry(ctx, 10*time.Second, func(ctx context.Context) error {
							s, err := l.Append(ctx, conv, seq, user(conv, cause, 0, "a message of about the usual size for a chat turn"))
							if err == nil {
								seq = s
							}
							return err
						})
						if err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.ReportMetric(float64(per*writers)/time.Since(start).Seconds(), "appends/s")
		})
	}
}
