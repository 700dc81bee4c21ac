package replay

import (
	"context"

	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/middlewares"
	"github.com/turnlog/turnlog/middlewares/template"
	"github.com/turnlog/turnlog/projector"
)

// recordedPrompts is what a re-run's template middleware renders from: the
// template texts and variable values the log recorded, never today's
// global template, clock, files or git. It is armed for each request, like
// replayEngine.
//
// The log holds each prompt the template middleware rendered
// (systemprompt.set or systemprompt.replaced with the template's hash and
// text, and the values of the variables it used; data.set of
// systemprompt.none when the template rendered to nothing, with the hash).
// The k-th template the re-run asks for (TemplateSource.Template) is the
// template of the request's k-th recorded render, and the k-th variable
// resolution answers with that render's values: a variable it did not use
// is absent. A template is found by hash among the texts the
// conversation's log recorded (checked against their hash), else in base
// (the installation's templates, for logs written before the text was
// recorded). What the log does not hold falls back to base, and the re-run
// then shows what differs.
type recordedPrompts struct {
	base   middlewares.TemplateSource
	byHash map[string]string
	// renders are the current request's, in order; nextTemplate and
	// nextValues the next to hand out.
	renders                  []recordedRender
	nextTemplate, nextValues int
}

// recordedRender is one rendering of a template as the log recorded it.
type recordedRender struct {
	hash string
	vars template.Values
}

// newRecordedPrompts collects the template texts a conversation's log
// recorded.
func newRecordedPrompts(recs []eventlog.Record, base middlewares.TemplateSource) *recordedPrompts {
	r := &recordedPrompts{base: base, byHash: map[string]string{projector.HashText(""): ""}}
	keep := func(hash, text string) {
		if text != "" && projector.HashText(text) == hash {
			r.byHash[hash] = text
		}
	}
	for i := range recs {
		switch p := recs[i].Payload.(type) {
		case events.SystemPromptSet:
			keep(p.TemplateHash, p.Template)
		case events.SystemPromptReplaced:
			keep(p.TemplateHash, p.Template)
		}
	}
	return r
}

// arm points r at the request whose events are seg.
func (r *recordedPrompts) arm(seg []eventlog.Record) {
	r.renders, r.nextTemplate, r.nextValues = nil, 0, 0
	for i := range seg {
		if seg[i].Actor != middlewares.ActorTemplatePrompt {
			continue
		}
		switch p := seg[i].Payload.(type) {
		case events.SystemPromptSet:
			if p.TemplateHash != "" {
				r.renders = append(r.renders, recordedRender{hash: p.TemplateHash, vars: p.Variables})
			}
		case events.SystemPromptReplaced:
			if p.TemplateHash != "" {
				r.renders = append(r.renders, recordedRender{hash: p.TemplateHash, vars: p.Variables})
			}
		case events.DataSet:
			if h, ok := p.Values[middlewares.DataNoSystemPrompt]; ok {
				r.renders = append(r.renders, recordedRender{hash: h})
			}
		}
	}
}

// Template implements middlewares.TemplateSource: the template of the
// request's next recorded render.
func (r *recordedPrompts) Template(ctx context.Context) (string, error) {
	if r.nextTemplate < len(r.renders) {
		h := r.renders[r.nextTemplate].hash
		r.nextTemplate++
		if text, ok, err := r.TemplateByHash(ctx, h); err != nil || ok {
			return text, err
		}
	}
	return r.base.Template(ctx)
}

// TemplateByHash implements middlewares.TemplateSource.
func (r *recordedPrompts) TemplateByHash(ctx context.Context, hash string) (string, bool, error) {
	if text, ok := r.byHash[hash]; ok {
		return text, true, nil
	}
	return r.base.TemplateByHash(ctx, hash)
}

// resolve is the template.ResolveFunc of the re-run: the values of the
// request's next recorded render.
func (r *recordedPrompts) resolve(_ context.Context, _ []template.Ref, _ template.Env) (template.Values, error) {
	if r.nextValues >= len(r.renders) {
		return template.Values{}, nil
	}
	v := r.renders[r.nextValues].vars
	r.nextValues++
	return v, nil
}
