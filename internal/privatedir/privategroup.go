package privatedir

import (
	"os"
	"os/user"
	"strconv"
)

// groupMayWrite reports whether users other than the owner may write the
// directory info describes through its group. A group-writable
// directory is fine only when its group is its owner's user private
// group: the group named as the owner's user, as adduser makes on
// Debian and Ubuntu, where the umask is 002 and a plain mkdir is
// group-writable, as long as the owner is its only member
// (groupHasOthers). Any other group may have members besides the owner.
func groupMayWrite(info os.FileInfo) bool {
	if info.Mode().Perm()&0o020 == 0 {
		return false
	}
	uid, okU := owner(info)
	gid, okG := group(info)
	if !okU || !okG {
		return true
	}
	u, err := user.LookupId(strconv.Itoa(uid))
	if err != nil {
		return true
	}
	g, err := user.LookupGroupId(strconv.Itoa(gid))
	if err != nil {
		return true
	}
	return g.Name != u.Username || groupHasOthers(gid, u.Username)
}

// ownedByUs reports whether info describes a file of this process's
// user or of root, the only users who may then change it.
func ownedByUs(info os.FileInfo) (uid int, ok bool) {
	uid, known := owner(info)
	return uid, !known || uid == os.Getuid() || uid == 0
}
