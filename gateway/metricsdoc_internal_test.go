package gateway

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/events"
)

// TestEveryMetricIsDocumented: each series the gateway serves is in the
// gateway's table of docs/observability.md (a series added without a line
// there fails here).
func TestEveryMetricIsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../docs/observability.md")
	require.NoError(t, err)
	_, table, ok := strings.Cut(string(doc), "### The recording gateway's series")
	require.True(t, ok, "docs/observability.md has a table of the gateway's series")
	m := NewMetrics()
	// Vectors have no series until a label is used: touch one of each.
	m.calls.WithLabelValues("responses", "finished")
	m.errors.WithLabelValues("upstream")
	m.loads.WithLabelValues("cache")
	m.unstored.WithLabelValues("input")
	m.threading.WithLabelValues("responses", "new")
	m.references.WithLabelValues("resolved")
	m.providerWrites.WithLabelValues("added", "recorded")
	m.countFindings([]events.Payload{events.FindingRecorded{Rule: "duplicate_system_prompt"}})
	families, err := m.registry.Gather()
	require.NoError(t, err)
	for _, f := range families {
		assert.True(t, strings.Contains(table, "| `"+f.GetName()), "docs/observability.md has no line for %s", f.GetName())
	}
	assert.Len(t, families, 12)
}
