package privatedir

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCheckUserPrivateGroupWithOtherMembers: a group-writable directory
// whose group is named as its owner passed as the owner's private group
// even when the group has other members (usermod -aG alice www-data, to
// let a web server read alice's files), who may then rename its entries.
// Such a group is now private only when the user is its only member, by
// /etc/group's member list and /etc/passwd's primary groups.
func TestCheckUserPrivateGroupWithOtherMembers(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("the directory's owner and group are root's: only root makes them")
	}
	base := t.TempDir()
	dir := filepath.Join(base, "d")
	require.NoError(t, os.Mkdir(dir, 0o700))
	require.NoError(t, os.Chmod(dir, 0o770)) // root:root
	use := Use{Name: "the test directory", Flag: "--dir", Risk: "replace what it holds"}

	etc := t.TempDir()
	groups, passwd := filepath.Join(etc, "group"), filepath.Join(etc, "passwd")
	require.NoError(t, os.WriteFile(passwd, []byte("root:x:0:0:root:/root:/bin/sh\nwww-data:x:33:33::/var/www:/usr/sbin/nologin\n"), 0o644))
	require.NoError(t, os.WriteFile(groups, []byte("root:x:0:\nwww-data:x:33:\n"), 0o644))
	oldGroup, oldPasswd := groupFile, passwdFile
	groupFile, passwdFile = groups, passwd
	t.Cleanup(func() { groupFile, passwdFile = oldGroup, oldPasswd })

	assert.NoError(t, Check(dir, use), "the owner alone in its private group")

	require.NoError(t, os.WriteFile(groups, []byte("root:x:0:www-data\nwww-data:x:33:\n"), 0o644))
	err := Check(dir, use)
	require.Error(t, err, "a private group with another member passed")
	assert.ErrorContains(t, err, "chmod g-w")

	require.NoError(t, os.WriteFile(groups, []byte("root:x:0:\nwww-data:x:33:\n"), 0o644))
	require.NoError(t, os.WriteFile(passwd, []byte("root:x:0:0:root:/root:/bin/sh\nbackup:x:34:0::/var/backups:/usr/sbin/nologin\n"), 0o644))
	err = Check(dir, use)
	require.Error(t, err, "a private group that is another user's primary group passed")
	assert.ErrorContains(t, err, "chmod g-w")
}
