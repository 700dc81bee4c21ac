package projector

// HashV1 exposes the v1 format to the tests, which record hashes in it.
func HashV1(t *Turn) string { return hashV1(t) }

// CachedDigests counts the block digests t has cached for Hash, so a test
// can tell a warm Turn from a cold one.
func CachedDigests(t *Turn) int {
	n := 0
	for i, s := range t.sums {
		if s.ok && i < len(t.Blocks) && s.id == t.Blocks[i].ID {
			n++
		}
	}
	return n
}
