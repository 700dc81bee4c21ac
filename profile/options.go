package profile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Options are the settings a profile gives one registered engine or
// middleware, under its name in the profile's options key:
//
//	profiles:
//	  default:
//	    provider: acme.gpt
//	    middlewares: [acme.sysprompt, ordering]
//	    options:
//	      acme.gpt: {endpoint: "http://127.0.0.1:9000"}
//	      acme.sysprompt:
//	        prompt: You are Acme's assistant.
//
// The factory decodes them into a struct of its own (Decode), so each
// engine or middleware defines and checks its settings itself, and a
// profiles file keeps one place for them whatever the binary links.
type Options struct {
	node *yaml.Node
}

// IsZero reports whether the profile gave no options.
func (o Options) IsZero() bool { return o.node == nil }

// Decode decodes the options into v, a pointer to a struct with yaml
// tags. A key v has no field for is an error that names it (a setting
// that silently does nothing is a setting its user believes in); without
// options v is left as it is, so set defaults before calling.
func (o Options) Decode(v any) error {
	if o.node == nil {
		return nil
	}
	raw, err := yaml.Marshal(o.node)
	if err != nil {
		return fmt.Errorf("options: %w", err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	err = dec.Decode(v)
	var te *yaml.TypeError
	if errors.As(err, &te) {
		// The node was re-encoded to decode it strictly: its lines count
		// from the node. Say them as the profiles file has them, and
		// leave out the Go type, which means nothing to the file's author.
		msgs := make([]string, len(te.Errors))
		for i, m := range te.Errors {
			if sub := lineOf.FindStringSubmatch(m); sub != nil {
				n, _ := strconv.Atoi(sub[1])
				m = fmt.Sprintf("line %d: %s", o.node.Line+n-1, sub[2])
			}
			msgs[i] = inType.ReplaceAllString(m, "")
		}
		return fmt.Errorf("options: %s", strings.Join(msgs, "; "))
	}
	if err != nil {
		return fmt.Errorf("options: %w", err)
	}
	return nil
}

var (
	lineOf = regexp.MustCompile(`^line (\d+): (.*)$`)
	inType = regexp.MustCompile(` in type .*$`)
)

// RequireNone is for the factories of engines and middlewares that the
// profile's own keys configure (turnlog's built-ins): options given to
// them are an error rather than silently ignored.
func (o Options) RequireNone() error {
	if o.node == nil {
		return nil
	}
	return fmt.Errorf("takes no options (line %d): its settings are the profile's own keys", o.node.Line)
}

// UnmarshalYAML implements yaml.Unmarshaler: the node is kept for the
// factory to decode.
func (o *Options) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: options of an engine or a middleware are a mapping of keys to values", n.Line)
	}
	o.node = n
	return nil
}

// MarshalYAML implements yaml.Marshaler.
func (o Options) MarshalYAML() (any, error) { return o.node, nil }

// MarshalJSON implements json.Marshaler: the options as plain JSON (null
// when none), for whoever shows a profile.
func (o Options) MarshalJSON() ([]byte, error) {
	if o.node == nil {
		return []byte("null"), nil
	}
	var v any
	if err := o.node.Decode(&v); err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

// OptionsYAML makes Options from YAML text, for programs that build a
// Profile in Go rather than read one from a file.
func OptionsYAML(text string) (Options, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(text), &doc); err != nil {
		return Options{}, fmt.Errorf("options: %w", err)
	}
	if len(doc.Content) == 0 {
		return Options{}, nil
	}
	var o Options
	if err := o.UnmarshalYAML(doc.Content[0]); err != nil {
		return Options{}, fmt.Errorf("options: %w", err)
	}
	return o, nil
}
