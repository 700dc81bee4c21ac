package chatfile_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/turnlog/turnlog/chatfile"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
)

// exportOf is what `turnlog export` writes for the conversation a plan
// records, worked out without a log (replay.Export reads it from one): the
// Turn the events fold into, the model of the last assistant block, the
// times of the first and last events.
func exportOf(t *testing.T, p *chatfile.ImportPlan) []byte {
	t.Helper()
	turn := projector.New(p.Conversation)
	if err := projector.ApplyAll(turn, p.Events); err != nil {
		t.Fatalf("the plan's events do not fold: %v", err)
	}
	model := ""
	for i := len(turn.Blocks) - 1; i >= 0; i-- {
		if m := turn.Blocks[i].Meta[chatfile.MetaModel]; m != "" {
			model = m
			break
		}
	}
	c := chatfile.FromTurn(turn, model, p.Events[0].Time, p.Events[len(p.Events)-1].Time)
	data, err := json.Marshal(c)
	if err != nil {
		t.Fatalf("the export cannot be written: %v", err)
	}
	return data
}

// FuzzImport feeds the import reader arbitrary files. Parse must not panic
// and must reject with one line saying what is wrong; a file it accepts
// either makes a plan or is refused by PlanImport with an error. A plan
// records a valid conversation ID, in events that decode to themselves and
// fold; and its export is a fixed point: importing that export and
// exporting again gives the same bytes (the first round may normalise: the
// system prompt moves first, consecutive assistant texts merge).
func FuzzImport(f *testing.F) {
	for _, seed := range []string{
		`{"id":"c1","model":"m","messages":[{"role":"system","content":"be brief"},{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},` +
			`{"role":"assistant","content":null,"reasoning_content":"think","tool_calls":[{"id":"x","function":{"name":"f","arguments":"{}"}}]},` +
			`{"role":"tool","tool_call_id":"x","content":"r"},{"role":"assistant","content":"done"}],` +
			`"created_at":"2026-01-02T03:04:05Z","updated_at":"2026-01-02T03:04:06Z","metadata":{"tz":"UTC","n":1,"z":null}}`,
		`{"messages":[]}`,
		`{"messages":[{"role":"user","content":"hi"},{"role":"system","content":"late prompt"},{"role":"developer","content":"dev"}]}`,
		`{"messages":[{"role":"assistant","content":"a"},{"role":"assistant","content":"b"},{"role":"assistant"}]}`,
		`{"id":"a.b","messages":[]}`,
		`{"messages":[{"role":"tool","tool_call_id":"nope","content":"r"}]}`,
		`{"messages":[],"title":"x"}`,
		`{"messages":[]} {}`,
		`{"messages":[{"role":"user","content":"\ud800 [summary] x"}]}`,
		`{"messages":[{"role":"assistant","content":"[summary] earlier"}]}`,
		`{"id":"","messages":null}`,
		`[]`,
		``,
	} {
		f.Add([]byte(seed))
	}
	now := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := chatfile.Parse(data)
		if err != nil {
			if c != nil {
				t.Fatal("Parse returned a chat and an error")
			}
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("the error is not one line: %q", err)
			}
			return
		}
		p, err := chatfile.PlanImport("f.json", c, now)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("the error is not one line: %q", err)
			}
			return
		}
		if err := events.ValidateConversationID(p.Conversation); err != nil {
			t.Fatalf("the plan records conversation %q: %v", p.Conversation, err)
		}
		enc, err := events.Encode(p.Events...)
		if err != nil {
			t.Fatalf("the plan's events cannot be encoded: %v", err)
		}
		back, err := events.Decode(enc)
		if err != nil {
			t.Fatalf("the plan's events cannot be decoded: %v", err)
		}
		if !reflect.DeepEqual(back, p.Events) {
			t.Fatalf("the plan's events change through the codec:\n%#v\n%#v", p.Events, back)
		}

		first := exportOf(t, p)
		c2, err := chatfile.Parse(first)
		if err != nil {
			t.Fatalf("an export cannot be imported: %v\n%s", err, first)
		}
		p2, err := chatfile.PlanImport("export.json", c2, now)
		if err != nil {
			t.Fatalf("an export cannot be planned: %v\n%s", err, first)
		}
		if second := exportOf(t, p2); !bytes.Equal(first, second) {
			t.Fatalf("export, import, export is not identical:\n%s\n%s", first, second)
		}
	})
}
