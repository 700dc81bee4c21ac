package replay_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/oklog/ulid/v2"
	"github.com/turnlog/turnlog/embedded"
	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
	"github.com/turnlog/turnlog/replay"
)

// Prove what a model saw: a request records its model call through an
// engine.Tx (the event inference.started carries the input's hash), and
// replay re-projects the log to show that call's exact input and verify
// the hash.
func Example() {
	dir, err := os.MkdirTemp("", "turnlog-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	srv, err := embedded.Start(embedded.Config{DataDir: dir})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Shutdown()
	nc, err := srv.Connect()
	if err != nil {
		log.Fatal(err)
	}
	defer nc.Close()
	ctx := context.Background()
	l, err := eventlog.Open(ctx, nc)
	if err != nil {
		log.Fatal(err)
	}

	// A model: any engine.Engine (the openai and scripted providers are
	// two). This one echoes the last block of its input after "OK: ".
	model := engine.EngineFunc(func(ctx context.Context, in engine.Input, _ func(engine.Delta)) (engine.Output, error) {
		last := in.Turn.Blocks[len(in.Turn.Blocks)-1].Text
		return engine.Output{Blocks: []events.Block{{Kind: events.KindLLMText, Text: "OK: " + last}}}, nil
	})

	// One request, as a worker records it: the user's block, then the
	// loop (model calls through the chain), each step appended to the log.
	conv := "demo"
	tx := engine.NewTx(projector.New(conv), ulid.Make().String(), engine.WithLog(l), engine.WithModel("echo-1"))
	if err := tx.Emit("my-app", events.UserAppended{BlockID: engine.NewID(), Text: "ship it"}); err != nil {
		log.Fatal(err)
	}
	if err := (engine.Loop{Handler: engine.Chain(model)}).Run(ctx, tx); err != nil {
		log.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		log.Fatal(err)
	}

	// Replay: every model call with the Turn it received.
	h, err := replay.Timeline(ctx, l, conv)
	if err != nil {
		log.Fatal(err)
	}
	for _, e := range h.Events {
		if in := e.Inference; in != nil {
			fmt.Printf("model call #%d (%s) verified=%v, input:\n", in.Index, in.Model, in.Verified)
			for _, b := range in.Turn.Blocks {
				fmt.Printf("  %s %q\n", b.Kind, b.Text)
			}
		}
	}
	v, err := replay.Verify(ctx, l, conv)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("every input matches the log:", v.OK(), "model calls:", v.Inferences)

	// Output:
	// model call #1 (echo-1) verified=true, input:
	//   user "ship it"
	// every input matches the log: true model calls: 1
}
