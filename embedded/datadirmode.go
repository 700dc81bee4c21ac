package embedded

import "github.com/turnlog/turnlog/internal/privatedir"

// checkDataDirMode refuses a data directory that users other than its
// owner may write (its group only when it is the owner's private group),
// or that another user owns, or that sits in a directory others may
// write (privatedir.Check). Whoever may
// write it may rename its entries: move the JetStream store or auth/
// away (every conversation gone, or new keys made at the next start) and
// put their own in their place, all without a credential; whoever owns
// it may make it writable. The directory serve makes is 0700 and its
// user's.
func checkDataDirMode(dir string) error {
	return privatedir.Check(displayDir(dir), privatedir.Use{Name: "data directory", Flag: "--data",
		Risk: "remove or replace the store and the keys in it"})
}
