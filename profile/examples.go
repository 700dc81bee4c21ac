package profile

import (
	_ "embed" // for ExamplesYAML
	"fmt"
	"reflect"
)

// ExamplesYAML is a profiles file of representative system prompt set-ups:
// the default, prompt_policy replace, a fixed persona with a global prompt,
// an appended house style, the template with a global prompt. `turnlog
// worker --example-profiles` prints it, and the combination test of the
// system prompt policy runs every profile in it.
//
//go:embed examples.yaml
var ExamplesYAML string

// BuiltIn returns every profile turnlog ships: the default set and the
// examples, by name. A name both define must define the same profile.
func BuiltIn() (Set, error) {
	def, err := Parse([]byte(DefaultYAML))
	if err != nil {
		return nil, err
	}
	ex, err := Parse([]byte(ExamplesYAML))
	if err != nil {
		return nil, err
	}
	for name, p := range def {
		if q, ok := ex[name]; ok && !reflect.DeepEqual(p, q) {
			return nil, fmt.Errorf("built-in profiles: %q differs between the default set and the examples", name)
		}
		ex[name] = p
	}
	return ex, nil
}
