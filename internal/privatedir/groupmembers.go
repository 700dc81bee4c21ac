package privatedir

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// groupFile and passwdFile are where groupHasOthers reads the local
// groups' members and the users' primary groups (tests point them
// elsewhere).
var groupFile, passwdFile = "/etc/group", "/etc/passwd"

// groupHasOthers reports whether a user other than name belongs to the
// group gid by the local files: listed as a member in groupFile, or with
// gid as primary group in passwdFile. A user private group with other
// members (usermod -aG alice www-data) lets them write what its owner
// made group-writable. Files that cannot be read tell nothing (false):
// groups from elsewhere (NSS) are judged by their name alone.
func groupHasOthers(gid int, name string) bool {
	id := strconv.Itoa(gid)
	others := false
	eachEntry(groupFile, func(f []string) {
		if len(f) >= 4 && f[2] == id {
			for _, m := range strings.Split(f[3], ",") {
				if m = strings.TrimSpace(m); m != "" && m != name {
					others = true
				}
			}
		}
	})
	eachEntry(passwdFile, func(f []string) {
		if len(f) >= 4 && f[3] == id && f[0] != name {
			others = true
		}
	})
	return others
}

// eachEntry calls fn with the colon-separated fields of each entry of
// the file at path, comments and blank lines aside.
func eachEntry(path string, fn func(fields []string)) {
	f, err := os.Open(path)
	if err != nil {
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fn(strings.Split(line, ":"))
	}
}
