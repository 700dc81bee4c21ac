package plural_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/turnlog/turnlog/internal/plural"
)

func TestCount(t *testing.T) {
	for _, tc := range []struct {
		name string
		n    int
		noun string
		want string
	}{
		{name: "one is singular", n: 1, noun: "model call", want: "1 model call"},
		{name: "zero is plural", n: 0, noun: "event", want: "0 events"},
		{name: "two is plural", n: 2, noun: "model call", want: "2 model calls"},
		{name: "ch takes es", n: 3, noun: "mismatch", want: "3 mismatches"},
		{name: "ch in the singular", n: 1, noun: "mismatch", want: "1 mismatch"},
		{name: "x takes es", n: 2, noun: "box", want: "2 boxes"},
		{name: "a consonant and y take ies", n: 2, noun: "copy", want: "2 copies"},
		{name: "a vowel and y take s", n: 2, noun: "key", want: "2 keys"},
		{name: "a y alone", n: 1, noun: "copy", want: "1 copy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, plural.Count(tc.n, tc.noun))
		})
	}
}
