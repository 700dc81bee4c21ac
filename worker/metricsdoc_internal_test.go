package worker

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEveryMetricIsDocumented: each series a worker serves is in the
// table of docs/observability.md, so an operator reading it knows every
// one (a series added without a line there fails here).
func TestEveryMetricIsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../docs/observability.md")
	require.NoError(t, err)
	m := newMetrics()
	m.countStoredDeadLetters(func(context.Context) (uint64, error) { return 0, nil })
	// Vectors have no series until a label is used: touch one of each.
	m.requests.WithLabelValues("completed")
	m.loads.WithLabelValues("cache")
	m.snapshots.WithLabelValues("interval")
	m.findings.Add("duplicate_system_prompt")
	families, err := m.registry.Gather()
	require.NoError(t, err)
	n := 0
	for _, f := range families {
		name := f.GetName()
		if strings.HasPrefix(name, "go_") {
			continue // the Go collector's, documented as go_*
		}
		n++
		assert.True(t, strings.Contains(string(doc), "| `"+name), "docs/observability.md has no line for %s", name)
	}
	assert.Equal(t, 13, n, "the worker's own series")
}
