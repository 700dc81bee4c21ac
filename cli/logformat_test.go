package cli

import (
	"bufio"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestServeLogsDurationsAsSlogUsersExpect (issue 23, item 6): serve's JSON
// logs printed "duration" in nanoseconds (a bare integer); it is a Go
// duration string, as slog's text handler writes it.
func TestServeLogsDurationsAsSlogUsersExpect(t *testing.T) {
	s := startServe(t, "--log-level", "debug")
	out, code := runCmd(t, []string{"TURNLOG_DATA=" + s.data}, "", "chat", "--nats-url", s.natsURL, "-m", "hello", "timed")
	require.Equal(t, 0, code, out)

	var durations []any
	eventually(t, "a log line with a duration", func() bool {
		durations = nil
		sc := bufio.NewScanner(strings.NewReader(s.out.String()))
		for sc.Scan() {
			var line map[string]any
			if json.Unmarshal(sc.Bytes(), &line) == nil && line["duration"] != nil {
				durations = append(durations, line["duration"])
			}
		}
		return len(durations) > 0
	})
	for _, d := range durations {
		text, ok := d.(string)
		require.True(t, ok, "duration %v (%T) is a number of unknown unit", d, d)
		_, err := time.ParseDuration(text)
		assert.NoError(t, err, "duration %q", text)
	}
}
