package profile

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/middlewares"
	"github.com/turnlog/turnlog/templates"
)

// validateTemplate checks the place of the template middleware in the
// chain.
func (p Profile) validateTemplate() error {
	if p.Cwd != "" && !filepath.IsAbs(p.Cwd) {
		return fmt.Errorf("cwd %q is relative; use an absolute directory", p.Cwd)
	}
	at := slices.Index(p.Middlewares, "template")
	if at < 0 {
		return nil
	}
	if slices.Contains(p.Middlewares, "systemprompt") {
		// Both would own the system prompt and undo each other on every
		// model call.
		return errors.New(`middlewares "template" and "systemprompt" both set the system prompt; keep one (systemprompt_append may follow template)`)
	}
	if c := slices.Index(p.Middlewares, "compaction"); c >= 0 && c < at {
		return errors.New(`middleware "template" must come before "compaction": a compaction rebuilds the template's prompt`)
	}
	return nil
}

// templatePrompt is the "template" middleware: the global template from
// p.Templates (the built-in default without one).
func (p Profile) templatePrompt() (engine.Middleware, error) {
	src := p.Templates
	if src == nil {
		src = middlewares.StaticTemplate(templates.Default)
	}
	return middlewares.TemplatePrompt(middlewares.TemplatePromptConfig{Templates: src, Cwd: p.Cwd, Policy: p.PromptPolicy})
}
