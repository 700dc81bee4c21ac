package calls

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAmbiguousNamesInLargeObjects: an object of many members is looked
// at by folded names, not pair by pair, and finds what the pairs would.
func TestAmbiguousNamesInLargeObjects(t *testing.T) {
	var members []string
	for i := range 200 {
		members = append(members, fmt.Sprintf(`"argName%d":%d`, i, i))
	}
	plain := "{" + strings.Join(members, ",") + "}"
	_, err := canonicalItem([]byte(plain))
	require.NoError(t, err, "camelCase names that differ are read")

	for _, tc := range []struct{ name, extra, want string }{
		{"case", `"ARGNAME7":1`, `differ only in case`},
		{"twice", `"argName7":1`, `"argName7" twice`},
		{"kelvin sign", "\"argname\u212a\":1,\"argnamek\":2", `differ only in case`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := canonicalItem([]byte(plain[:len(plain)-1] + "," + tc.extra + "}"))
			require.Error(t, err)
			assert.True(t, errors.Is(err, ErrAmbiguousJSON))
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// TestFoldNameIsEqualFold: two names fold to one string exactly when
// strings.EqualFold holds them equal.
func TestFoldNameIsEqualFold(t *testing.T) {
	names := []string{"content", "Content", "CONTENT", "conTent", "k", "K", "\u212a", "ß", "ẞ", "ss", "σ", "Σ", "ς", "straße", "STRASSE", "ǅ", "ǆ", "Ǆ"}
	for _, a := range names {
		for _, b := range names {
			assert.Equal(t, strings.EqualFold(a, b), foldName(a) == foldName(b), "%q %q", a, b)
		}
	}
}
