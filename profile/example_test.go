package profile_test

import (
	"context"
	"fmt"
	"log"
	"strings"

	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/middlewares"
	"github.com/turnlog/turnlog/profile"
	"github.com/turnlog/turnlog/projector"
)

// A program registers its own middleware and engine in init, before any
// profile is read; profiles then name them like turnlog's own, with their
// options under options.<name>.
func init() {
	profile.RegisterMiddleware("example.persona", func(s profile.MiddlewareSpec) (engine.Middleware, error) {
		var opts struct {
			Prompt string `yaml:"prompt"`
		}
		if err := s.Options.Decode(&opts); err != nil {
			return nil, err
		}
		return middlewares.SystemPromptReplace(middlewares.SystemPromptReplaceConfig{
			Prompt: middlewares.StaticPrompt(opts.Prompt), Source: "example.persona"})
	})
	profile.RegisterEngine("example.upper", func(s profile.EngineSpec) (engine.Engine, error) {
		return engine.EngineFunc(func(_ context.Context, in engine.Input, _ func(engine.Delta)) (engine.Output, error) {
			last := in.Turn.Blocks[len(in.Turn.Blocks)-1]
			return engine.Output{Blocks: []events.Block{{Kind: events.KindLLMText, Text: strings.ToUpper(last.Text)}}}, nil
		}), nil
	})
}

func ExampleRegisterMiddleware() {
	set, err := profile.Parse([]byte(`profiles:
  default:
    provider: example.upper
    middlewares: [example.persona, ordering]
    options:
      example.persona: {prompt: "You shout."}
`))
	if err != nil {
		log.Fatal(err)
	}
	built, err := set[profile.DefaultName].Build(nil, nil)
	if err != nil {
		log.Fatal(err)
	}
	tx := engine.NewTx(projector.New("c1"), engine.NewID())
	if err := tx.Emit("example", events.UserAppended{BlockID: engine.NewID(), Text: "hello"}); err != nil {
		log.Fatal(err)
	}
	if err := built.Loop.Run(context.Background(), tx); err != nil {
		log.Fatal(err)
	}
	for _, b := range tx.Turn().Blocks {
		fmt.Printf("%s: %s\n", b.Kind, b.Text)
	}
	// Output:
	// system: You shout.
	// user: hello
	// llm_text: HELLO
}

func ExampleParse_unregistered() {
	_, err := profile.Parse([]byte("profiles:\n  default:\n    middlewares: [acme.sysprompt]\n"))
	fmt.Println(strings.SplitN(err.Error(), " (", 2)[0])
	// Output:
	// profile "default": middleware "acme.sysprompt" is not registered in this binary
}
