package middlewares

// This file holds what TemplatePrompt is configured with: where its
// templates come from, and its settings.

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/turnlog/turnlog/middlewares/template"
	"github.com/turnlog/turnlog/projector"
)

// TemplateSource gives the templates TemplatePrompt renders. The templates
// package's Store implements it on the TURNLOG_TEMPLATES bucket;
// StaticTemplate is a fixed one.
type TemplateSource interface {
	// Template returns the template new conversations are prompted with
	// ("" means no system prompt).
	Template(ctx context.Context) (string, error)
	// TemplateByHash returns the template with the given
	// projector.HashText; ok is false when it is not known.
	TemplateByHash(ctx context.Context, hash string) (text string, ok bool, err error)
}

// StaticTemplate is a TemplateSource of one fixed template, for tests and
// for chains built without a store.
type StaticTemplate string

// Template implements TemplateSource.
func (s StaticTemplate) Template(context.Context) (string, error) { return string(s), nil }

// TemplateByHash implements TemplateSource.
func (s StaticTemplate) TemplateByHash(_ context.Context, hash string) (string, bool, error) {
	if projector.HashText(string(s)) == hash {
		return string(s), true, nil
	}
	return "", false, nil
}

// TemplatePromptConfig configures TemplatePrompt.
type TemplatePromptConfig struct {
	// Templates gives the template (required).
	Templates TemplateSource
	// Cwd is the working directory used when the Turn's data has no
	// absolute "cwd" ("" and no data: the prompt:cwd, git: and file:
	// variables do not exist).
	Cwd string
	// CwdRoots, when set, are the directories under which a request's
	// "cwd" data must lie (symbolic links resolved) for the variables to
	// read it; a request with a cwd elsewhere fails (ErrCwdOutsideRoots)
	// rather than letting whoever may send requests point file: and git:
	// at any directory the worker can read. Empty means any directory.
	// Cwd is the operator's own setting and is not checked, and neither is
	// a render whose values come from Resolve (`replay --rerun`).
	CwdRoots []string
	// DenyDirs are directories the variables never read, whatever the cwd
	// (template.Env.DenyDirs): turnlog serve's <data>/auth, where the NATS
	// keys and the HTTP API's token live.
	DenyDirs []string
	// Now, MaxFileBytes, MaxPromptBytes and GitTimeout are passed to the
	// resolvers and the renderer (see template.Env); zero values mean
	// their defaults. A prompt, or variables, past MaxPromptBytes fail the
	// request with an error naming the cap and the variable
	// (template.ErrTooLarge), rather than sending a cut prompt.
	Now            func() time.Time
	MaxFileBytes   int64
	MaxPromptBytes int64
	GitTimeout     time.Duration
	// ResolveTimeout bounds the resolution of all the template's variables
	// together (default template.DefaultResolveTimeout): a slow git or
	// file system makes variables missing, never the request slow.
	ResolveTimeout time.Duration
	// Policy is what happens to a conversation prompt the template did
	// not write (imported, forked from a conversation prompted otherwise,
	// set by an operator): PolicyKeep (the default) leaves it as the
	// conversation's prompt, and the template is then neither rendered
	// nor rebuilt for that conversation; PolicyReplace renders the
	// template and replaces that prompt's text with it, in place, on the
	// first model call.
	Policy PromptPolicy
	// KeepTemplate makes a rebuild (on compaction) render the template the
	// conversation was prompted from, found by hash, instead of the current
	// global template. The default adopts the current one: the seed's
	// behaviour, where a new template takes effect at the next rebuild,
	// so a fixed or tightened template reaches long conversations too, at
	// a moment when the prompt cache is lost anyway.
	KeepTemplate bool
	// Resolve computes the variables' values; nil means template.Resolve
	// (the clock, files, git). `replay --rerun` sets it to answer with the
	// values the log recorded.
	Resolve template.ResolveFunc
}

func (c *TemplatePromptConfig) setDefaults() {
	if c.ResolveTimeout <= 0 {
		c.ResolveTimeout = template.DefaultResolveTimeout
	}
}

// Validate reports the first setting that cannot work.
func (c TemplatePromptConfig) Validate() error {
	if c.Templates == nil {
		return errors.New("systemprompt.template: Templates is nil; use a templates.Store or middlewares.StaticTemplate(text)")
	}
	if c.Cwd != "" && !filepath.IsAbs(c.Cwd) {
		return fmt.Errorf("systemprompt.template: Cwd %q is relative; use an absolute directory", c.Cwd)
	}
	for _, root := range c.CwdRoots {
		if !filepath.IsAbs(root) {
			return fmt.Errorf("systemprompt.template: CwdRoots entry %q is relative; use an absolute directory", root)
		}
	}
	if err := c.Policy.Validate(); err != nil {
		return fmt.Errorf("systemprompt.template: %w", err)
	}
	return nil
}
