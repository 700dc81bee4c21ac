package worker_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"os"

	"github.com/turnlog/turnlog/embedded"
	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/profile"
	"github.com/turnlog/turnlog/worker"
)

// A program with a request loop of its own (an HTTP handler, a queue)
// serves each request as turnlog's workers do, with the profiles it
// registered names for, and gets the outcome the log recorded.
func ExampleWorker_Serve() {
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
	profiles, err := profile.Parse([]byte("profiles:\n  default:\n    system_prompt: Count words.\n    middlewares: [systemprompt, ordering]\n"))
	if err != nil {
		log.Fatal(err)
	}
	w, err := worker.New(worker.Config{Log: l, Conn: nc, Profiles: profiles, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		log.Fatal(err)
	}

	req := worker.Request{Conversation: "demo", RequestID: engine.NewID(), Text: "count words in to be or not"}
	served, err := w.Serve(ctx, req) // again with the same ID: the same outcome, nothing run twice
	if err != nil {
		log.Fatal(err)
	}
	turn, err := l.Load(ctx, "demo")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("completed=%v model calls=%d\n", served.Completed, served.ModelCalls)
	fmt.Println(turn.Blocks[len(turn.Blocks)-1].Text)
	// Output:
	// completed=true model calls=2
	// There are 4 words in "to be or not".
}
