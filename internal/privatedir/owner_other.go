//go:build !unix

package privatedir

import "os"

// owner is unknown where files have no user ID.
func owner(os.FileInfo) (int, bool) { return 0, false }

// group is unknown where files have no group ID.
func group(os.FileInfo) (int, bool) { return 0, false }
