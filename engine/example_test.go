package engine_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
)

// A chain of your own: middlewares as func(next) next, an engine at the
// end, the tool loop around it. Every change goes through the Tx, so the
// events say what the model saw; Tx.ModelCalls is what request.completed
// records.
func ExampleLoop_Run() {
	brief := func(next engine.Handler) engine.Handler {
		return func(ctx context.Context, tx *engine.Tx) error {
			if _, _, ok := tx.Turn().SystemPrompt(); !ok {
				if err := tx.Emit("brief", events.SystemPromptSet{BlockID: engine.NewID(), Text: "Be brief.", Trust: events.Trusted}); err != nil {
					return err
				}
			}
			return next(ctx, tx)
		}
	}
	echo := engine.EngineFunc(func(_ context.Context, in engine.Input, _ func(engine.Delta)) (engine.Output, error) {
		last := in.Turn.Blocks[len(in.Turn.Blocks)-1]
		return engine.Output{Blocks: []events.Block{{Kind: events.KindLLMText, Text: "you said " + last.Text}}}, nil
	})
	at := time.Date(2024, 5, 1, 9, 0, 0, 0, time.UTC)
	tx := engine.NewTx(projector.New("c1"), engine.NewID(), engine.WithClock(func() time.Time { return at }))
	if err := tx.Emit("worker", events.UserAppended{BlockID: engine.NewID(), Text: "hi"}); err != nil {
		log.Fatal(err)
	}
	loop := engine.Loop{Handler: engine.Chain(echo, brief)}
	if err := loop.Run(context.Background(), tx); err != nil {
		log.Fatal(err)
	}
	if err := tx.Emit("worker", events.RequestCompleted{Inferences: tx.ModelCalls()}); err != nil {
		log.Fatal(err)
	}
	if err := tx.Commit(context.Background()); err != nil { // in memory: no WithLog
		log.Fatal(err)
	}
	for _, e := range tx.Committed() {
		fmt.Println(e.Time.Format(time.TimeOnly), e.Actor, e.Type)
	}
	// Output:
	// 09:00:00 worker user.appended
	// 09:00:00 brief systemprompt.set
	// 09:00:00 engine inference.started
	// 09:00:00 engine llm_text.appended
	// 09:00:00 engine inference.finished
	// 09:00:00 worker request.completed
}
