package profile

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/middlewares"
	"github.com/turnlog/turnlog/middlewares/template"
	"github.com/turnlog/turnlog/templates"
)

// TemplateLimits are the template middleware's bounds, in a profile:
//
//	template_limits:
//	  max_file_bytes: 65536     # per file: variable (and git:status); longer is cut, with a note
//	  max_prompt_bytes: 262144  # the rendered prompt, and the variables' values together; past it the request fails
//	  git_timeout: 2s           # each git command of git:branch and git:status
//
// Zero values mean the defaults shown (template.DefaultMaxFileBytes,
// template.DefaultMaxPromptBytes, template.DefaultGitTimeout).
type TemplateLimits struct {
	MaxFileBytes   int64         `yaml:"max_file_bytes,omitempty" json:"max_file_bytes,omitempty"`
	MaxPromptBytes int64         `yaml:"max_prompt_bytes,omitempty" json:"max_prompt_bytes,omitempty"`
	GitTimeout     time.Duration `yaml:"git_timeout,omitempty" json:"git_timeout,omitempty"`
}

// Upper bounds of TemplateLimits. The prompt and the values of its
// variables are recorded in one event, which must fit in one NATS message
// (8 MiB by default); a git command slower than a minute stalls the
// conversation's first answer for that long.
const (
	maxMaxPromptBytes = 2 << 20
	maxGitTimeout     = time.Minute
)

// validate reports the first limit that cannot work.
func (l TemplateLimits) validate() error {
	switch {
	case l.MaxFileBytes < 0 || l.MaxPromptBytes < 0 || l.GitTimeout < 0:
		return errors.New("template_limits: values must not be negative (0 or absent means the default)")
	case l.MaxPromptBytes > maxMaxPromptBytes:
		return fmt.Errorf("template_limits.max_prompt_bytes %d is over %d: the prompt and its variables must fit in one event", l.MaxPromptBytes, maxMaxPromptBytes)
	case orDefault(l.MaxFileBytes, template.DefaultMaxFileBytes) > orDefault(l.MaxPromptBytes, template.DefaultMaxPromptBytes):
		return fmt.Errorf("template_limits.max_file_bytes %d is over max_prompt_bytes %d: one file could not fit in the prompt; lower it or raise max_prompt_bytes",
			orDefault(l.MaxFileBytes, template.DefaultMaxFileBytes), orDefault(l.MaxPromptBytes, template.DefaultMaxPromptBytes))
	case l.GitTimeout > maxGitTimeout:
		return fmt.Errorf("template_limits.git_timeout %s is over %s", l.GitTimeout, maxGitTimeout)
	}
	return nil
}

func orDefault(v, def int64) int64 {
	if v == 0 {
		return def
	}
	return v
}

// validateTemplate checks the place of the template middleware in the
// chain, and its limits.
func (p Profile) validateTemplate() error {
	if p.Cwd != "" && !filepath.IsAbs(p.Cwd) {
		return fmt.Errorf("cwd %q is relative; use an absolute directory", p.Cwd)
	}
	for _, root := range p.CwdRoots {
		if !filepath.IsAbs(root) {
			return fmt.Errorf("cwd_roots: %q is relative; use an absolute directory (\"/\" allows any)", root)
		}
	}
	if err := p.TemplateLimits.validate(); err != nil {
		return err
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
// p.TemplateSource(), within the profile's template limits.
func (p Profile) templatePrompt() (engine.Middleware, error) {
	l := p.TemplateLimits
	return middlewares.TemplatePrompt(middlewares.TemplatePromptConfig{
		Templates:      p.TemplateSource(),
		Cwd:            p.Cwd,
		CwdRoots:       p.CwdRoots,
		DenyDirs:       p.DenyDirs,
		Policy:         p.PromptPolicy,
		Resolve:        p.Resolve,
		KeepTemplate:   p.CompactionTemplate == CompactionTemplateOriginal,
		MaxFileBytes:   l.MaxFileBytes,
		MaxPromptBytes: l.MaxPromptBytes,
		GitTimeout:     l.GitTimeout,
		// git:branch and git:status run at the same time: the overall
		// deadline needs to be no longer than one git command.
		ResolveTimeout: max(template.DefaultResolveTimeout, l.GitTimeout+time.Second),
	})
}
