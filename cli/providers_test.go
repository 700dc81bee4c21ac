package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/internal/providertest"
	"github.com/turnlog/turnlog/middlewares"
	"github.com/turnlog/turnlog/profile"
	"github.com/turnlog/turnlog/replay"
	"github.com/turnlog/turnlog/worker"
)

// modelReplies is a reasoning model behind either fake server: it
// summarizes when asked by the compaction middleware, calls word_count when
// asked to count words, and otherwise answers "ok: <the message>", always
// reasoning first.
func modelReplies(req providertest.Request) providertest.Reply {
	for _, s := range req.System {
		if strings.Contains(s, middlewares.DefaultSummaryInstruction) {
			return providertest.Reply{Reasoning: []string{"Summarize."}, Text: "SUMMARY of the early turns"}
		}
	}
	if len(req.ToolResults) > 0 {
		return providertest.Reply{Reasoning: []string{"The tool answered."}, Text: "There are " + req.ToolResults[0] + " words."}
	}
	if text, ok := strings.CutPrefix(req.LastUser, "count the words in "); ok {
		args, _ := json.Marshal(map[string]string{"text": text})
		return providertest.Reply{Reasoning: []string{"**Counting**", "A tool does that."}, Redacted: true,
			Calls: []providertest.Call{{Name: "word_count", Arguments: string(args)}}}
	}
	return providertest.Reply{Reasoning: []string{"Answer " + req.LastUser + "."}, Text: "ok: " + req.LastUser}
}

// TestProvidersEndToEnd runs, for each reasoning provider, what the issue
// asks: `turnlog chat` through a worker whose profile uses the provider
// against a fake server that enforces the API's rules, a tool loop, a
// compaction, then `turnlog replay --verify` and `--rerun`, and shows that
// a changed byte of the stored encrypted reasoning or signature is a
// mismatch.
func TestProvidersEndToEnd(t *testing.T) {
	type fake interface {
		Requests() []providertest.Request
		Violations() []string
	}
	cases := []struct {
		provider string
		start    func(t *testing.T) (baseURL string, f fake)
		extra    string
	}{
		{provider: "openai_responses", start: func(t *testing.T) (string, fake) {
			s := providertest.NewResponses(t, modelReplies)
			return s.URL + "/v1", s
		}, extra: "reasoning_summary: auto"},
		{provider: "anthropic", start: func(t *testing.T) (string, fake) {
			s := providertest.NewMessages(t, modelReplies)
			return s.URL, s
		}, extra: `thinking: "2048"`},
	}
	for _, tc := range cases {
		t.Run(tc.provider, func(t *testing.T) {
			baseURL, model := tc.start(t)
			t.Setenv("TURNLOG_TEST_MODEL_KEY", "sk-test-e2e")
			e := &auditEnv{t: t}
			srv := natstest.Start(t)
			l, err := eventlog.Open(context.Background(), srv.Conn)
			require.NoError(t, err)
			e.url, e.log = srv.ClientURL(), l
			profiles := e.file("profiles.yaml", fmt.Sprintf(`profiles:
  default:
    provider: %s
    base_url: %s
    model: test-model
    api_key_env: TURNLOG_TEST_MODEL_KEY
    %s
    system_prompt: "You are terse."
    tools: [word_count]
    middlewares: [logging, retry, systemprompt, ordering, reasoningguard, compaction]
    compact_after_blocks: 12
`, tc.provider, baseURL, tc.extra))
			set, err := profile.Load(profiles)
			require.NoError(t, err)
			runWorker(t, worker.Config{Log: l, Conn: srv.Conn, Profiles: set, AckWait: 5 * time.Second,
				ShutdownGrace: time.Second, Logger: slog.New(slog.DiscardHandler)})

			// Streaming deltas reach the existing delta subject.
			deltas, err := srv.Conn.SubscribeSync("turnlog.delta.conv")
			require.NoError(t, err)
			chat := func(text string) string {
				t.Helper()
				out, errOut, code := e.run("", "chat", "conv", "-m", text, "--timeout", "30s")
				require.Equal(t, 0, code, "chat %q: %s", text, errOut)
				return strings.TrimSpace(out)
			}
			assert.Equal(t, "ok: hello", chat("hello"))
			var streamed = map[events.Kind]string{}
			for {
				m, err := deltas.NextMsg(time.Second)
				if err != nil {
					break
				}
				var d worker.Delta
				require.NoError(t, json.Unmarshal(m.Data, &d))
				streamed[d.Kind] += d.Text
			}
			assert.Equal(t, "ok: hello", streamed[events.KindLLMText], "the answer streamed on turnlog.delta.conv")
			assert.Equal(t, "Answer hello.", streamed[events.KindReasoning], "and the reasoning")
			assert.Equal(t, "There are 3 words.", chat("count the words in a b c"), "a tool loop")
			assert.Equal(t, "ok: third", chat("third"))
			assert.Equal(t, "ok: fourth", chat("fourth"), "answered after a compaction")

			assert.Empty(t, model.Violations(), "every request met the API's rules")
			reqs := model.Requests()
			var summarized, withReasoning bool
			for _, r := range reqs {
				assert.Equal(t, "sk-test-e2e", r.APIKey, "the key from the variable api_key_env names")
				if len(r.System) > 0 && strings.Contains(r.System[0], middlewares.DefaultSummaryInstruction) {
					summarized = true
					continue
				}
				assert.Equal(t, []string{"You are terse."}, r.System, "one system prompt")
				withReasoning = withReasoning || r.Reasoning > 0
			}
			assert.True(t, summarized, "the compaction asked the model for a summary")
			assert.True(t, withReasoning, "stored reasoning went back to the model")

			var compacted, reasoning int
			for r, err := range l.Events(context.Background(), "conv") {
				require.NoError(t, err)
				switch p := r.Payload.(type) {
				case events.TurnCompacted:
					compacted++
				case events.ReasoningAppended:
					reasoning++
					assert.NotEmpty(t, p.Encrypted)
				}
			}
			assert.Equal(t, 1, compacted)
			assert.Positive(t, reasoning)

			// replay shows what the model summarized of its reasoning and
			// none of the opaque parts: encrypted content, signatures,
			// redacted_thinking data.
			out, errOut, code := e.run("", "replay", "conv")
			require.Equal(t, 0, code, errOut)
			for _, summary := range []string{"Answer hello.", "**Counting**", "The tool answered."} {
				assert.Contains(t, out, summary, "replay shows the reasoning's summary")
			}
			secrets := opaqueParts(t, l, "conv")
			require.NotEmpty(t, secrets)
			for _, v := range secrets {
				assert.NotContains(t, out, v[:12], "replay shows no opaque reasoning")
				assert.NotContains(t, out, v[len(v)-12:], "replay shows no opaque reasoning")
			}
			for _, prefix := range []string{"gAAAAB", "EqQB", "EmwK"} { // the fakes' ciphertexts, signatures, redacted data
				assert.NotContains(t, out, prefix)
			}

			out, errOut, code = e.run("", "replay", "conv", "--verify")
			require.Equal(t, 0, code, errOut+out)
			assert.Contains(t, out, "verified conv: all ")

			out, errOut, code = e.run("", "replay", "conv", "--rerun", "--profiles", profiles)
			require.Equal(t, 0, code, errOut+out)
			assert.Contains(t, out, "no difference")

			// A copy of the log verifies as the original does; the same
			// copy with one byte of the first stored reasoning changed
			// does not, and the first mismatch is the next model call's
			// input hash.
			require.Zero(t, copyConversation(t, l, "conv", "conv-copy", false))
			out, errOut, code = e.run("", "replay", "conv-copy", "--verify")
			require.Equal(t, 0, code, "the untampered copy verifies: %s%s", errOut, out)
			assert.Contains(t, out, "verified conv-copy: all ")

			edited := copyConversation(t, l, "conv", "conv-tampered", true)
			require.Positive(t, edited)
			nextCall := -1
			for r, err := range l.Events(context.Background(), "conv") {
				require.NoError(t, err)
				if _, ok := r.Payload.(events.InferenceStarted); ok && r.Pos > edited {
					nextCall = r.Pos
					break
				}
			}
			require.Positive(t, nextCall)
			out, _, code = e.run("", "replay", "conv-tampered", "--verify", "-o", "json")
			assert.Equal(t, 1, code, out)
			var v replay.Verification
			require.NoError(t, json.Unmarshal([]byte(out), &v), out)
			require.NotEmpty(t, v.Mismatches)
			assert.Equal(t, nextCall, v.Mismatches[0].N, "the first model call after the edited reasoning (event %d)", edited)
			assert.Equal(t, replay.FieldInputHash, v.Mismatches[0].Field)
		})
	}
}

// copyConversation copies the events of conversation from into to, message
// by message, and returns 0, or with tamper the position of the first
// reasoning event, one byte of whose opaque part (encrypted content or
// signature) it changed in the copy.
func copyConversation(t *testing.T, l *eventlog.Log, from, to string, tamper bool) (edited int) {
	t.Helper()
	copyEditing(t, l, from, to, func(r *eventlog.Record) {
		p, ok := r.Payload.(events.ReasoningAppended)
		if !ok || !tamper || edited != 0 {
			return
		}
		edited = r.Pos
		i := strings.Index(p.Encrypted, "gAAAAB") + len("gAAAAB")
		if i < len("gAAAAB") {
			i = strings.Index(p.Encrypted, "EqQB") + len("EqQB")
		}
		c := byte('A')
		if p.Encrypted[i] == c {
			c = 'B'
		}
		p.Encrypted = p.Encrypted[:i] + string(c) + p.Encrypted[i+1:]
		r.Payload = p
	})
	return edited
}

// copyEditing copies the events of conversation from into to, message by
// message (an event message's events stay one append), each record first
// passed to edit, which may change its payload.
func copyEditing(t *testing.T, l *eventlog.Log, from, to string, edit func(r *eventlog.Record)) {
	t.Helper()
	var seq, cur uint64
	var msg []events.Event
	flush := func() {
		if len(msg) > 0 {
			var err error
			seq, err = l.Append(context.Background(), to, seq, msg...)
			require.NoError(t, err)
			msg = nil
		}
	}
	for r, err := range l.Events(context.Background(), from) {
		require.NoError(t, err)
		if r.Seq != cur {
			flush()
			cur = r.Seq
		}
		r.Conversation, r.Cause = to, to+"-"+r.Cause
		edit(&r)
		msg = append(msg, r.Event)
	}
	flush()
}

// opaqueParts returns the opaque values of the conversation's stored
// reasoning: a Responses reasoning item's encrypted content, or the
// signatures and redacted_thinking data an Anthropic run stores as JSON.
func opaqueParts(t *testing.T, l *eventlog.Log, conv string) []string {
	t.Helper()
	var out []string
	for r, err := range l.Events(context.Background(), conv) {
		require.NoError(t, err)
		p, ok := r.Payload.(events.ReasoningAppended)
		if !ok || p.Encrypted == "" {
			continue
		}
		var run []struct{ Signature, Data string }
		if json.Unmarshal([]byte(p.Encrypted), &run) != nil {
			out = append(out, p.Encrypted)
			continue
		}
		for _, b := range run {
			for _, v := range []string{b.Signature, b.Data} {
				if v != "" {
					out = append(out, v)
				}
			}
		}
	}
	return out
}
