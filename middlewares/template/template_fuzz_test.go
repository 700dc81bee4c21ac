package template

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzRender checks that any template parses and renders without panicking,
// in bounded time, within the documented output bound, that ok == false
// exactly when the output is blank, and that the byte cap stops exactly at
// its limit. The lint (issue 23) never panics on the same input, stays
// within MaxWarnings, and reports positions inside the template, in order,
// each with the line and column its offset has.
func FuzzRender(f *testing.F) {
	for _, seed := range []string{
		"",
		" \n",
		"[system:os]",
		"[if x:y]a[else]b[endif]",
		"[if !x:y]a[endif]",
		"[if x:y][if nope:x]a[else]b[endif][endif]",
		"a [if x:y] b [x:y]",
		"[endif][else]",
		"[[x:y]]",
		`["a", 1]`,
		"[file:docs/a b.md]",
		"[if x:y]\n[x:y]\n[endif]",
		"[if  \t!git:status]clean[endif]",
		"[fiel:README.md] [system:dat",
		"[if file:x]\n[else]é[system:dat]\n",
		"[[[[if a:b",
	} {
		f.Add(seed)
	}
	maxValue := 0
	for _, v := range testVars {
		maxValue = max(maxValue, len(v))
	}
	f.Fuzz(func(t *testing.T, src string) {
		checkLint(t, src)
		tpl := Parse(src)
		got, ok := tpl.Render(testVars)
		// Every variable occurrence starts with '[', so this bound follows
		// from the documented one without trusting the parser's own count.
		if bound := len(src) + strings.Count(src, "[")*maxValue; len(got) > bound {
			t.Fatalf("output length %d exceeds bound %d", len(got), bound)
		}
		if bound := occurrenceBound(src, testVars); len(got) > bound {
			t.Fatalf("output length %d exceeds occurrence bound %d", len(got), bound)
		}
		if ok != (strings.TrimSpace(got) != "") {
			t.Fatalf("ok = %v for output %q", ok, got)
		}
		if !ok && got != "" {
			t.Fatalf("blank output not normalised to empty: %q", got)
		}
		// The cap: exactly the output's length renders the same output, one
		// byte less stops with ErrTooLarge, never a cut prompt.
		if ok {
			capped, cappedOK, err := tpl.RenderLimit(testVars, int64(len(got)))
			if err != nil || capped != got || !cappedOK {
				t.Fatalf("RenderLimit at the output's length = %q, %v, %v; want %q", capped, cappedOK, err, got)
			}
			capped, cappedOK, err = tpl.RenderLimit(testVars, int64(len(got)-1))
			if !errors.Is(err, ErrTooLarge) || capped != "" || cappedOK {
				t.Fatalf("RenderLimit one byte short = %q, %v, %v; want ErrTooLarge", capped, cappedOK, err)
			}
		}
		// Text without any tag renders as itself.
		if !strings.Contains(src, "[") && ok && got != src {
			t.Fatalf("tag-free template changed: got %q", got)
		}
		declared := map[Ref]bool{}
		for _, ref := range tpl.Variables() {
			if ref.Type == "" || ref.Name == "" || strings.ContainsAny(ref.Name, "]\n") {
				t.Fatalf("invalid ref %q", ref)
			}
			declared[ref] = true
		}
		// Rendering reads only declared variables, and the values it read
		// reproduce the same output (what RenderWith promises its callers).
		rec := &recorder{from: testVars, used: Values{}}
		again, againOK := tpl.Render(lookupFunc(func(ref Ref) (string, bool) {
			if !declared[ref] {
				t.Fatalf("render read undeclared variable %q", ref)
			}
			return rec.Lookup(ref)
		}))
		if again != got || againOK != ok {
			t.Fatalf("render is not deterministic: %q then %q", got, again)
		}
		if replay, _ := tpl.Render(rec.used); replay != got {
			t.Fatalf("render with used values = %q, want %q", replay, got)
		}
	})
}

type lookupFunc func(Ref) (string, bool)

func (f lookupFunc) Lookup(ref Ref) (string, bool) { return f(ref) }

// checkLint is FuzzRender's property of Lint.
func checkLint(t *testing.T, src string) {
	ws := Lint(src)
	if len(ws) > MaxWarnings {
		t.Fatalf("%d warnings, more than MaxWarnings", len(ws))
	}
	prev := 0
	for _, w := range ws {
		if w.Offset < prev || w.Offset > len(src) || w.Message == "" || w.Code == "" {
			t.Fatalf("bad warning %+v (previous offset %d, template length %d)", w, prev, len(src))
		}
		prev = w.Offset
		before := src[:w.Offset]
		line := strings.Count(before, "\n") + 1
		col := utf8.RuneCountInString(before[strings.LastIndexByte(before, '\n')+1:]) + 1
		if w.Line != line || w.Col != col {
			t.Fatalf("warning at offset %d says %d:%d, want %d:%d", w.Offset, w.Line, w.Col, line, col)
		}
		if w.Code != WarnTooMany && !strings.HasPrefix(src[w.Offset:], w.Text) {
			t.Fatalf("warning text %q is not the template's at offset %d", w.Text, w.Offset)
		}
	}
}
