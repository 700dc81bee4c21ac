package templates_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/middlewares"
	"github.com/turnlog/turnlog/profile"
	"github.com/turnlog/turnlog/projector"
	"github.com/turnlog/turnlog/replay"
	"github.com/turnlog/turnlog/templates"
	"github.com/turnlog/turnlog/worker"
)

// chatCall is one request a model server received: its messages by role
// and content, in order.
type chatCall struct {
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
}

func (c chatCall) system() string {
	if len(c.Messages) > 0 && c.Messages[0].Role == "system" {
		return c.Messages[0].Content
	}
	return ""
}

// modelServer is an OpenAI-compatible Chat Completions server that records
// every request. It answers "SUMMARY" to a call whose system prompt ends
// with the compaction instructions, and "ok" to anything else, streaming as
// the openai engine asks.
type modelServer struct {
	mu    sync.Mutex
	calls []chatCall
}

func (m *modelServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var call chatCall
	if err := json.NewDecoder(r.Body).Decode(&call); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	m.mu.Lock()
	m.calls = append(m.calls, call)
	m.mu.Unlock()
	reply := "ok"
	if strings.HasSuffix(call.system(), middlewares.DefaultSummaryInstruction) {
		reply = "SUMMARY"
	}
	w.Header().Set("Content-Type", "text/event-stream")
	for _, chunk := range []string{
		fmt.Sprintf(`{"id":"x","object":"chat.completion.chunk","created":1,"model":"mock","choices":[{"index":0,"delta":{"role":"assistant","content":%q},"finish_reason":null}]}`, reply),
		`{"id":"x","object":"chat.completion.chunk","created":1,"model":"mock","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
		`{"id":"x","object":"chat.completion.chunk","created":1,"model":"mock","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`,
	} {
		fmt.Fprintf(w, "data: %s\n\n", chunk)
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// take returns the calls received since the last take.
func (m *modelServer) take() []chatCall {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := m.calls
	m.calls = nil
	return out
}

// TestEndToEnd is the scenario through a real worker, the real
// template store and the openai engine against a recording model server:
// template set, a conversation over several turns with one byte-identical
// prompt, the template changed (the old conversation keeps its prompt, a
// new one gets the new), a compaction (the prompt rebuilt from the global
// template as it is then, with fresh values; the summarizing call carrying
// the instructions, recorded as a model call), and the log showing all of
// it.
func TestEndToEnd(t *testing.T) {
	ctx := context.Background()
	srv := natstest.Start(t)
	l, err := eventlog.Open(ctx, srv.Conn)
	require.NoError(t, err)
	store := templates.New(l)
	model := &modelServer{}
	api := httptest.NewServer(model)
	t.Cleanup(api.Close)

	cwd := t.TempDir()
	notes := filepath.Join(cwd, "notes.txt")
	require.NoError(t, os.WriteFile(notes, []byte("alpha"), 0o600))

	// The template is set before any worker runs.
	const first = "You help with [prompt:conversation_id] in [prompt:cwd].[if file:notes.txt] Notes: [file:notes.txt][endif]"
	_, err = store.SetGlobal(ctx, first)
	require.NoError(t, err)

	profiles := profile.Set{profile.DefaultName: {
		Provider:           "openai",
		BaseURL:            api.URL + "/v1",
		Model:              "mock",
		Middlewares:        []string{"retry", "template", "ordering", "reasoningguard", "compaction"},
		CompactAfterBlocks: 12, // with the default KeepLast of 8: compaction on the 7th turn
	}}
	w, err := worker.New(worker.Config{Log: l, Conn: srv.Conn, Profiles: profiles, AckWait: 5 * time.Second, ShutdownGrace: time.Second,
		Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	wctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(wctx) }()
	t.Cleanup(func() { stop(); <-done })

	ask := func(conv, text string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		turn, err := l.Load(ctx, conv)
		require.NoError(t, err)
		req, err := worker.Send(ctx, l, worker.Request{Conversation: conv, Text: text, Data: map[string]string{middlewares.DataCwd: cwd}})
		require.NoError(t, err)
		res, err := worker.Await(ctx, l, conv, req.RequestID, turn.Seq, turn.Events)
		require.NoError(t, err, "request %q of %s", text, conv)
		require.Equal(t, "ok", res.Answer)
	}

	// 1. A conversation, several turns: one prompt, built once.
	promptA := "You help with conv-a in " + cwd + ". Notes: alpha"
	for i := 1; i <= 3; i++ {
		ask("conv-a", fmt.Sprintf("question %d", i))
	}
	for i, c := range model.take() {
		assert.Equal(t, promptA, c.system(), "call %d: the model got the prompt byte for byte", i)
	}

	// 2. The template changes: a new conversation gets the new one, the old
	// one keeps its prompt.
	const second = "Second template, for [prompt:conversation_id].[if file:notes.txt] Notes: [file:notes.txt][endif]"
	_, err = store.SetGlobal(ctx, second)
	require.NoError(t, err)
	ask("conv-b", "hello")
	ask("conv-a", "question 4")
	calls := model.take()
	require.Len(t, calls, 2)
	assert.Equal(t, "Second template, for conv-b. Notes: alpha", calls[0].system())
	assert.Equal(t, promptA, calls[1].system(), "editing the template changes only new conversations")

	// 3. The file behind a variable changes; conv-a grows until compaction,
	// which adopts the global template as it is then.
	require.NoError(t, os.WriteFile(notes, []byte("beta"), 0o600))
	ask("conv-a", "question 5")
	ask("conv-a", "question 6")
	assert.Len(t, model.take(), 2, "no compaction yet, and no re-rendering either")
	ask("conv-a", "question 7")
	promptA2 := "Second template, for conv-a. Notes: beta"
	calls = model.take()
	require.Len(t, calls, 2, "the summarizing call, then the answer")
	assert.Equal(t, promptA2+"\n\n"+middlewares.DefaultSummaryInstruction, calls[0].system(),
		"the compaction call carried the rebuilt prompt and the instructions")
	require.Len(t, calls[0].Messages, 2)
	assert.Contains(t, calls[0].Messages[1].Content, "[user] question 1", "and the transcript to summarize")
	assert.Equal(t, promptA2, calls[1].system(), "the conversation goes on with the rebuilt prompt, without the instructions")
	assert.Contains(t, calls[1].Messages[1].Content, "SUMMARY")

	// 4. The log shows each of these.
	recsA := records(t, l, "conv-a")
	var (
		sets      []events.SystemPromptSet
		replaced  []events.SystemPromptReplaced
		starts    []events.InferenceStarted
		compacted int
	)
	for i, r := range recsA {
		switch p := r.Payload.(type) {
		case events.SystemPromptSet:
			sets = append(sets, p)
			assert.Equal(t, middlewares.ActorTemplatePrompt, r.Actor)
		case events.SystemPromptReplaced:
			replaced = append(replaced, p)
			// Recorded in the step of the compaction, before the model
			// call that used it.
			require.Less(t, i+2, len(recsA))
			assert.Equal(t, events.TypeTurnCompacted, recsA[i+1].Type)
			assert.Equal(t, r.MsgID, recsA[i+1].MsgID, "one step")
			assert.Equal(t, events.TypeInferenceStarted, recsA[i+2].Type)
		case events.TurnCompacted:
			compacted++
		case events.InferenceStarted:
			starts = append(starts, p)
		}
	}
	require.Len(t, sets, 1, "the prompt was built once")
	set := sets[0]
	assert.Equal(t, promptA, set.Text)
	assert.Equal(t, 0, set.Index)
	assert.Equal(t, events.Trusted, set.Trust)
	assert.Equal(t, middlewares.SourceTemplate, set.Meta[events.MetaSystemPromptSource])
	assert.Equal(t, projector.HashText(first), set.TemplateHash)
	assert.Equal(t, map[string]string{"prompt:conversation_id": "conv-a", "prompt:cwd": cwd, "file:notes.txt": "alpha"}, set.Variables)

	require.Len(t, replaced, 1, "rebuilt once, on compaction")
	rep := replaced[0]
	assert.Equal(t, set.BlockID, rep.BlockID)
	assert.Equal(t, promptA, rep.Previous)
	assert.Equal(t, promptA2, rep.Text)
	assert.Equal(t, middlewares.ReasonCompaction, rep.Reason)
	assert.Equal(t, projector.HashText(second), rep.TemplateHash, "the global template as it is at the compaction")
	assert.Equal(t, projector.HashText(first), rep.PreviousTemplateHash, "the replacement names both templates")
	assert.Equal(t, second, rep.Template)
	assert.Equal(t, "beta", rep.Variables["file:notes.txt"], "fresh values")
	assert.Equal(t, 1, compacted)

	require.Len(t, starts, 8, "seven answers and the summarizing call, which is a model call of the conversation too")
	for i, s := range starts {
		if i == 6 {
			assert.Equal(t, middlewares.PurposeCompaction, s.Purpose)
			assert.Equal(t, promptA2+"\n\n"+middlewares.DefaultSummaryInstruction, s.Instructions)
			assert.Equal(t, projector.HashText(second), s.TemplateHash)
			var vals []string
			for _, sp := range s.Untrusted {
				vals = append(vals, sp.Var+"="+s.Instructions[sp.Start:sp.End])
			}
			assert.Equal(t, []string{"prompt:conversation_id=conv-a", "file:notes.txt=beta"}, vals, "the variable content of the instructions is marked")
			continue
		}
		want := projector.HashText(promptA)
		if i == 7 {
			want = projector.HashText(promptA2)
		}
		assert.Equal(t, want, s.SystemPromptHash, "inference %d", i+1)
		assert.Equal(t, set.BlockID, s.SystemPromptID, "inference %d", i+1)
	}

	// Replay: the Turn before each inference.started, re-projected from the
	// log, is the one whose hash was recorded, and the prompt it holds comes
	// from the last systemprompt event before it, with its template and
	// values.
	for _, r := range recsA {
		started, ok := r.Payload.(events.InferenceStarted)
		if !ok || started.Purpose != "" {
			continue // the summarizing call's input is not the Turn (replay --verify checks it)
		}
		turn, err := l.LoadAt(ctx, "conv-a", r.Pos-1)
		require.NoError(t, err)
		assert.Equal(t, started.InputHash, projector.Hash(turn), "inference at @%d is provable from the log", r.Pos)
		sp, i, ok := turn.SystemPrompt()
		require.True(t, ok)
		assert.Equal(t, 0, i)
		assert.Equal(t, started.SystemPromptHash, projector.HashText(sp.Text))
		hash, vars := promptOrigin(recsA, r.Pos)
		assert.Contains(t, []string{projector.HashText(first), projector.HashText(second)}, hash)
		assert.NotEmpty(t, vars["file:notes.txt"])
	}

	// Every model call of the conversation, the summarizing one included,
	// is proven by the log.
	v, err := replay.Verify(ctx, l, "conv-a")
	require.NoError(t, err)
	assert.True(t, v.OK(), "%+v", v.Mismatches)
	assert.Equal(t, 8, v.Inferences)

	recsB := records(t, l, "conv-b")
	var setB *events.SystemPromptSet
	for _, r := range recsB {
		if p, ok := r.Payload.(events.SystemPromptSet); ok {
			setB = &p
		}
	}
	require.NotNil(t, setB)
	assert.Equal(t, "Second template, for conv-b. Notes: alpha", setB.Text)
	assert.Equal(t, projector.HashText(second), setB.TemplateHash)
	assert.Equal(t, map[string]string{"prompt:conversation_id": "conv-b", "file:notes.txt": "alpha"}, setB.Variables)
}

func records(t *testing.T, l *eventlog.Log, conv string) []eventlog.Record {
	t.Helper()
	var out []eventlog.Record
	for r, err := range l.Events(context.Background(), conv) {
		require.NoError(t, err)
		out = append(out, r)
	}
	return out
}

// promptOrigin returns the template hash and variables of the last system
// prompt event before position pos: where the prompt in force came from.
func promptOrigin(recs []eventlog.Record, pos int) (string, map[string]string) {
	var hash string
	var vars map[string]string
	for _, r := range recs {
		if r.Pos >= pos {
			break
		}
		switch p := r.Payload.(type) {
		case events.SystemPromptSet:
			hash, vars = p.TemplateHash, p.Variables
		case events.SystemPromptReplaced:
			hash, vars = p.TemplateHash, p.Variables
		}
	}
	return hash, vars
}
