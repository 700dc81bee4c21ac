package events_test

import (
	"strings"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/events"
)

func TestValidateConversationID(t *testing.T) {
	tests := []struct {
		name     string
		id       string
		wantErr  bool
		wantText string // part of the message, when it fails
	}{
		{name: "one letter", id: "a"},
		{name: "all allowed characters", id: "AZaz09-_"},
		{name: "ULID", id: ulid.Make().String()},
		{name: "128 bytes", id: strings.Repeat("x", events.MaxConversationIDLen)},
		{name: "empty", id: "", wantErr: true, wantText: "empty"},
		{name: "129 bytes", id: strings.Repeat("x", events.MaxConversationIDLen+1), wantErr: true, wantText: "129 bytes"},
		{name: "dot", id: "a.b", wantErr: true, wantText: "'.', which NATS subjects forbid"},
		{name: "star", id: "*", wantErr: true, wantText: "'*', which NATS subjects forbid"},
		{name: "greater than", id: ">", wantErr: true, wantText: "'>', which NATS subjects forbid"},
		{name: "wildcard suffix", id: "conv.>", wantErr: true, wantText: "at byte 4"},
		{name: "space", id: "a b", wantErr: true, wantText: "use letters, digits, '-' or '_'"},
		{name: "slash", id: "a/b", wantErr: true, wantText: "'/'"},
		{name: "tab", id: "a\tb", wantErr: true, wantText: "control character 0x09"},
		{name: "NUL", id: "\x00", wantErr: true, wantText: "control character 0x00"},
		{name: "newline at the end", id: "abc\n", wantErr: true, wantText: "control character 0x0a at byte 3"},
		{name: "DEL", id: "a\x7f", wantErr: true, wantText: "control character 0x7f"},
		// The character, not its first byte as if it were one ('Ã').
		{name: "non-ASCII letter", id: "café", wantErr: true, wantText: "contains 'é' (U+00E9) at byte 3"},
		{name: "right-to-left override", id: "a\u202eb", wantErr: true, wantText: `contains '\u202e' (U+202E) at byte 1`},
		{name: "invalid UTF-8", id: "a\xffb", wantErr: true, wantText: "contains byte 0xff, which is not UTF-8, at byte 1"},
		{name: "long and bad", id: strings.Repeat("y", 100) + ".", wantErr: true, wantText: "..."},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := events.ValidateConversationID(tc.id)
			if !tc.wantErr {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.ErrorIs(t, err, events.ErrInvalidConversationID)
			assert.Contains(t, err.Error(), tc.wantText)
			assert.NotContains(t, err.Error(), "\n", "one-line message")
		})
	}
}

func TestEventValidateNamesTheField(t *testing.T) {
	valid := func(p events.Payload) events.Event { return newEvent(p) }
	user := events.UserAppended{BlockID: "u1", Text: "hi"}
	with := func(change func(*events.Event)) events.Event {
		e := valid(user)
		change(&e)
		return e
	}
	tests := []struct {
		name      string
		event     events.Event
		wantField string
		wantIs    error // besides ErrInvalid, which every case wraps
		wantText  string
	}{
		{name: "zero ID", event: with(func(e *events.Event) { e.ID = ulid.ULID{} }), wantField: "id"},
		{name: "empty conversation", event: with(func(e *events.Event) { e.Conversation = "" }), wantField: "conversation", wantIs: events.ErrInvalidConversationID},
		{name: "conversation a.b", event: with(func(e *events.Event) { e.Conversation = "a.b" }), wantField: "conversation", wantIs: events.ErrInvalidConversationID},
		{name: "conversation *", event: with(func(e *events.Event) { e.Conversation = "*" }), wantField: "conversation", wantIs: events.ErrInvalidConversationID},
		{name: "conversation >", event: with(func(e *events.Event) { e.Conversation = ">" }), wantField: "conversation", wantIs: events.ErrInvalidConversationID},
		{name: "conversation with a control character", event: with(func(e *events.Event) { e.Conversation = "a\x01" }), wantField: "conversation", wantIs: events.ErrInvalidConversationID},
		{name: "conversation of 129 bytes", event: with(func(e *events.Event) { e.Conversation = strings.Repeat("c", 129) }), wantField: "conversation", wantIs: events.ErrInvalidConversationID},
		{name: "empty type", event: with(func(e *events.Event) { e.Type = "" }), wantField: "type"},
		{name: "version 0", event: with(func(e *events.Event) { e.Version = 0 }), wantField: "version"},
		{name: "zero time", event: with(func(e *events.Event) { e.Time = time.Time{} }), wantField: "time"},
		{name: "empty cause", event: with(func(e *events.Event) { e.Cause = "" }), wantField: "cause", wantText: "names the request"},
		{name: "negative step", event: with(func(e *events.Event) { e.Step = -1 }), wantField: "step"},
		{name: "empty actor", event: with(func(e *events.Event) { e.Actor = "" }), wantField: "actor"},
		{name: "nil payload", event: with(func(e *events.Event) { e.Payload = nil }), wantField: "payload"},
		{name: "payload of the wrong type", event: with(func(e *events.Event) { e.Payload = events.LLMTextAppended{BlockID: "l1"} }),
			wantField: "payload", wantText: "llm_text.appended payload in a user.appended event"},

		{name: "user block_id", event: valid(events.UserAppended{Text: "hi"}), wantField: "payload.block_id"},
		{name: "user trust", event: valid(events.UserAppended{BlockID: "u", Trust: "admin"}), wantField: "payload.trust"},
		{name: "system prompt block_id", event: valid(events.SystemPromptSet{Text: "x"}), wantField: "payload.block_id"},
		{name: "system prompt index", event: valid(events.SystemPromptSet{BlockID: "s", Index: -1}), wantField: "payload.index"},
		{name: "system prompt trust", event: valid(events.SystemPromptSet{BlockID: "s", Trust: "root"}), wantField: "payload.trust"},
		{name: "replaced block_id", event: valid(events.SystemPromptReplaced{Text: "x"}), wantField: "payload.block_id"},
		{name: "reasoning block_id", event: valid(events.ReasoningAppended{Text: "x"}), wantField: "payload.block_id"},
		{name: "llm text block_id", event: valid(events.LLMTextAppended{Text: "x"}), wantField: "payload.block_id"},
		{name: "tool call block_id", event: valid(events.ToolCalled{CallID: "c", Name: "n"}), wantField: "payload.block_id"},
		{name: "tool call call_id", event: valid(events.ToolCalled{BlockID: "b", Name: "n"}), wantField: "payload.call_id"},
		{name: "tool call name", event: valid(events.ToolCalled{BlockID: "b", CallID: "c"}), wantField: "payload.name"},
		{name: "tool result block_id", event: valid(events.ToolResult{CallID: "c"}), wantField: "payload.block_id"},
		{name: "tool result call_id", event: valid(events.ToolResult{BlockID: "b"}), wantField: "payload.call_id"},
		{name: "reorder with an empty ID", event: valid(events.BlocksReordered{Order: []string{"a", ""}}), wantField: "payload.order[1]"},
		{name: "remove nothing", event: valid(events.BlocksRemoved{Reason: "x"}), wantField: "payload.block_ids"},
		{name: "remove an empty ID", event: valid(events.BlocksRemoved{BlockIDs: []string{""}}), wantField: "payload.block_ids[0]"},
		{name: "annotate without meta", event: valid(events.BlockAnnotated{BlockID: "b"}), wantField: "payload.meta"},
		{name: "annotate block_id", event: valid(events.BlockAnnotated{Meta: map[string]string{"k": "v"}}), wantField: "payload.block_id"},
		{name: "insert at a negative index", event: valid(events.BlockInserted{Index: -1, Block: events.Block{ID: "x", Kind: events.KindUser}}), wantField: "payload.index"},
		{name: "insert a block without ID", event: valid(events.BlockInserted{Block: events.Block{Kind: events.KindUser}}), wantField: "payload.block.id"},
		{name: "insert a system block", event: valid(events.BlockInserted{Block: events.Block{ID: "x", Kind: events.KindSystem}}), wantField: "payload.block.kind", wantText: "systemprompt.set"},
		{name: "insert a tool result", event: valid(events.BlockInserted{Block: events.Block{ID: "x", Kind: events.KindToolResult, CallID: "c"}}),
			wantField: "payload.block.kind", wantText: "only the model or a tool writes"},
		{name: "split block_id", event: valid(events.BlockSplit{Into: []events.Block{{ID: "x", Kind: events.KindUser}}}), wantField: "payload.block_id"},
		{name: "split into nothing", event: valid(events.BlockSplit{BlockID: "b"}), wantField: "payload.into", wantText: "blocks.removed"},
		{name: "split into a block without ID", event: valid(events.BlockSplit{BlockID: "b", Into: []events.Block{{ID: "x", Kind: events.KindUser}, {Kind: events.KindUser}}}),
			wantField: "payload.into[1].id"},
		{name: "split into an unknown kind", event: valid(events.BlockSplit{BlockID: "b", Into: []events.Block{{ID: "x", Kind: "assistant"}}}), wantField: "payload.into[0].kind"},
		{name: "split into a bad trust", event: valid(events.BlockSplit{BlockID: "b", Into: []events.Block{{ID: "x", Kind: events.KindUser, Trust: "yes"}}}), wantField: "payload.into[0].trust"},
		{name: "compact nothing", event: valid(events.TurnCompacted{}), wantField: "payload.removed"},
		{name: "compact an empty ID", event: valid(events.TurnCompacted{Removed: []string{"a", "b", ""}}), wantField: "payload.removed[2]"},
		{name: "compact with a bad summary", event: valid(events.TurnCompacted{Removed: []string{"a"}, Summary: &events.Block{Kind: events.KindOther}}), wantField: "payload.summary.id"},
		{name: "data set nothing", event: valid(events.DataSet{}), wantField: "payload.values"},
		{name: "data set an empty key", event: valid(events.DataSet{Values: map[string]string{"": "x"}}), wantField: "payload.values"},
		{name: "data unset an empty key", event: valid(events.DataSet{Unset: []string{"a", ""}}), wantField: "payload.unset[1]"},
		{name: "inference started ID", event: valid(events.InferenceStarted{InputHash: "h"}), wantField: "payload.inference_id"},
		{name: "inference started hash", event: valid(events.InferenceStarted{InferenceID: "i"}), wantField: "payload.input_hash"},
		{name: "inference finished ID", event: valid(events.InferenceFinished{}), wantField: "payload.inference_id"},
		{name: "inference failed ID", event: valid(events.InferenceFailed{Error: "x"}), wantField: "payload.inference_id"},
		{name: "request failed reason", event: valid(events.RequestFailed{}), wantField: "payload.reason"},
		{name: "message removed at 0", event: valid(events.MessageRemoved{SHA256: strings.Repeat("0", 64), Reason: "x"}), wantField: "payload.seq"},
		{name: "message removed digest", event: valid(events.MessageRemoved{Seq: 3, SHA256: "abc", Reason: "x"}), wantField: "payload.sha256"},
		{name: "message removed reason", event: valid(events.MessageRemoved{Seq: 3, SHA256: strings.Repeat("0", 64)}), wantField: "payload.reason"},
		{name: "fork from a bad conversation", event: valid(events.ConversationStarted{ForkedFrom: "a.b", ForkedAt: 3}),
			wantField: "payload.forked_from", wantIs: events.ErrInvalidConversationID},
		{name: "fork at 0", event: valid(events.ConversationStarted{ForkedFrom: "ab", ForkedAt: 0}), wantField: "payload.forked_at"},
		{name: "fork with a tool result without call ID", event: valid(events.ConversationStarted{Blocks: []events.Block{
			{ID: "a", Kind: events.KindUser}, {ID: "b", Kind: events.KindToolResult}}}), wantField: "payload.blocks[1].call_id"},
		{name: "fork with a tool call without tool name", event: valid(events.ConversationStarted{Blocks: []events.Block{
			{ID: "a", Kind: events.KindToolCall, CallID: "c"}}}), wantField: "payload.blocks[0].tool"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.event.Validate()
			require.Error(t, err)
			assert.ErrorIs(t, err, events.ErrInvalid)
			if tc.wantIs != nil {
				assert.ErrorIs(t, err, tc.wantIs)
			}
			var fe *events.FieldError
			require.ErrorAs(t, err, &fe)
			assert.Equal(t, tc.wantField, fe.Field)
			assert.Contains(t, err.Error(), "field "+tc.wantField+" ")
			assert.Contains(t, err.Error(), tc.wantText)

			// Encode is gated by the same check and says which event failed.
			_, encErr := events.Encode(tc.event)
			require.Error(t, encErr)
			assert.ErrorIs(t, encErr, events.ErrInvalid)
			assert.Contains(t, encErr.Error(), tc.wantField)
			if tc.wantIs != nil {
				assert.ErrorIs(t, encErr, tc.wantIs)
			}
		})
	}
}

func TestValidPayloadsWithoutOptionalFields(t *testing.T) {
	// The smallest valid form of each payload: optional fields stay
	// optional.
	tests := []struct {
		name string
		p    events.Payload
	}{
		{name: "empty start", p: events.ConversationStarted{}},
		{name: "user with empty text", p: events.UserAppended{BlockID: "u"}},
		{name: "system prompt at the front", p: events.SystemPromptSet{BlockID: "s"}},
		{name: "replace to empty text", p: events.SystemPromptReplaced{BlockID: "s"}},
		{name: "encrypted-only reasoning", p: events.ReasoningAppended{BlockID: "r", Encrypted: "x"}},
		{name: "tool call without arguments", p: events.ToolCalled{BlockID: "t", CallID: "c", Name: "n"}},
		{name: "reorder of an empty turn", p: events.BlocksReordered{}},
		{name: "unset only", p: events.DataSet{Unset: []string{"tz"}}},
		{name: "completed", p: events.RequestCompleted{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEvent(tc.p)
			require.NoError(t, e.Validate())
			data, err := events.Encode(e)
			require.NoError(t, err)
			got, err := events.Decode(data)
			require.NoError(t, err)
			assert.Equal(t, []events.Event{e}, got)
		})
	}
}

func TestBlockClone(t *testing.T) {
	b := events.Block{ID: "a", Kind: events.KindUser, Meta: map[string]string{"k": "v"}}
	c := b.Clone()
	require.Equal(t, b, c)
	c.Meta["k"] = "changed"
	c.Meta["new"] = "x"
	assert.Equal(t, map[string]string{"k": "v"}, b.Meta, "the clone shares its Meta with the original")
	assert.Nil(t, events.Block{ID: "a"}.Clone().Meta)
}

func TestEventString(t *testing.T) {
	e := newEvent(events.UserAppended{BlockID: "u1"})
	s := e.String()
	for _, part := range []string{string(e.Type), e.ID.String(), "req-1", "step 2", "test"} {
		assert.Contains(t, s, part)
	}
}
