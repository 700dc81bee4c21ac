package privatedir_test

import (
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/internal/privatedir"
)

var use = privatedir.Use{Name: "the test directory", Flag: "--dir", Risk: "replace what it holds"}

// otherGroup is a group that is not the user private group of this
// process's user: staff on Debian, or any group whose name differs.
func otherGroup(t *testing.T) int {
	t.Helper()
	me, err := user.Current()
	require.NoError(t, err)
	for _, name := range []string{"staff", "users", "daemon", "nogroup"} {
		if g, err := user.LookupGroup(name); err == nil && g.Name != me.Username {
			gid, err := strconv.Atoi(g.Gid)
			require.NoError(t, err)
			return gid
		}
	}
	t.Skip("no group other than the user's own to give a directory to")
	return 0
}

// TestCheck: a directory another user could swap, or whose entries
// they could rename, is refused, whether the way in is the directory
// itself (group-writable by a group of other users) or a directory on
// its path (writable by others without the sticky bit, or sticky but
// someone else's, or someone else's outright), since every later write
// looks the path up again. Before, only the directory itself was
// checked, and its group might write it: a group-writable directory
// (chgrp staff) and one inside a directory every user may write passed.
// A directory of the user's private group (a plain mkdir under umask
// 002 on Debian) and one in /tmp-like sticky directory still pass.
func TestCheck(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("only root can give directories to other users and groups")
	}
	const other = 4242
	cases := []struct {
		name    string
		setup   func(t *testing.T, base string) string // returns the directory to check
		refused string                                 // "" when it passes
	}{
		{name: "private", setup: func(t *testing.T, base string) string {
			return mkdir(t, base, "d", 0o700)
		}},
		{name: "group-writable, the owner's private group", setup: func(t *testing.T, base string) string {
			return mkdir(t, base, "d", 0o770) // root:root: the group is named as its owner
		}},
		{name: "group-writable, a group of others", setup: func(t *testing.T, base string) string {
			d := mkdir(t, base, "d", 0o770)
			require.NoError(t, os.Chown(d, -1, otherGroup(t)))
			return d
		}, refused: "chmod g-w"},
		{name: "in a directory every user may write", setup: func(t *testing.T, base string) string {
			return mkdir(t, mkdir(t, base, "shared", 0o777), "d", 0o700)
		}, refused: "chmod go-w"},
		{name: "in a directory a group of others may write", setup: func(t *testing.T, base string) string {
			shared := mkdir(t, base, "shared", 0o770)
			require.NoError(t, os.Chown(shared, -1, otherGroup(t)))
			return mkdir(t, shared, "d", 0o700)
		}, refused: "chmod go-w"},
		{name: "deeper under a directory every user may write", setup: func(t *testing.T, base string) string {
			return mkdir(t, mkdir(t, mkdir(t, base, "shared", 0o777), "mine", 0o755), "d", 0o700)
		}, refused: "chmod go-w"},
		{name: "in a sticky directory, the directory yours", setup: func(t *testing.T, base string) string {
			return mkdir(t, mkdir(t, base, "tmp", 0o777|os.ModeSticky), "d", 0o700)
		}},
		{name: "in a sticky directory of another user", setup: func(t *testing.T, base string) string {
			tmp := mkdir(t, base, "tmp", 0o777|os.ModeSticky)
			require.NoError(t, os.Chown(tmp, other, other))
			return mkdir(t, tmp, "d", 0o700)
		}, refused: "belongs to another user (uid 4242)"},
		{name: "in a directory of another user", setup: func(t *testing.T, base string) string {
			theirs := mkdir(t, base, "theirs", 0o755)
			require.NoError(t, os.Chown(theirs, other, other))
			return mkdir(t, theirs, "d", 0o700)
		}, refused: "belongs to another user (uid 4242)"},
		{name: "through a symbolic link to a directory every user may write in", setup: func(t *testing.T, base string) string {
			d := mkdir(t, mkdir(t, base, "shared", 0o777), "d", 0o700)
			mine := mkdir(t, base, "mine", 0o700)
			require.NoError(t, os.Symlink(d, filepath.Join(mine, "link")))
			return filepath.Join(mine, "link")
		}, refused: "chmod go-w"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := tc.setup(t, t.TempDir())
			err := privatedir.Check(dir, use)
			if tc.refused == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err, "a directory others could swap passed")
			assert.ErrorContains(t, err, tc.refused)
			assert.ErrorContains(t, err, "--dir", "the error says what else to do")
		})
	}
}

// TestCheckRelative: a relative directory (serve's ./.turnlog) is
// checked along its absolute path, the working directory's ancestors
// too.
func TestCheckRelative(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("only root can give directories to other users")
	}
	shared := mkdir(t, t.TempDir(), "shared", 0o777)
	mkdir(t, shared, ".turnlog", 0o700)
	t.Chdir(shared)
	err := privatedir.Check(".turnlog", use)
	require.Error(t, err)
	assert.ErrorContains(t, err, shared)
}

func mkdir(t *testing.T, parent, name string, mode os.FileMode) string {
	t.Helper()
	dir := filepath.Join(parent, name)
	require.NoError(t, os.Mkdir(dir, 0o700))
	require.NoError(t, os.Chmod(dir, mode))
	return dir
}

// TestCheckThroughALinkOthersMayRepoint: a path whose symbolic link
// leads through another link, one that another user may replace (in a
// directory every user may write), is refused, though both the path as
// given and where it finally leads are this user's: whoever replaces
// the middle link sends every later write to a directory of theirs.
// Before, only the path as given and its final target were checked,
// and such a path passed.
func TestCheckThroughALinkOthersMayRepoint(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("only root can give directories to other users")
	}
	base := t.TempDir()
	shared := mkdir(t, base, "shared", 0o777)
	mine := mkdir(t, base, "mine", 0o700)
	real := mkdir(t, mine, "real", 0o700)
	require.NoError(t, os.Symlink(real, filepath.Join(shared, "hop")))
	require.NoError(t, os.Symlink(filepath.Join(shared, "hop"), filepath.Join(mine, "link")))
	err := privatedir.Check(filepath.Join(mine, "link"), use)
	require.Error(t, err, "a path through a link others may replace passed")
	assert.ErrorContains(t, err, shared)
}
