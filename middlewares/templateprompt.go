package middlewares

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/middlewares/template"
	"github.com/turnlog/turnlog/projector"
)

// ActorTemplatePrompt is the actor of TemplatePrompt's events (and of
// those TemplateSummarizer records on compaction).
const ActorTemplatePrompt = "systemprompt.template"

// Names TemplatePrompt records in the Turn.
const (
	// SourceTemplate is the systemprompt.source metadata of the system
	// block TemplatePrompt writes; it is how the block is found again.
	SourceTemplate = "template"
	// MetaTemplateHash is the block metadata holding the hash of the
	// template the prompt was rendered from (the TemplateHash of its
	// systemprompt.set), so a compaction renders that same template again.
	MetaTemplateHash = "systemprompt.template_hash"
	// DataNoSystemPrompt is the Turn data key set (to the template's hash)
	// when the conversation's template rendered to no system prompt at all;
	// it records that decision, so a later edit of the global template does
	// not give the conversation a prompt on a later turn.
	DataNoSystemPrompt = "systemprompt.none"
	// DataCwd is the Turn data key (set by a chat request's data) holding
	// the conversation's working directory, used by the prompt:cwd, git:
	// and file: variables.
	DataCwd = "cwd"
	// ReasonCompaction is the Reason of the systemprompt.replaced recorded
	// when a compaction rebuilt the prompt.
	ReasonCompaction = "compaction"
)

// TemplatePrompt gives every conversation a system prompt rendered from the
// operator's template, built once and then reused byte for byte, so that a
// provider's prompt cache keeps working for the whole conversation.
//
// On the first model call of a conversation (the Turn has no system block
// with systemprompt.source "template" yet) it reads the template from
// Templates, resolves its variables (template.RenderWith: the working
// directory from the Turn's "cwd" data or Cwd, the Tx's model, the
// conversation ID) and records systemprompt.set: a trusted block at index
// 0, with the template's hash and text, the values of the variables the
// prompt used and where they went (the block's untrusted spans: a file's
// or the request's words never act as the operator's), so replay shows
// where the prompt came from and can render it again. On later calls it
// emits nothing: editing the template changes a conversation's prompt at
// its next rebuild, never between two calls. A
// template that renders to nothing means no system prompt at all; that is
// recorded once as data.set of "systemprompt.none", so the conversation
// stays without one. A locked system block (systemprompt.lock) is left
// alone and no prompt is added in front of it.
//
// A conversation that already has a prompt the template did not write (an
// import's, a fork's, an operator's) keeps it under PolicyKeep, the
// default: the template adds nothing in front of it, so the conversation
// never has two prompts. Under PolicyReplace the template's prompt
// replaces that text in place (systemprompt.replaced with the previous
// text and source), and the block is the template's from then on; a
// template that renders to nothing then removes it (blocks.removed) and
// records "systemprompt.none".
//
// The prompt is built again only on compaction, by TemplateSummarizer:
// put TemplatePrompt before Compaction in the chain.
func TemplatePrompt(cfg TemplatePromptConfig) (engine.Middleware, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return func(next engine.Handler) engine.Handler {
		return func(ctx context.Context, tx *engine.Tx) error {
			p := &templatePrompt{cfg: &cfg, tx: tx}
			if err := p.ensure(ctx); err != nil {
				return err
			}
			return next(context.WithValue(ctx, templatePromptKey{}, p), tx)
		}
	}, nil
}

// templatePromptKey carries the running TemplatePrompt to
// TemplateSummarizer, which Compaction calls deeper in the chain with the
// same context but without the Tx.
type templatePromptKey struct{}

// templatePrompt is TemplatePrompt at work on one Tx.
type templatePrompt struct {
	cfg *TemplatePromptConfig
	tx  *engine.Tx
}

// rendered is a template rendered for the Turn.
type rendered struct {
	prompt string
	vars   map[string]string
	spans  []events.Span // where vars went in prompt: untrusted
	src    string        // the template
	hash   string        // of the template
	ok     bool          // false: no system prompt
}

// ensure gives the conversation its prompt unless it has one (or has
// recorded that it has none).
func (p *templatePrompt) ensure(ctx context.Context) error {
	turn := p.tx.Turn()
	if _, _, ok := templateBlock(turn); ok {
		return nil
	}
	if _, none := turn.Data[DataNoSystemPrompt]; none {
		return nil
	}
	other, _, hasOther := systemPromptBlock(turn)
	if hasOther && (locked(other) || p.cfg.Policy != PolicyReplace) {
		return nil // the conversation's own prompt
	}
	src, err := p.cfg.Templates.Template(ctx)
	if err != nil {
		return fmt.Errorf("%s: read the template: %w", ActorTemplatePrompt, retryable(err))
	}
	r, err := p.render(ctx, src)
	if err != nil {
		return err
	}
	if hasOther {
		return p.takeOver(other, r)
	}
	if !r.ok {
		return p.tx.Emit(ActorTemplatePrompt, events.DataSet{Values: map[string]string{DataNoSystemPrompt: r.hash}})
	}
	return p.tx.Emit(ActorTemplatePrompt, p.set(r))
}

// takeOver makes r the conversation's prompt in place of other, a prompt
// the template did not write (PolicyReplace).
func (p *templatePrompt) takeOver(other events.Block, r rendered) error {
	source := other.Meta[events.MetaSystemPromptSource]
	if !r.ok {
		if err := p.tx.Emit(ActorTemplatePrompt, events.BlocksRemoved{
			BlockIDs: []string{other.ID},
			Reason:   fmt.Sprintf("prompt policy replace: the template renders to no system prompt, so the conversation's prompt (source %q) goes", source),
		}); err != nil {
			return err
		}
		return p.tx.Emit(ActorTemplatePrompt, events.DataSet{Values: map[string]string{DataNoSystemPrompt: r.hash}})
	}
	return p.tx.Emit(ActorTemplatePrompt, events.SystemPromptReplaced{
		BlockID:        other.ID,
		Text:           r.prompt,
		Previous:       other.Text,
		Meta:           TakeOverMeta(other.Meta, SourceTemplate, map[string]string{MetaTemplateHash: r.hash}),
		TemplateHash:   r.hash,
		Variables:      r.vars,
		Reason:         "prompt policy replace: the template's prompt replaces the conversation's",
		PreviousSource: source,
		Untrusted:      r.spans,
		Template:       r.src,
	})
}

// ProfileMaxPromptBytes names the profile setting that raises the prompt
// cap, for the error of a template that reaches it.
const ProfileMaxPromptBytes = "template_limits.max_prompt_bytes"

func (p *templatePrompt) render(ctx context.Context, src string) (rendered, error) {
	turn := p.tx.Turn()
	env := template.Env{
		Cwd:            p.cfg.Cwd,
		Model:          p.tx.Model(),
		ConversationID: turn.Conversation,
		Now:            p.cfg.Now,
		MaxFileBytes:   p.cfg.MaxFileBytes,
		MaxPromptBytes: p.cfg.MaxPromptBytes,
		GitTimeout:     p.cfg.GitTimeout,
		DenyDirs:       p.cfg.DenyDirs,
	}
	// A relative directory would be relative to wherever the worker runs.
	resolve := p.cfg.Resolve
	if cwd := turn.Data[DataCwd]; filepath.IsAbs(cwd) {
		env.Cwd = cwd
		if resolve == nil && len(p.cfg.CwdRoots) > 0 {
			if err := CheckCwd(cwd, p.cfg.CwdRoots); err != nil {
				resolve = refuseCwd(err)
			}
		}
	}
	ctx, cancel := context.WithTimeout(ctx, p.cfg.ResolveTimeout)
	defer cancel()
	out, err := template.RenderTracked(ctx, src, env, resolve)
	if errors.Is(err, ErrCwdOutsideRoots) {
		return rendered{}, fmt.Errorf("%s: template %.12s: %w", ActorTemplatePrompt, projector.HashText(src), err)
	}
	if err != nil {
		// Not transient: the same template and files fail again.
		return rendered{}, fmt.Errorf("%s: template %.12s: %w (the cap is the profile's %s)", ActorTemplatePrompt, projector.HashText(src), err, ProfileMaxPromptBytes)
	}
	r := rendered{prompt: out.Prompt, src: src, hash: projector.HashText(src), ok: out.OK}
	if len(out.Used) > 0 {
		r.vars = map[string]string(out.Used)
	}
	for _, s := range out.Spans {
		r.spans = append(r.spans, events.Span{Start: s.Start, End: s.End, Var: s.Ref.String()})
	}
	return r, nil
}

func (p *templatePrompt) set(r rendered) events.SystemPromptSet {
	return events.SystemPromptSet{
		BlockID:      engine.NewID(),
		Text:         r.prompt,
		Index:        0,
		Trust:        events.Trusted,
		Meta:         map[string]string{events.MetaSystemPromptSource: SourceTemplate, MetaTemplateHash: r.hash},
		TemplateHash: r.hash,
		Variables:    r.vars,
		Untrusted:    r.spans,
		Template:     r.src,
	}
}

// rebuild renders a template again for the conversation, with fresh
// values: the current global template, or with KeepTemplate the template
// it was prompted from (found by hash; the global one when that is no
// longer known or the conversation has neither prompt nor record of one).
// ok is false when the prompt is not the template's to rebuild: it is
// locked, or it is a prompt the template did not write (kept under
// PolicyKeep); rendering one anyway would put a second prompt in front of
// it.
func (p *templatePrompt) rebuild(ctx context.Context) (rendered, bool, error) {
	turn := p.tx.Turn()
	hash := turn.Data[DataNoSystemPrompt]
	if promptFrozen(turn) {
		return rendered{}, false, nil
	}
	if b, _, ok := templateBlock(turn); ok {
		if locked(b) {
			return rendered{}, false, nil
		}
		hash = b.Meta[MetaTemplateHash]
	} else if _, _, other := systemPromptBlock(turn); other {
		return rendered{}, false, nil
	}
	var (
		src   string
		found bool
		err   error
	)
	if p.cfg.KeepTemplate && hash != "" {
		if src, found, err = p.cfg.Templates.TemplateByHash(ctx, hash); err != nil {
			return rendered{}, false, fmt.Errorf("%s: read the conversation's template: %w", ActorTemplatePrompt, retryable(err))
		}
	}
	if !found {
		if src, err = p.cfg.Templates.Template(ctx); err != nil {
			return rendered{}, false, fmt.Errorf("%s: read the template: %w", ActorTemplatePrompt, retryable(err))
		}
	}
	r, err := p.render(ctx, src)
	if err != nil {
		return rendered{}, false, err
	}
	return r, true, nil
}

// record makes r the conversation's prompt, with the compaction as reason.
func (p *templatePrompt) record(r rendered) error {
	turn := p.tx.Turn()
	b, _, have := templateBlock(turn)
	_, none := turn.Data[DataNoSystemPrompt]
	switch {
	case have && r.ok:
		meta := map[string]string{MetaTemplateHash: r.hash}
		// The prompt is new: appends made to the old one must be made
		// again, so their records go (an empty value deletes a key).
		for k := range b.Meta {
			if strings.HasPrefix(k, MetaSystemPromptAppendPrefix) {
				meta[k] = ""
			}
		}
		return p.tx.Emit(ActorTemplatePrompt, events.SystemPromptReplaced{
			BlockID:              b.ID,
			Text:                 r.prompt,
			Previous:             b.Text,
			Meta:                 meta,
			TemplateHash:         r.hash,
			Variables:            r.vars,
			Reason:               ReasonCompaction,
			Untrusted:            r.spans,
			Template:             r.src,
			PreviousTemplateHash: b.Meta[MetaTemplateHash],
		})
	case have:
		if err := p.tx.Emit(ActorTemplatePrompt, events.BlocksRemoved{
			BlockIDs: []string{b.ID},
			Reason:   ReasonCompaction + ": the template now renders to no system prompt",
		}); err != nil {
			return err
		}
		return p.tx.Emit(ActorTemplatePrompt, events.DataSet{Values: map[string]string{DataNoSystemPrompt: r.hash}})
	case r.ok:
		if err := p.tx.Emit(ActorTemplatePrompt, p.set(r)); err != nil {
			return err
		}
		if none {
			return p.tx.Emit(ActorTemplatePrompt, events.DataSet{Unset: []string{DataNoSystemPrompt}})
		}
		return nil
	case turn.Data[DataNoSystemPrompt] != r.hash:
		return p.tx.Emit(ActorTemplatePrompt, events.DataSet{Values: map[string]string{DataNoSystemPrompt: r.hash}})
	}
	return nil
}

// templateBlock returns the system block TemplatePrompt wrote.
func templateBlock(t *projector.Turn) (events.Block, int, bool) {
	for i := range t.Blocks {
		if b := &t.Blocks[i]; b.Kind == events.KindSystem && b.Meta[events.MetaSystemPromptSource] == SourceTemplate {
			return *b, i, true
		}
	}
	return events.Block{}, -1, false
}

// retryable marks a template store's error transient (a retry may find
// the store back), unless it says no retry cures it (an error with a
// Permanent method that returns true, as a template the store refuses to
// read has): the request then fails at once rather than coming again.
func retryable(err error) error {
	var p interface{ Permanent() bool }
	if errors.As(err, &p) && p.Permanent() {
		return err
	}
	return engine.Transient(err)
}
