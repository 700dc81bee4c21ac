//go:build !unix

package template

// openFlags: no special open flags outside Unix.
const openFlags = 0
