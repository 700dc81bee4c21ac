package middlewares_test

import (
	"fmt"
	"log"

	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/middlewares"
	"github.com/turnlog/turnlog/projector"
)

// A middleware of your own moves and inserts blocks without separating a
// reasoning block from its follower, or a tool call from its result.
func ExampleMoveUnit() {
	turn := projector.New("c1")
	tx := engine.NewTx(turn, engine.NewID())
	for _, p := range []events.Payload{
		events.UserAppended{BlockID: "u1", Text: "hi"},
		events.ReasoningAppended{BlockID: "r1", Text: "thinking"},
		events.LLMTextAppended{BlockID: "l1", Text: "hello"},
		events.UserAppended{BlockID: "u2", Text: "again"},
	} {
		if err := tx.Emit("example", p); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Println(middlewares.Units(tx.Turn().Blocks))

	// The reasoning block moves to the end with its follower.
	if err := middlewares.MoveUnit(tx, "example", "r1", "", "answers last"); err != nil {
		log.Fatal(err)
	}
	// A note goes at a unit boundary; inside a unit is refused.
	fmt.Println(middlewares.InsertBlock(tx, "example", 3, events.Block{ID: "n1", Kind: events.KindOther, Text: "note"}, ""))
	if err := middlewares.InsertBlock(tx, "example", 2, events.Block{ID: "n1", Kind: events.KindOther, Text: "note"}, "context"); err != nil {
		log.Fatal(err)
	}
	for _, b := range tx.Turn().Blocks {
		fmt.Print(b.ID, " ")
	}
	fmt.Println()
	// Output:
	// [{0 1} {1 3} {3 4}]
	// insert block: index 3 is inside the unit of blocks 2 to 3 ([reasoning llm_text]), which must stay together; insert at 2 or 4
	// u1 u2 n1 r1 l1
}
