package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/mockllm"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/internal/providertest"
	"github.com/turnlog/turnlog/profile"
	"github.com/turnlog/turnlog/replay"
	"github.com/turnlog/turnlog/worker"
)

// TestReplayWire runs, for every engine, chats through a worker (a tool
// loop where the model calls one, and a compaction, whose summariser's
// call is a model call too), then shows that `replay --inference N --wire`
// prints, for every model call, exactly the bytes the server received (a
// server turnlog did not write, mock-llm, behind a tap, or the
// rule-checking fakes, which keep each body as read), that `-o json`
// carries each call's wire_sha256 and `--verify` checks them; and that a
// changed renderer is detected: with the recorded hash of one call
// altered, --wire fails naming the call and both hashes, and --verify
// reports a wire_sha256 mismatch while every input hash still matches.
// The scripted engine sends nothing: its wire is its documented rendering,
// checked against the recorded hash.
func TestReplayWire(t *testing.T) {
	cases := []struct {
		provider string
		// start returns the base URL and the bodies the server received.
		start func(t *testing.T) (string, func() [][]byte)
		extra string
		chats []string
		// seed starts the conversation with these blocks (to have one
		// an engine does not send).
		seed []events.Block
		// notSent is what replay --inference 1 says of a block.
		notSent string
	}{
		{provider: "scripted", chats: []string{"hello", "count the words in a b c", "third", "fourth", "fifth"}},
		{provider: "openai", start: func(t *testing.T) (string, func() [][]byte) {
			tap := mockllm.NewTap(t, mockllm.Start(t, mockChat))
			return tap.URL + "/v1", tap.Bodies
		}, chats: []string{"hello", "second", "third", "fourth", "fifth"},
			seed: []events.Block{
				{ID: "seed-u", Kind: events.KindUser, Text: "earlier"},
				{ID: "seed-r", Kind: events.KindReasoning, Text: "a thought"},
				{ID: "seed-a", Kind: events.KindLLMText, Text: "earlier answer"},
			},
			notSent: "-> not sent: Chat Completions has no input for reasoning"},
		{provider: "openai_responses", start: func(t *testing.T) (string, func() [][]byte) {
			s := providertest.NewResponses(t, modelReplies)
			return s.URL + "/v1", rawBodies(s.Requests)
		}, extra: "reasoning_summary: auto", chats: []string{"hello", "count the words in a b c", "third", "fourth"}},
		{provider: "anthropic", start: func(t *testing.T) (string, func() [][]byte) {
			s := providertest.NewMessages(t, modelReplies)
			return s.URL, rawBodies(s.Requests)
		}, extra: `thinking: "2048"`, chats: []string{"hello", "count the words in a b c", "third", "fourth"}},
	}
	for _, tc := range cases {
		t.Run(tc.provider, func(t *testing.T) {
			var (
				baseURL  string
				received func() [][]byte
			)
			if tc.start != nil {
				baseURL, received = tc.start(t)
				baseURL = "base_url: " + baseURL
			}
			t.Setenv("TURNLOG_TEST_MODEL_KEY", "sk-test-wire")
			e := &auditEnv{t: t}
			srv := natstest.Start(t)
			l, err := eventlog.Open(context.Background(), srv.Conn)
			require.NoError(t, err)
			e.url, e.log = srv.ClientURL(), l
			key := ""
			if tc.start != nil {
				key = "api_key_env: TURNLOG_TEST_MODEL_KEY"
			}
			profiles := e.file("profiles.yaml", fmt.Sprintf(`profiles:
  default:
    provider: %s
    %s
    model: test-model
    %s
    %s
    system_prompt: "You are terse."
    middlewares: [logging, retry, systemprompt, ordering, reasoningguard, compaction]
    compact_after_blocks: 10
`, tc.provider, baseURL, key, tc.extra))
			set, err := profile.Load(profiles)
			require.NoError(t, err)
			runWorker(t, worker.Config{Log: l, Conn: srv.Conn, Profiles: set, AckWait: 5 * time.Second,
				ShutdownGrace: time.Second, Logger: slog.New(slog.DiscardHandler)})

			if tc.seed != nil {
				_, err := l.Append(context.Background(), "conv", 0, events.New("conv", "seed", 0, "import", events.ConversationStarted{Blocks: tc.seed}))
				require.NoError(t, err)
			}
			for _, text := range tc.chats {
				_, errOut, code := e.run("", "chat", "conv", "-m", text, "--timeout", "30s")
				require.Equal(t, 0, code, "chat %q: %s", text, errOut)
			}

			recorded, purposes := recordedWires(t, l, "conv")
			require.NotEmpty(t, recorded)
			assert.Contains(t, purposes, "compaction", "the summariser's call is among the model calls")
			if received != nil {
				require.Len(t, received(), len(recorded), "one request per model call")
			}
			for i, wire := range recorded {
				n := i + 1
				require.NotEmpty(t, wire.SHA256, "model call %d recorded its request", n)
				out, errOut, code := e.run("", "replay", "conv", "--inference", fmt.Sprint(n), "--wire")
				require.Equal(t, 0, code, "call %d: %s", n, errOut)
				assert.Equal(t, wire.SHA256, replay.WireSHA256([]byte(out)), "call %d: --wire prints the body whose hash the call recorded", n)
				if received != nil {
					got := received()[i]
					assert.Equal(t, replay.WireSHA256(got), replay.WireSHA256([]byte(out)), "call %d: --wire prints the bytes the server received", n)
					assert.Equal(t, string(got), out)
				}
			}

			// -o json: each model call's wire_sha256.
			out, errOut, code := e.run("", "replay", "conv", "-o", "json")
			require.Equal(t, 0, code, errOut)
			var h struct {
				Events []struct {
					Inference *struct {
						WireSHA256 string `json:"wire_sha256"`
					} `json:"inference"`
				} `json:"events"`
			}
			require.NoError(t, json.Unmarshal([]byte(out), &h))
			var hashes []string
			for _, ev := range h.Events {
				if ev.Inference != nil {
					hashes = append(hashes, ev.Inference.WireSHA256)
				}
			}
			var want []string
			for _, w := range recorded {
				want = append(want, w.SHA256)
			}
			assert.Equal(t, want, hashes)

			out, errOut, code = e.run("", "replay", "conv", "--verify")
			require.Equal(t, 0, code, errOut+out)
			assert.Contains(t, out, fmt.Sprintf("wire: %d requests rendered again to the hash the call recorded", len(recorded)))

			if tc.notSent != "" {
				out, errOut, code = e.run("", "replay", "conv", "--inference", "1")
				require.Equal(t, 0, code, errOut)
				assert.Contains(t, out, tc.notSent)
			}

			// --check renders the requests too: an engine's documented
			// behaviour (a block not sent) is noted at the call, and what
			// each request carried keeps the rules.
			out, errOut, code = e.run("", "replay", "conv", "--check")
			assert.Equal(t, 0, code, errOut+out)
			assert.NotContains(t, out, "not checked as sent")
			if tc.notSent != "" {
				assert.Contains(t, out, "model call #1 (event ")
				assert.Contains(t, out, "the request did not carry every block as the Turn holds it\n  block seed-r at index 2 "+tc.notSent)
			}

			// A renderer that changed since the call is what a changed
			// recorded hash looks like to this build.
			altered := copyAlteringWire(t, l, "conv", "conv-altered", 2)
			out, errOut, code = e.run("", "replay", "conv-altered", "--inference", "2", "--wire")
			assert.Equal(t, 1, code, errOut)
			assert.Empty(t, out, "a body that is not the one sent is not printed")
			assert.Contains(t, errOut, "model call #2")
			assert.Contains(t, errOut, altered, "the recorded hash")
			assert.Contains(t, errOut, recorded[1].SHA256, "the hash of the body rendered again")

			out, _, code = e.run("", "replay", "conv-altered", "--verify", "-o", "json")
			assert.Equal(t, 1, code, out)
			var v replay.Verification
			require.NoError(t, json.Unmarshal([]byte(out), &v), out)
			require.Len(t, v.Mismatches, 1, "only the wire, not the input: %+v", v.Mismatches)
			assert.Equal(t, replay.FieldWire, v.Mismatches[0].Field)
			assert.Equal(t, 2, v.Mismatches[0].Inference)
			assert.Equal(t, altered, v.Mismatches[0].Recorded)
			assert.Equal(t, recorded[1].SHA256, v.Mismatches[0].Computed)
		})
	}
}

// mockChat are mock-llm rules answering every Chat Completions request
// with the same words: its default echo pastes the last message into its
// JSON unescaped, which the summariser's request (quotes, new lines)
// would break.
const mockChat = `streaming:
  chunkSize: 8
  chunkIntervalMs: 1
rules:
  - path: "/v1/chat/completions"
    match: "@"
    response:
      status: 200
      content: |
        {"id": "chatcmpl-1", "object": "chat.completion", "created": 1741290958, "model": "test-model",
         "choices": [{"index": 0, "message": {"role": "assistant", "content": "noted"}, "finish_reason": "stop"}]}
`

// rawBodies adapts a fake's Requests to the bodies it read.
func rawBodies(requests func() []providertest.Request) func() [][]byte {
	return func() [][]byte {
		var out [][]byte
		for _, r := range requests() {
			out = append(out, r.Raw)
		}
		return out
	}
}

// recordedWires returns the wire request of every model call of conv, in
// the order of the calls, and their purposes.
func recordedWires(t *testing.T, l *eventlog.Log, conv string) ([]events.Wire, []string) {
	t.Helper()
	var (
		order    []string
		purposes []string
		byID     = map[string]events.Wire{}
	)
	for r, err := range l.Events(context.Background(), conv) {
		require.NoError(t, err)
		switch p := r.Payload.(type) {
		case events.InferenceStarted:
			order = append(order, p.InferenceID)
			purposes = append(purposes, p.Purpose)
		case events.InferenceFinished:
			byID[p.InferenceID] = p.Wire
		case events.InferenceFailed:
			byID[p.InferenceID] = p.Wire
		}
	}
	out := make([]events.Wire, len(order))
	for i, id := range order {
		out[i] = byID[id]
	}
	return out, purposes
}

// copyAlteringWire copies conversation from into to, message by message,
// with the wire hash that model call call recorded replaced, and returns
// the replacement.
func copyAlteringWire(t *testing.T, l *eventlog.Log, from, to string, call int) string {
	t.Helper()
	altered := replay.WireSHA256([]byte("another rendering"))
	var calls int
	var target string
	copyEditing(t, l, from, to, func(r *eventlog.Record) {
		switch p := r.Payload.(type) {
		case events.InferenceStarted:
			if calls++; calls == call {
				target = p.InferenceID
			}
		case events.InferenceFinished:
			if p.InferenceID == target {
				p.SHA256 = altered
				r.Payload = p
			}
		}
	})
	require.NotEmpty(t, target, "%s has a model call %d", from, call)
	return altered
}
