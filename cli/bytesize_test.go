package cli

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestByteSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		text string
	}{
		{in: "1048576", want: 1 << 20, text: "1MiB"},
		{in: "256MiB", want: 256 << 20, text: "256MiB"},
		{in: "2GiB", want: 2 << 30, text: "2GiB"},
		{in: "1.5GiB", want: 3 << 29, text: "1536MiB"},
		{in: "500 MB", want: 500e6, text: "500000000"},
		{in: "64kib", want: 64 << 10, text: "64KiB"},
		{in: "1000", want: 1000, text: "1000"},
		{in: "12B", want: 12, text: "12"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			var b byteSize
			require.NoError(t, b.Set(tc.in))
			assert.Equal(t, tc.want, int64(b))
			assert.Equal(t, tc.text, b.String())
		})
	}
	for _, bad := range []string{"", "lots", "-1MiB", "0", "12XB", "1e30GiB"} {
		var b byteSize
		err := b.Set(bad)
		assert.ErrorContains(t, err, "is not a size", "%q", bad)
	}
}
