package eventlog_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"

	"github.com/oklog/ulid/v2"
	"github.com/turnlog/turnlog/embedded"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
)

// Record a conversation from a Go program: open the log on an embedded
// NATS server, append one step (two events that land together or not at
// all), and load the Turn they make.
func Example() {
	dir, err := os.MkdirTemp("", "turnlog-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	srv, err := embedded.Start(embedded.Config{DataDir: dir}) // in-process only: no port
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
	l, err := eventlog.Open(ctx, nc) // creates the streams and buckets
	if err != nil {
		log.Fatal(err)
	}

	// One step of one request: its cause is the request's ID, and its
	// position (0) makes a retried append idempotent.
	conv, cause := "support-42", ulid.Make().String()
	seq, err := l.Append(ctx, conv, 0, // 0: the conversation must be new
		events.New(conv, cause, 0, "my-app", events.UserAppended{BlockID: ulid.Make().String(), Text: "Where is my order?"}),
		events.New(conv, cause, 0, "my-app", events.DataSet{Values: map[string]string{"timezone": "Europe/Paris"}}),
	)
	if err != nil {
		log.Fatal(err)
	}

	turn, err := l.Load(ctx, conv)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(turn.Events, "events, the Turn is at the step's sequence:", turn.Seq == seq)
	fmt.Println(turn.Blocks[0].Kind, turn.Blocks[0].Text, turn.Data["timezone"])

	// A writer that has not seen the latest step is refused, and nothing
	// is stored: reload and decide again.
	other := ulid.Make().String()
	_, err = l.Append(ctx, conv, 0, events.New(conv, other, 0, "my-app", events.UserAppended{BlockID: ulid.Make().String(), Text: "hello?"}))
	fmt.Println("stale writer refused:", errors.Is(err, eventlog.ErrConflict))

	// Output:
	// 2 events, the Turn is at the step's sequence: true
	// user Where is my order? Europe/Paris
	// stale writer refused: true
}
