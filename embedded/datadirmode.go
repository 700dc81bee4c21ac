package embedded

import (
	"fmt"
	"os"
	"runtime"
)

// checkDataDirMode refuses a data directory that users other than its
// owner and group may write. Whoever may write it may rename its entries:
// move the JetStream store or auth/ away (every conversation gone, or new
// keys made at the next start) and put their own in their place, all
// without a credential. The directory serve makes is 0700; only one made
// beforehand, or a shared one such as /tmp given as --data, can be open.
// Windows reports no such bits, and is not checked.
func checkDataDirMode(dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	info, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("check data directory: %w", err)
	}
	if info.Mode().Perm()&0o002 != 0 {
		return fmt.Errorf("data directory %s may be written by every user of this machine (mode %04o), who could remove or replace the store and the keys in it; run chmod o-w %s (chmod 700 keeps it to you), or give --data a directory of your own",
			displayDir(dir), info.Mode().Perm(), displayDir(dir))
	}
	return nil
}
