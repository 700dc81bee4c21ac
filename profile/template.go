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
	switch p.CompactionTemplate {
	case "", CompactionTemplateCurrent, CompactionTemplateOriginal:
	default:
		return fmt.Errorf("compaction_template %q: use %q (adopt the global template at each compaction, the default) or %q (keep the conversation's own)",
			p.CompactionTemplate, CompactionTemplateCurrent, CompactionTemplateOriginal)
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

// Values of Profile.CompactionTemplate.
const (
	CompactionTemplateCurrent  = "current"
	CompactionTemplateOriginal = "original"
)

// TemplateSource is where the "template" middleware reads templates:
// p.Templates, or the built-in default without one.
func (p Profile) TemplateSource() middlewares.TemplateSource {
	if p.Templates == nil {
		return middlewares.StaticTemplate(templates.Default)
	}
	return p.Templates
}

// templatePrompt is the "template" middleware: the global template from
// p.TemplateSource().
func (p Profile) templatePrompt() (engine.Middleware, error) {
	return middlewares.TemplatePrompt(middlewares.TemplatePromptConfig{Templates: p.TemplateSource(), Cwd: p.Cwd, Policy: p.PromptPolicy,
		Resolve: p.Resolve, KeepTemplate: p.CompactionTemplate == CompactionTemplateOriginal})
}
