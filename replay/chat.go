package replay

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/middlewares"
	"github.com/turnlog/turnlog/projector"
)

// Chat is a conversation as OpenAI chat messages, in the JSON shape that
// file-based chat tools store: `turnlog export` writes it and `turnlog
// import` reads it. The mapping to a Turn's blocks:
//
//   - the active system prompt (the first system block) is the first
//     message, role "system", and the only one with that role; other
//     system blocks keep their place as role "developer";
//   - user blocks are "user" messages;
//   - consecutive llm_text and tool_call blocks form one "assistant"
//     message (texts joined by a blank line in "content", calls in
//     "tool_calls"), as the Chat Completions API wants them; a reasoning
//     block starts a new assistant message and its text goes in
//     "reasoning_content" (encrypted reasoning, opaque and provider
//     specific, is not exported); "other" blocks (compaction summaries)
//     are assistant text prefixed "[summary] ", as a model receives them;
//   - tool_result blocks are "tool" messages with "tool_call_id";
//   - Turn.Data is "metadata"; "model" is the model of the last model
//     call; "created_at" and "updated_at" are the times of the first and
//     last events.
//
// Block IDs, trust and metadata have no place in this shape; `export
// --format turn` keeps everything.
type Chat struct {
	ID        string            `json:"id"`
	Model     string            `json:"model"`
	Messages  []ChatMessage     `json:"messages"`
	CreatedAt time.Time         `json:"created_at"`
	UpdatedAt time.Time         `json:"updated_at"`
	Metadata  map[string]string `json:"metadata"`
}

// ChatMessage is one OpenAI chat message.
type ChatMessage struct {
	Role string `json:"role"`
	// Content is null for an assistant message with only tool calls or
	// reasoning.
	Content          *string        `json:"content"`
	ReasoningContent string         `json:"reasoning_content,omitempty"`
	ToolCalls        []ChatToolCall `json:"tool_calls,omitempty"`
	ToolCallID       string         `json:"tool_call_id,omitempty"`
}

// ChatToolCall is a tool call of an assistant message.
type ChatToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function ChatFunction `json:"function"`
}

// ChatFunction names the function a tool call calls, with its JSON
// arguments as text.
type ChatFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Roles of chat messages.
const (
	RoleSystem    = "system"
	RoleDeveloper = "developer"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// MetaModel is the block metadata key under which an import records the
// file's model on the blocks of its assistant messages (the log has no
// model call for them), so that an export of the imported conversation
// names the same model.
const MetaModel = "model"

// summaryPrefix marks a compaction summary rendered as assistant text.
const summaryPrefix = "[summary] "

// ChatFromTurn renders a Turn as chat messages (see Chat for the mapping).
// It only reads t.
func ChatFromTurn(t *projector.Turn, model string, created, updated time.Time) *Chat {
	c := &Chat{ID: t.Conversation, Model: model, Messages: []ChatMessage{}, CreatedAt: created.UTC(), UpdatedAt: updated.UTC(),
		Metadata: map[string]string{}}
	for k, v := range t.Data {
		c.Metadata[k] = v
	}
	str := func(s string) *string { return &s }
	sp, spIndex, hasSystem := t.SystemPrompt()
	if hasSystem {
		c.Messages = append(c.Messages, ChatMessage{Role: RoleSystem, Content: str(sp.Text)})
	}
	var cur *ChatMessage // the assistant message being built
	var texts []string
	flush := func() {
		if cur == nil {
			return
		}
		if len(texts) > 0 {
			cur.Content = str(strings.Join(texts, "\n\n"))
		}
		c.Messages = append(c.Messages, *cur)
		cur, texts = nil, nil
	}
	assistant := func() {
		if cur == nil {
			cur = &ChatMessage{Role: RoleAssistant}
		}
	}
	for i := range t.Blocks {
		b := &t.Blocks[i]
		switch b.Kind {
		case events.KindSystem:
			if i == spIndex {
				continue
			}
			flush()
			c.Messages = append(c.Messages, ChatMessage{Role: RoleDeveloper, Content: str(b.Text)})
		case events.KindUser:
			flush()
			c.Messages = append(c.Messages, ChatMessage{Role: RoleUser, Content: str(b.Text)})
		case events.KindReasoning:
			if b.Text == "" {
				continue // encrypted only: nothing this shape can carry
			}
			flush()
			cur = &ChatMessage{Role: RoleAssistant, ReasoningContent: b.Text}
		case events.KindLLMText:
			assistant()
			texts = append(texts, b.Text)
		case events.KindOther:
			assistant()
			texts = append(texts, summaryPrefix+b.Text)
		case events.KindToolCall:
			assistant()
			cur.ToolCalls = append(cur.ToolCalls, ChatToolCall{ID: b.CallID, Type: "function",
				Function: ChatFunction{Name: b.ToolName, Arguments: b.Arguments}})
		case events.KindToolResult:
			flush()
			c.Messages = append(c.Messages, ChatMessage{Role: RoleTool, Content: str(b.Text), ToolCallID: b.CallID})
		}
	}
	flush()
	return c
}

// Exported is a conversation read for export: its Turn, re-projected from
// the log, and its chat rendering.
type Exported struct {
	Turn *projector.Turn
	Chat *Chat
}

// Export reads a conversation once, from its events (not from a
// snapshot), and renders it (see Chat). The model is that of the last
// model call, or for an imported conversation the MetaModel of its last
// assistant block.
func Export(ctx context.Context, src Source, conversation string, opts ...Option) (*Exported, error) {
	o := collect(opts)
	var first, last time.Time
	model, called := "", false
	w, _, err := read(ctx, src, conversation, o, func(w *walker, r *eventlog.Record) error {
		if first.IsZero() {
			first = r.Time
		}
		last = r.Time
		if p, ok := r.Payload.(events.InferenceStarted); ok {
			model, called = p.Model, true
		}
		return w.apply(r)
	})
	if err != nil {
		return nil, fmt.Errorf("export %s: %w", conversation, err)
	}
	if !called {
		for i := len(w.turn.Blocks) - 1; i >= 0; i-- {
			if m := w.turn.Blocks[i].Meta[MetaModel]; m != "" {
				model = m
				break
			}
		}
	}
	return &Exported{Turn: w.turn, Chat: ChatFromTurn(w.turn, model, first, last)}, nil
}

// ActorImport is the actor of the events an import records.
const ActorImport = "import"

// rawChat is what ParseChat accepts: Chat, with content that may also be
// an array of text parts and metadata values of any JSON type.
type rawChat struct {
	ID        string                     `json:"id"`
	Model     string                     `json:"model"`
	Messages  []rawMessage               `json:"messages"`
	CreatedAt *time.Time                 `json:"created_at"`
	UpdatedAt *time.Time                 `json:"updated_at"`
	Metadata  map[string]json.RawMessage `json:"metadata"`
}

type rawMessage struct {
	Role             string          `json:"role"`
	Content          json.RawMessage `json:"content"`
	ReasoningContent *string         `json:"reasoning_content"`
	ToolCalls        []ChatToolCall  `json:"tool_calls"`
	ToolCallID       string          `json:"tool_call_id"`
}

// ParseChat reads a chat file (see Chat) and checks it: roles, contents
// (a string, null where allowed, or an array of {"type": "text"} parts),
// tool calls (function calls with an ID and a name) and tool results that
// answer an earlier call. Unknown fields are errors, so that nothing in a
// file is silently left out of the log. The error says where and what.
func ParseChat(data []byte) (*Chat, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var raw rawChat
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("not a chat file: %v; expected {\"id\", \"model\", \"messages\": [...], \"created_at\", \"updated_at\", \"metadata\"}", err)
	}
	if dec.More() {
		return nil, errors.New("more than one JSON value; a chat file holds one conversation")
	}
	if raw.Messages == nil {
		return nil, errors.New(`no "messages" array`)
	}
	c := &Chat{ID: raw.ID, Model: raw.Model, Messages: make([]ChatMessage, 0, len(raw.Messages)), Metadata: map[string]string{}}
	if raw.CreatedAt != nil {
		c.CreatedAt = raw.CreatedAt.UTC()
	}
	if raw.UpdatedAt != nil {
		c.UpdatedAt = raw.UpdatedAt.UTC()
	}
	for k, v := range raw.Metadata {
		if k == "" {
			return nil, errors.New("metadata has an empty key")
		}
		if string(bytes.TrimSpace(v)) == "null" {
			continue
		}
		var s string
		if err := json.Unmarshal(v, &s); err == nil {
			c.Metadata[k] = s
			continue
		}
		// Not a string: keep its JSON text, compacted.
		var buf bytes.Buffer
		if err := json.Compact(&buf, v); err != nil {
			return nil, fmt.Errorf("metadata %q: %v", k, err)
		}
		c.Metadata[k] = buf.String()
	}
	calls := map[string]bool{}
	for i, m := range raw.Messages {
		at := fmt.Sprintf("messages[%d]", i)
		content, isNull, err := parseContent(m.Content)
		if err != nil {
			return nil, fmt.Errorf("%s (%s): content: %v", at, m.Role, err)
		}
		out := ChatMessage{Role: m.Role}
		if !isNull {
			out.Content = &content
		}
		if m.Role != RoleAssistant && (m.ReasoningContent != nil || m.ToolCalls != nil) {
			return nil, fmt.Errorf("%s (%s): only assistant messages have reasoning_content or tool_calls", at, m.Role)
		}
		if m.Role != RoleTool && m.ToolCallID != "" {
			return nil, fmt.Errorf("%s (%s): only tool messages have a tool_call_id", at, m.Role)
		}
		switch m.Role {
		case RoleSystem, RoleDeveloper, RoleUser:
			if isNull {
				return nil, fmt.Errorf("%s (%s): content is missing or null; give the message's text", at, m.Role)
			}
		case RoleAssistant:
			if m.ReasoningContent != nil {
				out.ReasoningContent = *m.ReasoningContent
			}
			for j, tc := range m.ToolCalls {
				where := fmt.Sprintf("%s.tool_calls[%d]", at, j)
				switch {
				case tc.ID == "":
					return nil, fmt.Errorf("%s: id is empty; every tool call needs the ID its tool message answers", where)
				case tc.Type != "" && tc.Type != "function":
					return nil, fmt.Errorf("%s: type %q; only function calls are supported", where, tc.Type)
				case tc.Function.Name == "":
					return nil, fmt.Errorf("%s: function.name is empty", where)
				case calls[tc.ID]:
					return nil, fmt.Errorf("%s: id %q is used by an earlier tool call", where, tc.ID)
				}
				calls[tc.ID] = true
				tc.Type = "function"
				out.ToolCalls = append(out.ToolCalls, tc)
			}
		case RoleTool:
			if m.ToolCallID == "" {
				return nil, fmt.Errorf("%s (tool): tool_call_id is empty; it must name the tool call it answers", at)
			}
			if !calls[m.ToolCallID] {
				return nil, fmt.Errorf("%s (tool): tool_call_id %q answers no earlier tool call", at, m.ToolCallID)
			}
			if isNull {
				return nil, fmt.Errorf("%s (tool): content is missing or null; give the tool's result", at)
			}
			out.ToolCallID = m.ToolCallID
		case "":
			return nil, fmt.Errorf("%s: role is missing; use system, developer, user, assistant or tool", at)
		default:
			return nil, fmt.Errorf("%s: role %q is not supported; use system, developer, user, assistant or tool", at, m.Role)
		}
		c.Messages = append(c.Messages, out)
	}
	if c.ID != "" {
		if err := events.ValidateConversationID(c.ID); err != nil {
			return nil, fmt.Errorf("id: %w; change the file's id (or remove it to have one derived from the content)", err)
		}
	}
	return c, nil
}

// parseContent reads a message's content: a string, null (or absent), or
// an array of text parts, which are joined.
func parseContent(raw json.RawMessage) (text string, isNull bool, err error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", true, nil
	}
	if err := json.Unmarshal(raw, &text); err == nil {
		return text, false, nil
	}
	var parts []struct {
		Type string  `json:"type"`
		Text *string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", false, errors.New("must be a string, null or an array of text parts")
	}
	var b strings.Builder
	for i, p := range parts {
		if p.Type != "text" || p.Text == nil {
			return "", false, fmt.Errorf("part %d has type %q; only text parts ({\"type\": \"text\", \"text\": ...}) are supported", i, p.Type)
		}
		b.WriteString(*p.Text)
	}
	return b.String(), false, nil
}

// Blocks returns the Turn blocks an import makes of the chat's messages,
// with IDs derived from the message positions ("m3", "m3-reasoning",
// "m3-call-0"), so the same file always gives the same blocks, and the
// file's model as MetaModel on the blocks of assistant messages.
func (c *Chat) Blocks() []events.Block { return c.blocks(true) }

// blocks is Blocks, with the model recorded on assistant blocks (MetaModel)
// when withModel is set.
func (c *Chat) blocks(withModel bool) []events.Block {
	var out []events.Block
	var modelMeta map[string]string
	if withModel && c.Model != "" {
		modelMeta = map[string]string{MetaModel: c.Model}
	}
	for i, m := range c.Messages {
		id := "m" + strconv.Itoa(i)
		text := ""
		if m.Content != nil {
			text = *m.Content
		}
		switch m.Role {
		case RoleSystem, RoleDeveloper:
			out = append(out, events.Block{ID: id, Kind: events.KindSystem, Text: text})
		case RoleUser:
			out = append(out, events.Block{ID: id, Kind: events.KindUser, Text: text})
		case RoleTool:
			out = append(out, events.Block{ID: id, Kind: events.KindToolResult, CallID: m.ToolCallID, Text: text})
		case RoleAssistant:
			if m.ReasoningContent != "" {
				out = append(out, events.Block{ID: id + "-reasoning", Kind: events.KindReasoning, Text: m.ReasoningContent, Meta: cloneMeta(modelMeta)})
			}
			if m.Content != nil || (len(m.ToolCalls) == 0 && m.ReasoningContent == "") {
				out = append(out, events.Block{ID: id, Kind: events.KindLLMText, Text: text, Meta: cloneMeta(modelMeta)})
			}
			for j, tc := range m.ToolCalls {
				out = append(out, events.Block{ID: id + "-call-" + strconv.Itoa(j), Kind: events.KindToolCall, CallID: tc.ID,
					ToolName: tc.Function.Name, Arguments: tc.Function.Arguments, Meta: cloneMeta(modelMeta)})
			}
		}
	}
	return out
}

// Turn returns the Turn the chat's messages make, for diff-turns on a chat
// file: Blocks without the model metadata, and the metadata as data.
func (c *Chat) Turn() *projector.Turn {
	t := projector.New(c.ID)
	t.Blocks = c.blocks(false)
	if len(c.Metadata) > 0 {
		t.Data = cloneMeta(c.Metadata)
	}
	return t
}

func cloneMeta(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// digest is a hash of the chat's content, whitespace and key order aside:
// the basis of the import's request ID and of a derived conversation ID.
func (c *Chat) digest() string {
	data, _ := json.Marshal(c) // maps marshal in key order
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// ImportPlan is one chat file turned into the events that record it, ready
// to append.
type ImportPlan struct {
	// Path is where the chat came from, for messages.
	Path string
	// Conversation is the chat's id, or "chat-" and 24 hex digits of its
	// content hash when it has none.
	Conversation string
	// Cause is the request ID of the import: "import-" and 32 hex digits
	// of the content hash, so importing the same content again is
	// recognised as done.
	Cause string
	// Events are conversation.started (with the metadata as data) and one
	// event per block, all of step 0 of Cause: one message, stored
	// atomically. They carry the file's created_at (the last one its
	// updated_at), so an export shows the conversation's own times.
	Events []events.Event
}

// PlanImport turns a parsed chat into events and checks that they fold
// into a valid Turn. now is the time used when the file has none.
func PlanImport(path string, c *Chat, now time.Time) (*ImportPlan, error) {
	digest := c.digest()
	conv := c.ID
	if conv == "" {
		conv = "chat-" + digest[:24]
	}
	p := &ImportPlan{Path: path, Conversation: conv, Cause: "import-" + digest[:32]}
	created, updated := c.CreatedAt, c.UpdatedAt
	if created.IsZero() {
		created = now.UTC()
	}
	if updated.IsZero() {
		updated = created
	}
	add := func(pl events.Payload) {
		e := events.New(conv, p.Cause, 0, ActorImport, pl)
		e.Time = created
		p.Events = append(p.Events, e)
	}
	add(events.ConversationStarted{Data: cloneMeta(c.Metadata)})
	n := 0
	for _, b := range c.Blocks() {
		switch b.Kind {
		case events.KindSystem:
			// The file's own prompt: recorded with its source, so the
			// profile's middlewares know they did not write it and keep
			// it as the conversation's prompt (see middlewares.PromptPolicy).
			add(events.SystemPromptSet{BlockID: b.ID, Text: b.Text, Index: n,
				Meta: map[string]string{events.MetaSystemPromptSource: middlewares.SourceImport}})
		case events.KindUser:
			add(events.UserAppended{BlockID: b.ID, Text: b.Text})
		case events.KindReasoning:
			add(events.ReasoningAppended{BlockID: b.ID, Text: b.Text, Meta: b.Meta})
		case events.KindLLMText:
			add(events.LLMTextAppended{BlockID: b.ID, Text: b.Text, Meta: b.Meta})
		case events.KindToolCall:
			add(events.ToolCalled{BlockID: b.ID, CallID: b.CallID, Name: b.ToolName, Arguments: b.Arguments, Meta: b.Meta})
		case events.KindToolResult:
			add(events.ToolResult{BlockID: b.ID, CallID: b.CallID, Text: b.Text})
		}
		n++
	}
	if len(p.Events) > 1 {
		p.Events[len(p.Events)-1].Time = updated
	}
	t := projector.New(conv)
	if err := projector.ApplyAll(t, p.Events); err != nil {
		return nil, fmt.Errorf("%s: the messages do not make a valid conversation: %w", path, err)
	}
	if _, err := events.Encode(p.Events...); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

// ImportStore is what Import needs of a log; *eventlog.Log implements it.
type ImportStore interface {
	Source
	Append(ctx context.Context, conversation string, expectedSeq uint64, evs ...events.Event) (uint64, error)
}

// Import outcomes, the values of ImportResult.Status.
const (
	StatusImported  = "imported"
	StatusUnchanged = "unchanged"
)

// ImportResult says what Import did with one plan.
type ImportResult struct {
	Path         string `json:"path"`
	Conversation string `json:"conversation"`
	Events       int    `json:"events"`
	// Status is "imported", or "unchanged" when the same content was
	// imported before.
	Status string `json:"status"`
}

// ErrExists is returned by Import and Fork when the target conversation
// already has events of another origin.
var ErrExists = errors.New("conversation already exists")

// firstEvent reads a conversation's first event, if it has one.
func firstEvent(ctx context.Context, src Source, conversation string) (eventlog.Record, bool, error) {
	for r, err := range src.Events(ctx, conversation) {
		return r, err == nil, err
	}
	return eventlog.Record{}, false, nil
}

// Import appends the plans' events, each plan as one message expecting an
// empty conversation (so it lands whole or not at all). All plans are
// checked first: two plans for one conversation, or a conversation that
// already holds other events, fail the whole import before anything is
// written. A conversation whose first event is this content's import is
// left as it is (StatusUnchanged), even if it was continued since.
func Import(ctx context.Context, store ImportStore, plans []*ImportPlan) ([]ImportResult, error) {
	seen := map[string]string{}
	var errs []error
	results := make([]ImportResult, len(plans))
	for i, p := range plans {
		results[i] = ImportResult{Path: p.Path, Conversation: p.Conversation, Events: len(p.Events), Status: StatusImported}
		if other, dup := seen[p.Conversation]; dup {
			errs = append(errs, fmt.Errorf("%s: conversation %s is also imported from %s; give the files different ids", p.Path, p.Conversation, other))
			continue
		}
		seen[p.Conversation] = p.Path
		first, found, err := firstEvent(ctx, store, p.Conversation)
		if err != nil {
			return nil, fmt.Errorf("import %s: %w", p.Path, err)
		}
		switch {
		case !found:
		case first.Cause == p.Cause:
			results[i].Status = StatusUnchanged
		default:
			errs = append(errs, fmt.Errorf("%s: %w: %s was started by request %s, not by an import of this content; erase it first or change the file's id",
				p.Path, ErrExists, p.Conversation, first.Cause))
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("import: nothing imported: %w", errors.Join(errs...))
	}
	for i, p := range plans {
		if results[i].Status == StatusUnchanged {
			continue
		}
		if _, err := store.Append(ctx, p.Conversation, 0, p.Events...); err != nil {
			switch {
			case errors.Is(err, eventlog.ErrConflict):
				err = fmt.Errorf("%w: another writer created %s meanwhile", ErrExists, p.Conversation)
			case errors.Is(err, jetstream.ErrMsgNotFound):
				// JetStream still remembers the step's message ID from an
				// import that was erased since, and drops the new message
				// as a duplicate of one that is gone.
				return results[:i], fmt.Errorf("import %s: this content was imported into %s and erased less than the stream's duplicate window ago (2 minutes by default); nothing was stored: run the import again after the window", p.Path, p.Conversation)
			}
			return results[:i], fmt.Errorf("import %s: %w (the files before it are imported; run the import again to finish: they are left unchanged)", p.Path, err)
		}
	}
	return results, nil
}
