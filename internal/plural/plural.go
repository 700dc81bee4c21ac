// Package plural writes counts in English for turnlog's messages: "1 model
// call", "2 model calls", never "1 model calls". One helper, shared by the
// packages and the command line, so that every message counts the same way.
package plural

import (
	"strconv"
	"strings"
)

// Count says n and the noun, the noun in the plural unless n is 1 or -1:
// "1 event", "0 events", "3 mismatches", "2 copies". A noun ending in s,
// x, z, ch or sh takes "es", in a consonant and y "ies"; irregular nouns
// (child, person) are not known: count something else.
func Count(n int, noun string) string {
	return strconv.Itoa(n) + " " + Noun(n, noun)
}

// Noun is the noun alone, as Count writes it after n, for a message that
// puts something between the figure and the noun.
func Noun(n int, noun string) string {
	if n == 1 || n == -1 {
		return noun
	}
	if len(noun) > 1 && noun[len(noun)-1] == 'y' && !strings.ContainsRune("aeiou", rune(noun[len(noun)-2])) {
		return noun[:len(noun)-1] + "ies"
	}
	for _, suffix := range []string{"s", "x", "z", "ch", "sh"} {
		if strings.HasSuffix(noun, suffix) {
			return noun + "es"
		}
	}
	return noun + "s"
}
