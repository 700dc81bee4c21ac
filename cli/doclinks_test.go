package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/profile"
)

// docFiles lists README.md and docs/*.md, relative to the repository root.
func docFiles(t *testing.T, root string) []string {
	t.Helper()
	files := []string{"README.md"}
	more, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	require.NoError(t, err)
	for _, f := range more {
		rel, err := filepath.Rel(root, f)
		require.NoError(t, err)
		files = append(files, rel)
	}
	return files
}

var (
	fenceRe     = regexp.MustCompile("(?ms)^```.*?^```[ \t]*$")
	codeSpanRe  = regexp.MustCompile("`[^`\n]*`")
	mdLinkRe    = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	headingRe   = regexp.MustCompile(`(?m)^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$`)
	inlineLink  = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
	emphasisRe  = regexp.MustCompile(`[*_]{1,3}([^*_]+)[*_]{1,3}`)
	schemeRe    = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
	htmlComment = regexp.MustCompile(`(?s)<!--.*?-->`)
)

// proseOf is a Markdown text without its fenced blocks, code spans and
// HTML comments: what GitHub renders as links and headings.
func proseOf(text string) string {
	text = fenceRe.ReplaceAllString(text, "")
	text = htmlComment.ReplaceAllString(text, "")
	return text
}

// githubAnchor is the anchor GitHub gives a heading: its text as rendered
// (code spans and links reduced to their text), lower-cased, without
// punctuation but for '-' and '_', spaces made '-'.
func githubAnchor(heading string) string {
	heading = inlineLink.ReplaceAllString(heading, "$1")
	heading = strings.ReplaceAll(heading, "`", "")
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case unicode.IsLetter(r), unicode.IsDigit(r), r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}

// anchorsOf lists the anchors of a Markdown file's headings, with
// GitHub's -1, -2 suffixes for repeated ones.
func anchorsOf(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, m := range headingRe.FindAllStringSubmatch(proseOf(text), -1) {
		a := githubAnchor(emphasisRe.ReplaceAllString(m[1], "$1"))
		if n := seen[a]; n > 0 {
			out[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

// brokenLinks checks the relative links of the Markdown files (paths
// relative to root): each must name a file or directory that exists and,
// with a #fragment into a Markdown file, a heading of it. It returns one
// line per broken link.
func brokenLinks(root string, files []string) ([]string, error) {
	var broken []string
	for _, file := range files {
		data, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			return nil, err
		}
		prose := codeSpanRe.ReplaceAllString(proseOf(string(data)), "")
		for _, m := range mdLinkRe.FindAllStringSubmatch(prose, -1) {
			target := m[1]
			if schemeRe.MatchString(target) || strings.HasPrefix(target, "//") {
				continue // not relative: the web, mail
			}
			path, fragment, _ := strings.Cut(target, "#")
			resolved := filepath.Join(root, file)
			if path != "" {
				resolved = filepath.Join(root, filepath.Dir(file), filepath.FromSlash(path))
			}
			if _, err := os.Stat(resolved); err != nil {
				broken = append(broken, fmt.Sprintf("%s: %s: no file %s", file, target, filepath.ToSlash(mustRel(root, resolved))))
				continue
			}
			if fragment == "" || !strings.HasSuffix(resolved, ".md") {
				continue
			}
			targetText, err := os.ReadFile(resolved)
			if err != nil {
				return nil, err
			}
			if !anchorsOf(string(targetText))[fragment] {
				broken = append(broken, fmt.Sprintf("%s: %s: %s has no heading with anchor #%s", file, target, filepath.ToSlash(mustRel(root, resolved)), fragment))
			}
		}
	}
	return broken, nil
}

func mustRel(root, path string) string {
	rel, err := filepath.Rel(root, path)
	if err != nil {
		return path
	}
	return rel
}

// Issue 23: README.md is a first screen that leads into docs/; a link
// that leads nowhere (a moved section, a renamed heading) strands the
// reader, so every relative link of README.md and docs/ must resolve.
func TestDocLinks(t *testing.T) {
	files := docFiles(t, "..")
	require.Greater(t, len(files), 1, "docs/ holds the reference")
	broken, err := brokenLinks("..", files)
	require.NoError(t, err)
	assert.Empty(t, broken, "broken links")

	// Every docs/ file is reachable from README.md.
	readme, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	for _, f := range files[1:] {
		assert.Contains(t, string(readme), "]("+filepath.ToSlash(f)+")", "README.md links to %s", f)
	}
	// The console's screenshot is still shown somewhere.
	found := false
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join("..", f))
		require.NoError(t, err)
		found = found || strings.Contains(string(data), "console-timeline.png)")
	}
	assert.True(t, found, "docs/console-timeline.png is referenced")
}

func TestBrokenLinks(t *testing.T) {
	root := t.TempDir()
	write := func(name, text string) {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(root, name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(root, name), []byte(text), 0o644))
	}
	write("README.md", "# Top\n\n[ok](docs/a.md) [anchor](docs/a.md#operators-turnlog-prompt) [second](docs/a.md#notes-1)\n"+
		"[missing](docs/nope.md) [bad anchor](docs/a.md#nope) [self](#top) [self bad](#bottom)\n"+
		"[web](https://example.com/x.md#nope) `[code](nope.md)`\n\n```\n[fenced](nope.md)\n```\n")
	write("docs/a.md", "# A\n\n## Operators: `turnlog prompt`\n\n## Notes\n\n## Notes\n\n[up](../README.md#top) [img](pic.png)\n")
	write("docs/pic.png", "")
	broken, err := brokenLinks(root, []string{"README.md", "docs/a.md"})
	require.NoError(t, err)
	assert.Equal(t, []string{
		"README.md: docs/nope.md: no file docs/nope.md",
		"README.md: docs/a.md#nope: docs/a.md has no heading with anchor #nope",
		"README.md: #bottom: README.md has no heading with anchor #bottom",
	}, broken)
}

func TestGithubAnchor(t *testing.T) {
	for _, tc := range []struct{ name, heading, want string }{
		{"plain", "Cluster", "cluster"},
		{"code span and colon", "Reasoning models: `openai_responses` and `anthropic`", "reasoning-models-openai_responses-and-anthropic"},
		{"apostrophe", "A conversation's system prompt", "a-conversations-system-prompt"},
		{"flags", "What `--verify` proves", "what---verify-proves"},
		{"link", "See [the docs](docs/x.md)", "see-the-docs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, githubAnchor(tc.heading))
		})
	}
}

// The profiles the README and docs/ show are profiles turnlog accepts:
// a newcomer copies them into a file and starts serve with it.
func TestDocProfilesParse(t *testing.T) {
	yamlRe := regexp.MustCompile("(?ms)^```yaml\n(.*?)^```")
	n := 0
	for _, f := range docFiles(t, "..") {
		data, err := os.ReadFile(filepath.Join("..", f))
		require.NoError(t, err)
		for _, m := range yamlRe.FindAllStringSubmatch(string(data), -1) {
			if !strings.HasPrefix(m[1], "profiles:") {
				continue
			}
			if strings.Contains(m[1], "acme.") {
				// docs/library.md's profiles name a custom build's
				// engines and middlewares, which this binary lacks;
				// examples/custom-chain's test runs such a build.
				continue
			}
			n++
			_, err := profile.Parse([]byte(m[1]))
			assert.NoError(t, err, "%s: profiles block:\n%s", f, m[1])
		}
	}
	assert.Greater(t, n, 1, "the docs show profiles")
}
