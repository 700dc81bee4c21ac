package profile_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
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
		return engine.EngineFunc(func(ctx context.Context, in engine.Input, _ func(engine.Delta)) (engine.Output, error) {
			// The request this engine "sends": recorded with its rendering.
			body, _, err := upperRequest(ctx, nil, in.Turn)
			if err != nil {
				return engine.Output{}, err
			}
			engine.DescribeWire(ctx, "example.upper/1", []byte("{}"))
			engine.RecordWireBody(ctx, body)
			last := in.Turn.Blocks[len(in.Turn.Blocks)-1]
			return engine.Output{Blocks: []events.Block{{Kind: events.KindLLMText, Text: strings.ToUpper(last.Text)}}}, nil
		}), nil
	}, profile.WithWire("example.upper/1", upperRequest))
}

// upperRequest is example.upper's request: the last block's text, as JSON.
// The engine and `replay --wire` both make it here.
func upperRequest(_ context.Context, _ []byte, turn *projector.Turn) ([]byte, []engine.BlockNote, error) {
	body, err := json.Marshal(map[string]string{"text": turn.Blocks[len(turn.Blocks)-1].Text})
	return body, nil, err
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

func ExampleWithWire() {
	set, err := profile.Parse([]byte("profiles:\n  default:\n    provider: example.upper\n    middlewares: []\n"))
	if err != nil {
		log.Fatal(err)
	}
	built, err := set[profile.DefaultName].Build(nil, nil)
	if err != nil {
		log.Fatal(err)
	}
	turn := projector.New("c1")
	if err := projector.Apply(turn, events.New("c1", "r1", 0, "example", events.UserAppended{BlockID: "u1", Text: "hello"})); err != nil {
		log.Fatal(err)
	}
	// The chain gives every model call a recorder; the closing event
	// records what it holds (events.Wire).
	ctx, rec := engine.WithWireRecorder(context.Background(), false)
	if _, err := built.Engine.Infer(ctx, engine.Input{Turn: turn}, nil); err != nil {
		log.Fatal(err)
	}
	w := rec.Wire()
	// `turnlog replay --wire` renders it again with the renderer the
	// engine registered, and checks its hash.
	body, _, err := profile.WireRenderers()[w.Version](ctx, []byte(w.Params), turn)
	if err != nil {
		log.Fatal(err)
	}
	sum := sha256.Sum256(body)
	fmt.Println(w.Version, string(body), hex.EncodeToString(sum[:]) == w.SHA256)
	// Output:
	// example.upper/1 {"text":"hello"} true
}
