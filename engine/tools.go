package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
)

// ToolFunc runs a tool with the model's JSON arguments and returns the text
// the model gets back. An error is reported to the model as an error
// result, not as a failed request: models can often recover from it.
type ToolFunc func(ctx context.Context, args json.RawMessage) (string, error)

// Tool is a tool the model may call: its description for the model and the
// Go function that runs it.
type Tool struct {
	Spec ToolSpec
	Func ToolFunc
}

// Tools is a registry of tools by name. It does not change once built.
type Tools struct {
	byName map[string]Tool
	specs  []ToolSpec // sorted by name
}

// NewTools builds a registry; a name used twice is an error, since the
// model could not tell the two apart.
func NewTools(tools ...Tool) (*Tools, error) {
	r := &Tools{byName: make(map[string]Tool, len(tools))}
	for _, t := range tools {
		if t.Spec.Name == "" || t.Func == nil {
			return nil, fmt.Errorf("tool %q: a tool needs a name and a function", t.Spec.Name)
		}
		if _, dup := r.byName[t.Spec.Name]; dup {
			return nil, fmt.Errorf("tool %q registered twice", t.Spec.Name)
		}
		r.byName[t.Spec.Name] = t
		r.specs = append(r.specs, t.Spec)
	}
	sort.Slice(r.specs, func(i, j int) bool { return r.specs[i].Name < r.specs[j].Name })
	return r, nil
}

// Specs lists the tools for the model, sorted by name so the input (and
// its hash) does not depend on map order. The list is built once, with the
// registry, and shared by every request: read it, do not change it.
func (r *Tools) Specs() []ToolSpec {
	if r == nil {
		return nil
	}
	return r.specs[:len(r.specs):len(r.specs)]
}

// Call runs the named tool. An unknown tool or a tool error comes back as
// (text, true): the text explains the error to the model.
func (r *Tools) Call(ctx context.Context, name string, args string) (result string, isError bool) {
	t, ok := r.lookup(name)
	if !ok {
		return fmt.Sprintf("error: no tool named %q; available tools: %v", name, r.names()), true
	}
	raw := json.RawMessage(args)
	if len(raw) == 0 {
		raw = json.RawMessage("{}")
	}
	if !json.Valid(raw) {
		return fmt.Sprintf("error: the arguments for %s are not valid JSON: %q", name, args), true
	}
	out, err := safeCall(ctx, t.Func, raw)
	if err != nil {
		return "error: " + err.Error(), true
	}
	return out, false
}

func (r *Tools) lookup(name string) (Tool, bool) {
	if r == nil {
		return Tool{}, false
	}
	t, ok := r.byName[name]
	return t, ok
}

func (r *Tools) names() []string {
	var out []string
	for _, s := range r.Specs() {
		out = append(out, s.Name)
	}
	return out
}

// safeCall turns a panicking tool into an error result instead of taking
// the worker down with it.
func safeCall(ctx context.Context, f ToolFunc, args json.RawMessage) (out string, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("tool panicked: %v", p)
		}
	}()
	return f(ctx, args)
}
