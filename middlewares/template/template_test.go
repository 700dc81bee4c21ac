package template

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testVars is the variable set shared by the rendering tests and the fuzz
// target.
var testVars = Values{
	"system:os":        "linux",
	"git:branch":       "main",
	"git:status":       "",      // exists, empty: a clean tree
	"prompt:blank":     " \n\t", // exists, only white space
	"file:docs/a b.md": "A B",
	"file:a:b":         "colon",
	"x:y":              "XY",
}

func TestRender(t *testing.T) {
	tests := []struct {
		name   string
		src    string
		want   string
		wantOK bool
	}{
		{name: "plain text", src: "hello", want: "hello", wantOK: true},
		{name: "plain variable", src: "os=[system:os].", want: "os=linux.", wantOK: true},
		{name: "name with spaces and slash", src: "[file:docs/a b.md]", want: "A B", wantOK: true},
		{name: "name with colon", src: "[file:a:b]", want: "colon", wantOK: true},
		{name: "unknown type", src: "a[nosuch:thing]b", want: "ab", wantOK: true},
		{name: "missing variable", src: "a[system:nosuch]b", want: "ab", wantOK: true},
		{name: "existing empty variable", src: "a[git:status]b", want: "ab", wantOK: true},
		{name: "variables next to each other", src: "[x:y][system:os]", want: "XYlinux", wantOK: true},
		{name: "if true", src: "[if git:branch]on [git:branch][endif]", want: "on main", wantOK: true},
		{name: "if missing is false", src: "a[if nope:x]b[endif]c", want: "ac", wantOK: true},
		{name: "if empty is false", src: "a[if git:status]dirty[endif]c", want: "ac", wantOK: true},
		{name: "if whitespace-only is false", src: "a[if prompt:blank]b[endif]c", want: "ac", wantOK: true},
		{name: "if with spaces before ref", src: "[if  \tx:y]yes[endif]", want: "yes", wantOK: true},
		{name: "negated if of missing", src: "[if !nope:x]none[endif]", want: "none", wantOK: true},
		{name: "negated if of empty", src: "[if !git:status]clean[endif]", want: "clean", wantOK: true},
		{name: "negated if of set", src: "a[if !x:y]b[endif]c", want: "ac", wantOK: true},
		{name: "if else true", src: "[if x:y]T[else]F[endif]", want: "T", wantOK: true},
		{name: "if else false", src: "[if nope:x]T[else]F[endif]", want: "F", wantOK: true},
		{name: "negated if else", src: "[if !x:y]T[else]F[endif]", want: "F", wantOK: true},
		{name: "nested if both true", src: "[if x:y]1[if git:branch]2[endif]3[endif]", want: "123", wantOK: true},
		{name: "nested if inner false", src: "[if x:y]1[if nope:x]2[endif]3[endif]", want: "13", wantOK: true},
		{name: "nested if outer false", src: "0[if nope:x]1[if x:y]2[endif]3[endif]4", want: "04", wantOK: true},
		{
			name:   "else binds to innermost if",
			src:    "[if x:y]A[if nope:x]B[else]C[endif]D[else]E[endif]",
			want:   "ACD",
			wantOK: true,
		},
		{
			name:   "else of outer if after nested block",
			src:    "[if nope:x]A[if x:y]B[else]C[endif]D[else]E[if x:y]F[else]G[endif][endif]",
			want:   "EF",
			wantOK: true,
		},
		{
			name:   "multi-line content",
			src:    "Start\n[if git:branch]\nBranch: [git:branch]\n[else]\nNo git.\n[endif]\nEnd",
			want:   "Start\n\nBranch: main\n\nEnd",
			wantOK: true,
		},
		{
			name:   "unmatched if is literal and the rest renders",
			src:    "a [if x:y] b [system:os]",
			want:   "a [if x:y] b linux",
			wantOK: true,
		},
		{
			name:   "unmatched outer if, matched inner",
			src:    "[if nope:x]a[if x:y]b[endif]c",
			want:   "[if nope:x]abc",
			wantOK: true,
		},
		{
			name:   "else bound to unmatched if is literal",
			src:    "[if nope:x]a[else]b",
			want:   "[if nope:x]a[else]b",
			wantOK: true,
		},
		{name: "stray endif", src: "a[endif]b", want: "a[endif]b", wantOK: true},
		{name: "extra endif after block", src: "[if x:y]a[endif][endif]", want: "a[endif]", wantOK: true},
		{name: "stray else", src: "a[else]b", want: "a[else]b", wantOK: true},
		{name: "second else is literal", src: "[if nope:x]a[else]b[else]c[endif]", want: "b[else]c", wantOK: true},
		{name: "malformed if is literal", src: "[if x]a[endif]", want: "[if x]a[endif]", wantOK: true},
		{name: "if without space is a variable", src: "a[if:x]b", want: "ab", wantOK: true},
		{name: "literal note", src: "[note] text", want: "[note] text", wantOK: true},
		{name: "literal spaced", src: "[ x ]", want: "[ x ]", wantOK: true},
		{name: "literal number", src: "[1]", want: "[1]", wantOK: true},
		{name: "literal JSON array", src: `["a", "b"]`, want: `["a", "b"]`, wantOK: true},
		{name: "uppercase type is literal", src: "[System:os]", want: "[System:os]", wantOK: true},
		{name: "empty name is literal", src: "[system:]", want: "[system:]", wantOK: true},
		{name: "empty type is literal", src: "[:os]", want: "[:os]", wantOK: true},
		{name: "tag cannot span lines", src: "[system:o\ns]", want: "[system:o\ns]", wantOK: true},
		{name: "nested brackets", src: "[[system:os]]", want: "[linux]", wantOK: true},
		{name: "unclosed bracket", src: "a [system:os", want: "a [system:os", wantOK: true},
		{name: "empty template", src: "", want: "", wantOK: false},
		{name: "whitespace-only template", src: " \n\t\n", want: "", wantOK: false},
		{name: "renders to whitespace only", src: "  [if nope:x]text[endif]\n[git:status] ", want: "", wantOK: false},
		{name: "surrounding whitespace kept when not blank", src: "\n [x:y] \n", want: "\n XY \n", wantOK: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Parse(tc.src).Render(testVars)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.wantOK, ok)
		})
	}
}

func TestRenderNilLookup(t *testing.T) {
	got, ok := Parse("a[x:y][if x:y]b[else]c[endif]").Render(nil)
	assert.True(t, ok)
	assert.Equal(t, "ac", got)
}

func TestVariables(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []Ref
	}{
		{name: "none", src: "plain [note]", want: []Ref{}},
		{
			name: "in order, deduplicated, conditions included",
			src:  "[git:branch] [if !file:a.md][x:y][endif] [git:branch] [file:a.md]",
			want: []Ref{{"git", "branch"}, {"file", "a.md"}, {"x", "y"}},
		},
		{name: "unmatched if is not a reference", src: "[if a:b] [c:d]", want: []Ref{{"c", "d"}}},
		{name: "negation is not part of the ref", src: "[if !a:b][endif]", want: []Ref{{"a", "b"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, Parse(tc.src).Variables())
		})
	}
}

func TestVariablesReturnsCopy(t *testing.T) {
	tpl := Parse("[a:b]")
	tpl.Variables()[0] = Ref{"x", "y"}
	assert.Equal(t, []Ref{{"a", "b"}}, tpl.Variables())
}

func TestRefString(t *testing.T) {
	tests := []struct {
		name string
		ref  Ref
		want string
	}{
		{name: "simple", ref: Ref{"system", "time"}, want: "system:time"},
		{name: "name with colon", ref: Ref{"file", "a:b"}, want: "file:a:b"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.ref.String())
		})
	}
}

// occurrenceBound is the documented output bound: the template length plus
// the value length of every [type:name] occurrence.
func occurrenceBound(src string, vars Values) int {
	bound := len(src)
	for _, n := range Parse(src).nodes {
		if n.kind == kindVar {
			v, _ := vars.Lookup(n.ref)
			bound += len(v)
		}
	}
	return bound
}

func TestRenderOutputBound(t *testing.T) {
	tests := []struct {
		name string
		src  string
	}{
		{name: "repeated variable", src: "[x:y][x:y][x:y]"},
		{name: "variables in both branches", src: "[if x:y][x:y][else][x:y][endif]"},
		{name: "unmatched tags", src: "[if x:y][x:y][else][x:y][endif][endif][else]"},
		{name: "nested", src: "[if x:y][if !nope:x][file:docs/a b.md][endif][x:y][endif]"},
		{name: "literal brackets", src: "[[[x:y]]] [note] [1]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, _ := Parse(tc.src).Render(testVars)
			assert.LessOrEqual(t, len(got), occurrenceBound(tc.src, testVars))
		})
	}
}

// TestHostileInput checks that deep nesting and bracket floods neither blow
// the stack nor take quadratic time: with 100k tags, a recursive or
// quadratic implementation would crash or time the test out.
func TestHostileInput(t *testing.T) {
	const n = 100_000
	tests := []struct {
		name   string
		src    string
		want   string
		wantOK bool
	}{
		{
			name:   "deeply nested true ifs",
			src:    strings.Repeat("[if x:y]", n) + "deep" + strings.Repeat("[endif]", n),
			want:   "deep",
			wantOK: true,
		},
		{
			name:   "deeply nested false ifs with else",
			src:    strings.Repeat("[if nope:x]", n) + "no" + strings.Repeat("[else][endif]", n-1) + "[else]yes[endif]",
			want:   "yes",
			wantOK: true,
		},
		{
			name:   "many unmatched ifs",
			src:    strings.Repeat("[if x:y]", n),
			want:   strings.Repeat("[if x:y]", n),
			wantOK: true,
		},
		{
			name:   "many stray endifs",
			src:    strings.Repeat("[endif]", n),
			want:   strings.Repeat("[endif]", n),
			wantOK: true,
		},
		{
			name:   "bracket flood then one close",
			src:    strings.Repeat("[", 10*n) + "]",
			want:   strings.Repeat("[", 10*n) + "]",
			wantOK: true,
		},
		{
			name:   "letters between brackets",
			src:    strings.Repeat("[abcdefgh", n) + "]",
			want:   strings.Repeat("[abcdefgh", n) + "]",
			wantOK: true,
		},
		{
			name:   "if prefixes flood",
			src:    strings.Repeat("[if   !abc", n) + "]",
			want:   strings.Repeat("[if   !abc", n) + "]",
			wantOK: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Parse(tc.src).Render(testVars)
			require.Equal(t, tc.wantOK, ok)
			assert.True(t, got == tc.want, "output differs (len got %d, want %d)", len(got), len(tc.want))
		})
	}
}
