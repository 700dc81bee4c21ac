package template

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRenderLimit(t *testing.T) {
	vars := Values{"x:y": "0123456789", "x:empty": ""}
	tests := []struct {
		name   string
		src    string
		max    int64
		want   string
		wantAt string // "" and want set: no error
		errors bool
	}{
		{name: "under the cap", src: "ab[x:y]", max: 12, want: "ab0123456789"},
		{name: "exactly at the cap", src: "ab[x:y]", max: 12, want: "ab0123456789"},
		{name: "a variable passes the cap", src: "ab[x:y]", max: 11, errors: true, wantAt: "[x:y]"},
		{name: "the text passes the cap", src: "[x:y]abc", max: 12, errors: true, wantAt: ""},
		{name: "the tag as written is named", src: "[if x:y]  [x:y] [x:y][endif]", max: 15, errors: true, wantAt: "[x:y]"},
		{name: "a skipped branch costs nothing", src: "[if x:empty][x:y][x:y][else]ok[endif]", max: 2, want: "ok"},
		{name: "negative is no cap", src: strings.Repeat("[x:y]", 1000), max: -1, want: strings.Repeat("0123456789", 1000)},
		{name: "zero cap and empty output", src: "[x:empty]", max: 0, want: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok, err := Parse(tc.src).RenderLimit(vars, tc.max)
			if !tc.errors {
				require.NoError(t, err)
				assert.Equal(t, tc.want, got)
				assert.Equal(t, strings.TrimSpace(tc.want) != "", ok)
				return
			}
			require.ErrorIs(t, err, ErrTooLarge)
			var le *LimitError
			require.True(t, errors.As(err, &le))
			assert.Equal(t, &LimitError{Prompt: true, Limit: tc.max, At: tc.wantAt}, le)
			assert.Contains(t, err.Error(), fmt.Sprint(tc.max))
			assert.Empty(t, got)
			assert.False(t, ok)
		})
	}
}

// capTree is a working directory with big.txt (56 KB, as in issue 15) and
// n relative symbolic links to it, l0 ... l<n-1>: n distinct variables of
// 56 KB each without n copies on disk.
func capTree(t *testing.T, n int) string {
	t.Helper()
	cwd := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(cwd, "big.txt"), []byte(strings.Repeat("x", 56<<10)), 0o600))
	for i := range n {
		require.NoError(t, os.Symlink("big.txt", filepath.Join(cwd, fmt.Sprintf("l%d", i))))
	}
	return cwd
}

func hostileTemplates(n int) map[string]string {
	var distinct, tested strings.Builder
	for i := range n {
		fmt.Fprintf(&distinct, "[file:l%d]", i)
		fmt.Fprintf(&tested, "[if file:l%d]y[endif]", i)
	}
	return map[string]string{
		"one file repeated":          strings.Repeat("[file:big.txt]", n),
		"distinct files":             distinct.String(),
		"distinct files only tested": tested.String(),
	}
}

// TestRenderWithStopsAtTheCap: whatever the template, RenderWith fails at
// the cap with an error naming the variable, before reading or writing
// much past it.
func TestRenderWithStopsAtTheCap(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("symlinks need privileges on windows")
	}
	const n = 4000
	cwd := capTree(t, n)
	for name, src := range hostileTemplates(n) {
		t.Run(name, func(t *testing.T) {
			prompt, used, ok, err := RenderWith(context.Background(), src, Env{Cwd: cwd})
			require.ErrorIs(t, err, ErrTooLarge)
			var le *LimitError
			require.True(t, errors.As(err, &le))
			assert.Equal(t, DefaultMaxPromptBytes, le.Limit)
			assert.Regexp(t, `^\[file:(big\.txt|l\d+)\]$`, le.At)
			assert.Contains(t, err.Error(), "262144")
			assert.Contains(t, err.Error(), le.At)
			assert.Empty(t, prompt)
			assert.Nil(t, used)
			assert.False(t, ok)
		})
	}
}

// TestRenderWithMemoryIsBounded measures the bytes RenderWith allocates for
// issue 15's templates: before the cap, '[file:big.txt]' x 4000 allocated
// over 224 MB (the prompt) and 4000 distinct files as much again. Now the
// allocations stay within a small multiple of the cap, for the default cap
// and for a cap four times smaller.
func TestRenderWithMemoryIsBounded(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("symlinks need privileges on windows")
	}
	const n = 4000
	cwd := capTree(t, n)
	for name, src := range hostileTemplates(n) {
		for _, limit := range []int64{DefaultMaxPromptBytes, DefaultMaxPromptBytes / 4} {
			t.Run(fmt.Sprintf("%s, cap %d", name, limit), func(t *testing.T) {
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				_, _, _, err := RenderWith(context.Background(), src, Env{Cwd: cwd, MaxPromptBytes: limit})
				runtime.ReadMemStats(&after)
				require.ErrorIs(t, err, ErrTooLarge)
				allocated := after.TotalAlloc - before.TotalAlloc
				// Beside the cap: the files being read by the workers
				// (twice: read, then made a string), and the parsed
				// template and list of its variables, which grow with the
				// template (itself capped at 256 KiB), not with the files.
				perTemplate := parseBytes(src)
				bound := 4*uint64(limit) + 2*resolveWorkers*uint64(56<<10) + 2*perTemplate
				t.Logf("allocated %d bytes, %.1f x the cap (parsing alone: %d)", allocated, float64(allocated)/float64(limit), perTemplate)
				assert.LessOrEqual(t, allocated, bound, "allocated %.1f x the cap", float64(allocated)/float64(limit))
			})
		}
	}
}

// parseBytes measures the bytes Parse allocates for src.
func parseBytes(src string) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_ = Parse(src)
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}
