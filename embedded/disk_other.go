//go:build !unix

package embedded

// diskFree cannot read the free space here: the server keeps its own
// default limit.
func diskFree(string) (int64, bool) { return 0, false }
