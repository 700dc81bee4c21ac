package middlewares_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/engine/scripted"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/middlewares"
	"github.com/turnlog/turnlog/projector"
)

// benchChain is a production-like chain of ten middlewares.
func benchChain() []engine.Middleware {
	return []engine.Middleware{
		middlewares.Must(middlewares.Logging(middlewares.LoggingConfig{Logger: slog.New(slog.DiscardHandler)})),
		middlewares.Must(middlewares.Retry(middlewares.RetryConfig{})),
		middlewares.Must(middlewares.Trust(middlewares.TrustConfig{})),
		middlewares.Must(middlewares.Roles(middlewares.RolesConfig{})),
		middlewares.Must(middlewares.SystemPromptReplace(middlewares.SystemPromptReplaceConfig{Prompt: middlewares.StaticPrompt(prompt)})),
		middlewares.Must(middlewares.GlobalPrompt(middlewares.GlobalPromptConfig{Prompt: middlewares.StaticPrompt(policy)})),
		middlewares.Must(middlewares.GlobalPrompt(middlewares.GlobalPromptConfig{ID: "team", Prompt: middlewares.StaticPrompt("Team notes: ship on Fridays.")})),
		middlewares.Must(middlewares.Ordering(middlewares.OrderingConfig{})),
		middlewares.Must(middlewares.Compaction(middlewares.CompactionConfig{MaxBlocks: 1000, MaxTokens: 1_000_000, Summarizer: middlewares.FirstWords{}})),
		middlewares.Must(middlewares.ReasoningGuard(middlewares.ReasoningGuardConfig{})),
	}
}

func compose(mws []engine.Middleware, h engine.Handler) engine.Handler {
	for i := len(mws) - 1; i >= 0; i-- {
		h = mws[i](h)
	}
	return h
}

// benchTurn is a 200-block conversation as the chain leaves it (so the
// chain has nothing to change): system prompt, two global prompts, a
// context block, then user / reasoning / answer exchanges with a tool call
// every fourth one, ending with the user message the model must answer.
func benchTurn(b *testing.B, n int) *projector.Turn {
	b.Helper()
	para := func(words int, i int) string {
		var sb strings.Builder
		fmt.Fprintf(&sb, "Message %d: ", i)
		for w := 0; w < words; w++ {
			sb.WriteString([]string{"the ", "quick ", "brown ", "fox ", "jumps ", "over ", "lazy ", "dogs, "}[w%8])
		}
		return sb.String()
	}
	blocks := []events.Block{
		{ID: engine.NewID(), Kind: events.KindUser, Text: "Profile: likes short answers.", Meta: map[string]string{events.MetaSection: "user_context"}},
	}
	for i := 0; len(blocks) < n-9; i++ {
		blocks = append(blocks,
			events.Block{ID: engine.NewID(), Kind: events.KindUser, Text: para(30, i)},
			events.Block{ID: engine.NewID(), Kind: events.KindReasoning, Text: para(40, i)})
		if i%4 == 3 {
			k := fmt.Sprintf("call_%d", i)
			blocks = append(blocks,
				events.Block{ID: engine.NewID(), Kind: events.KindToolCall, CallID: k, ToolName: "word_count", Arguments: `{"text":"a b c"}`},
				events.Block{ID: engine.NewID(), Kind: events.KindToolResult, CallID: k, Text: "3"})
		}
		blocks = append(blocks, events.Block{ID: engine.NewID(), Kind: events.KindLLMText, Text: para(60, i)})
	}
	for len(blocks) < n-4 {
		blocks = append(blocks, events.Block{ID: engine.NewID(), Kind: events.KindLLMText, Text: para(10, len(blocks))})
	}
	blocks = append(blocks, events.Block{ID: engine.NewID(), Kind: events.KindUser, Text: "And now?"})
	tx := txOf(b, blocks...)
	// Let the chain add its prompts, then check it has nothing left to do.
	for round := 0; round < 2; round++ {
		if err := compose(benchChain(), func(context.Context, *engine.Tx) error { return nil })(context.Background(), tx); err != nil {
			b.Fatal(err)
		}
		if round == 1 && len(tx.Pending()) > 0 {
			b.Fatalf("the chain is not idle on the bench Turn: %v", typesOf(tx.Pending()))
		}
		if err := tx.Commit(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	if len(tx.Turn().Blocks) != n {
		b.Fatalf("bench Turn has %d blocks, want %d", len(tx.Turn().Blocks), n)
	}
	return tx.Turn()
}

// BenchmarkChainOverhead measures what the ten middlewares add to a model
// call: the full Chain against the bare Infer handler, both with the
// scripted engine on a 200-block Turn in an in-memory Tx (no log), timed
// alternately in the same loop. Each call gets a fresh copy of the Turn
// (not timed), since a call appends the model's output to it.
//
// Both calls include projector.Hash of the Turn (for inference.started).
// The copy carries the Turn's cached block digests, as a worker's Turn
// does from one model call to the next, so the hash costs what the
// model's previous output added (hash-ns/op: projector.Hash of the cached
// Turn alone). The metrics are medians, robust to the pauses of other
// processes: chain-ns/op and bare-ns/op, and overhead-ns/op (the median of
// the per-iteration differences, which sinks into the noise once the
// middlewares cost a few microseconds). BenchmarkMiddlewares/all10
// measures the middlewares' cost directly, without the engine and the
// hash.
func BenchmarkChainOverhead(b *testing.B) {
	ctx := context.Background()
	base := benchTurn(b, 200)
	eng := scripted.New(nil)
	chain := engine.Chain(eng, benchChain()...)
	bare := engine.Infer(eng)
	chainT := make([]time.Duration, 0, b.N)
	bareT := make([]time.Duration, 0, b.N)
	diffT := make([]time.Duration, 0, b.N)
	hashT := make([]time.Duration, 0, b.N)
	timed := func(h engine.Handler) (time.Duration, *engine.Tx) {
		tx := engine.NewTx(base.Clone(), "bench")
		start := time.Now()
		if err := h(ctx, tx); err != nil {
			b.Fatal(err)
		}
		return time.Since(start), tx
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var c, r time.Duration
		var tx *engine.Tx
		// Alternate which goes first, so neither always runs on a warmer cache.
		if i%2 == 0 {
			c, tx = timed(chain)
			r, _ = timed(bare)
		} else {
			r, _ = timed(bare)
			c, tx = timed(chain)
		}
		if n := len(tx.Committed()); n != 4 {
			b.Fatalf("the chain emitted %d events, want 4 (started, reasoning, text, finished): %v", n, typesOf(tx.Committed()))
		}
		chainT, bareT, diffT = append(chainT, c), append(bareT, r), append(diffT, c-r)
		start := time.Now()
		_ = projector.Hash(base)
		hashT = append(hashT, time.Since(start))
	}
	b.StopTimer()
	b.ReportMetric(median(chainT), "chain-ns/op")
	b.ReportMetric(median(bareT), "bare-ns/op")
	b.ReportMetric(median(diffT), "overhead-ns/op")
	b.ReportMetric(median(hashT), "hash-ns/op")
}

func median(ds []time.Duration) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return float64(s[len(s)/2].Nanoseconds())
}

// BenchmarkMiddlewares measures each middleware alone, and all ten, on the
// idle 200-block Turn with a closure in place of the model: the chain's
// overhead without any engine work. The Turn does not change (the chain
// has nothing to do), so one Tx serves every iteration.
func BenchmarkMiddlewares(b *testing.B) {
	ctx := context.Background()
	base := benchTurn(b, 200)
	noop := func(context.Context, *engine.Tx) error { return nil }
	names := []string{"logging", "retry", "trust", "roles", "systemprompt.replace", "globalprompt", "globalprompt.team", "ordering", "compaction", "reasoningguard"}
	chain := benchChain()
	run := func(b *testing.B, h engine.Handler) {
		tx := engine.NewTx(base.Clone(), "bench")
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if err := h(ctx, tx); err != nil {
				b.Fatal(err)
			}
		}
		if len(tx.Pending()) > 0 {
			b.Fatalf("emitted %v on an idle Turn", typesOf(tx.Pending()))
		}
	}
	for i, mw := range chain {
		b.Run(names[i], func(b *testing.B) { run(b, mw(noop)) })
	}
	b.Run("all10", func(b *testing.B) { run(b, compose(chain, noop)) })
	b.Run("all-but-roles", func(b *testing.B) { run(b, compose(slices.Delete(slices.Clone(chain), 3, 4), noop)) })
	b.Run("hash200", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			_ = projector.Hash(base)
		}
	})
}

// BenchmarkAppendInProcess is one eventlog.Append of a single-event step
// (an llm_text.appended of ~240 bytes) on an embedded server reached
// in-process: the cost the chain's overhead is compared with.
func BenchmarkAppendInProcess(b *testing.B) {
	ctx := context.Background()
	l, err := eventlog.Open(ctx, natstest.Start(b).Conn)
	if err != nil {
		b.Fatal(err)
	}
	text := strings.Repeat("answer ", 28)
	var seq uint64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		e := events.New("bench", "bench", i, engine.ActorEngine, events.LLMTextAppended{BlockID: engine.NewID(), Text: text})
		if seq, err = l.Append(ctx, "bench", seq, e); err != nil {
			b.Fatal(err)
		}
	}
}
