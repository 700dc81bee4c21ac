package cli

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// byteSize is a flag of a number of bytes, written plain (1048576) or with
// a unit: KB, MB, GB (powers of 1000) or KiB, MiB, GiB (powers of 1024).
type byteSize int64

var byteUnits = []struct {
	suffix string
	factor int64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1},
}

func parseByteSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	factor := int64(1)
	for _, u := range byteUnits {
		if strings.HasSuffix(strings.ToLower(t), strings.ToLower(u.suffix)) {
			t, factor = strings.TrimSpace(t[:len(t)-len(u.suffix)]), u.factor
			break
		}
	}
	n, err := strconv.ParseFloat(t, 64)
	if err != nil || n <= 0 || n*float64(factor) > 1<<62 {
		return 0, fmt.Errorf("%q is not a size; write it like 256MiB, 2GiB or 1048576", s)
	}
	return int64(n * float64(factor)), nil
}

func (b *byteSize) String() string {
	n := int64(*b)
	for i := 3; i >= 0; i-- { // the largest binary unit that divides it
		if u := byteUnits[i]; n >= u.factor && n%u.factor == 0 {
			return strconv.FormatInt(n/u.factor, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10)
}

func (b *byteSize) Set(s string) error {
	n, err := parseByteSize(s)
	if err != nil {
		return err
	}
	*b = byteSize(n)
	return nil
}

func (b *byteSize) Type() string { return "size" }

// envByteSize is the size in environment variable name, def when it is
// unset; an error says what is wrong with a value that is not a size.
func envByteSize(name string, def int64) (byteSize, error) {
	v := os.Getenv(name)
	if v == "" {
		return byteSize(def), nil
	}
	n, err := parseByteSize(v)
	if err != nil {
		return byteSize(def), fmt.Errorf("%s: %w", name, err)
	}
	return byteSize(n), nil
}
