package worker

import (
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
)

// turnOf builds conv's Turn of n user blocks of size bytes each.
func turnOf(t *testing.T, conv string, n, size int) *projector.Turn {
	t.Helper()
	turn := projector.New(conv)
	for i := 0; i < n; i++ {
		e := events.New(conv, "r", i, "test", events.UserAppended{BlockID: fmt.Sprintf("b%d", i), Text: strings.Repeat("x", size)})
		require.NoError(t, projector.Apply(turn, e))
	}
	turn.Seq = uint64(n)
	return turn
}

// TestCacheIsBoundedByBytes: however many Turns are put, the cache holds
// at most its bound in bytes (as projector.Size counts them), lets go of
// the least recently used first, says so in its gauges, and hands the
// Turns it let go of that are ahead of their snapshots to release.
func TestCacheIsBoundedByBytes(t *testing.T) {
	one := int64(projector.Size(turnOf(t, "probe", 10, 1000)))
	m := newMetrics()
	c := newTurnCache(3*one+one/2, m) // room for three
	var released []string
	c.release = func(t *projector.Turn) { released = append(released, t.Conversation) }

	for i := 0; i < 5; i++ {
		c.put(turnOf(t, fmt.Sprintf("c%d", i), 10, 1000), "r")
		assert.LessOrEqual(t, c.bytes, c.maxBytes)
	}
	assert.Equal(t, 3, c.order.Len())
	assert.Equal(t, []string{"c0", "c1"}, released, "the oldest go first")
	assert.Equal(t, float64(c.bytes), gaugeValue(t, m.cacheBytes))
	assert.Equal(t, 3.0, gaugeValue(t, m.cacheTurns))

	// A Turn whose events are all in its snapshot is let go of silently.
	c.noteSaved("c2", 10)
	c.put(turnOf(t, "c5", 10, 1000), "r")
	assert.Equal(t, []string{"c0", "c1"}, released)
	got, _ := c.take("c2")
	assert.Nil(t, got, "c2 was the least recently used")

	// Using a Turn makes it the most recent.
	got, cause := c.take("c3")
	require.NotNil(t, got)
	c.put(got, cause)
	c.put(turnOf(t, "c6", 10, 1000), "r")
	assert.Equal(t, []string{"c0", "c1", "c4"}, released)

	// A Turn larger than the whole bound is not kept.
	c.put(turnOf(t, "huge", 40, 1000), "r")
	got, _ = c.take("huge")
	assert.Nil(t, got)
	assert.Contains(t, released, "huge")
	assert.LessOrEqual(t, c.bytes, c.maxBytes)
}

func gaugeValue(t *testing.T, g prometheus.Gauge) float64 {
	var m dto.Metric
	require.NoError(t, g.Write(&m))
	return m.GetGauge().GetValue()
}
