package middlewares_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/engine/anthropic"
	"github.com/turnlog/turnlog/engine/responses"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/providertest"
	"github.com/turnlog/turnlog/middlewares"
	"github.com/turnlog/turnlog/projector"
)

// reasoningProvider is an engine for a reasoning API and the fake server
// that enforces the API's rules on what the engine sends.
type reasoningProvider struct {
	name   string
	engine engine.Engine
	server interface {
		Requests() []providertest.Request
		Violations() []string
	}
}

func reasoningProviders(t *testing.T) []reasoningProvider {
	reply := func(req providertest.Request) providertest.Reply {
		return providertest.Reply{Reasoning: []string{"About " + req.LastUser + "."}, Text: "answer to " + req.LastUser}
	}
	rs := providertest.NewResponses(t, reply)
	rcfg := responses.DefaultConfig()
	rcfg.BaseURL, rcfg.Model = rs.URL+"/v1", "o4-mini"
	re, err := responses.New(rcfg)
	require.NoError(t, err)

	ms := providertest.NewMessages(t, reply)
	mcfg := anthropic.DefaultConfig()
	mcfg.BaseURL, mcfg.Model, mcfg.Thinking = ms.URL, "claude-sonnet-4-5", anthropic.Thinking{Budget: 1024}
	me, err := anthropic.New(mcfg)
	require.NoError(t, err)
	return []reasoningProvider{{"openai_responses", re, rs}, {"anthropic", me, ms}}
}

// answered returns n exchanges the provider really answered (user, its
// reasoning block as stored, its text), so that the reasoning can be sent
// back and checked by the server.
func answered(t *testing.T, p reasoningProvider, n int) []events.Block {
	t.Helper()
	var blocks []events.Block
	for i := 1; i <= n; i++ {
		blocks = append(blocks, user(fmt.Sprintf("u%d", i), fmt.Sprintf("question %d", i)))
		out, err := p.engine.Infer(context.Background(), engine.Input{Turn: &projector.Turn{Blocks: blocks}}, nil)
		require.NoError(t, err)
		require.Len(t, out.Blocks, 2)
		require.Equal(t, events.KindReasoning, out.Blocks[0].Kind)
		r, a := out.Blocks[0], out.Blocks[1]
		r.ID, a.ID = fmt.Sprintf("r%d", i), fmt.Sprintf("a%d", i)
		blocks = append(blocks, r, a)
	}
	return blocks
}

// TestSeedFailuresReachTheProviderValid builds the failure cases of the
// seed (001: a system prompt inserted before a reasoning item, a
// compaction that would cut a reasoning item from its follower, a reorder
// that moves blocks around reasoning) and runs the middlewares that deal
// with them in front of each reasoning engine: the request that reaches
// the provider's fake server meets the API's rules, and the reasoning that
// still has its follower goes back to the model.
func TestSeedFailuresReachTheProviderValid(t *testing.T) {
	for _, p := range reasoningProviders(t) {
		t.Run(p.name, func(t *testing.T) {
			base := answered(t, p, 3) // u1 r1 a1 u2 r2 a2 u3 r3 a3
			prompt := middlewares.Must(middlewares.SystemPromptReplace(middlewares.SystemPromptReplaceConfig{Prompt: middlewares.StaticPrompt("You are terse."), Source: "profile"}))
			ordering := middlewares.Must(middlewares.Ordering(middlewares.OrderingConfig{}))
			guard := middlewares.Must(middlewares.ReasoningGuard(middlewares.ReasoningGuardConfig{}))
			repair := middlewares.Must(middlewares.ReasoningGuard(middlewares.ReasoningGuardConfig{Repair: true}))
			compaction := middlewares.Must(middlewares.Compaction(middlewares.CompactionConfig{MaxBlocks: 8, KeepLast: 3, Summarizer: middlewares.FirstWords{}}))
			at := func(i int, b ...events.Block) []events.Block {
				out := append([]events.Block{}, base[:i]...)
				out = append(out, b...)
				return append(out, base[i:]...)
			}
			next := user("u4", "question 4")
			section := func(b events.Block, s string) events.Block {
				b.Meta = map[string]string{events.MetaSection: s}
				return b
			}
			cases := []struct {
				name   string
				blocks []events.Block
				mws    []engine.Middleware
				// sent is how many reasoning items or thinking blocks the
				// provider must get back.
				sent int
				// removed names reasoning blocks the guard drops, with
				// the reason recorded.
				removed []string
				// emitted is what the middlewares must have done.
				emitted events.Type
			}{
				{
					name:   "a system prompt inserted before a reasoning item moves to the front; the reasoning keeps its follower",
					blocks: append(at(4, sys("late", "You are terse.")), next),
					mws:    []engine.Middleware{prompt, ordering, guard},
					sent:   3, emitted: events.TypeBlocksReordered,
				},
				{
					name:   "a system prompt inserted between a reasoning item and its follower: the guard drops that item, recorded",
					blocks: append(at(5, sys("wedge", "Policy.")), next),
					mws:    []engine.Middleware{prompt, ordering, repair},
					sent:   2, removed: []string{"r2"}, emitted: events.TypeBlocksRemoved,
				},
				{
					name:   "a compaction whose cut falls between a reasoning item and its follower cuts before the pair",
					blocks: append(base, next, events.Block{ID: "x", Kind: events.KindUser, Text: "and more"}),
					mws:    []engine.Middleware{prompt, compaction, ordering, guard},
					sent:   1, emitted: events.TypeTurnCompacted,
				},
				{
					name: "a reorder by section moves the reasoning with its follower",
					blocks: append(at(3, section(user("ctx", "The user likes brevity."), "user_context")),
						section(user("post", "Remember: be terse."), "post_conversation"), next),
					mws:  []engine.Middleware{prompt, ordering, guard},
					sent: 3, emitted: events.TypeBlocksReordered,
				},
			}
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					before := len(p.server.Requests())
					tx := txOf(t, tc.blocks...)
					require.NoError(t, engine.Chain(p.engine, tc.mws...)(context.Background(), tx))
					assert.Empty(t, p.server.Violations(), "the API's rules hold")
					reqs := p.server.Requests()
					require.Len(t, reqs, before+1, "one request reached the provider")
					sent := reqs[len(reqs)-1].Reasoning
					assert.Equal(t, tc.sent, sent, "reasoning items sent back")
					var removed []string
					var types []events.Type
					for _, e := range tx.Committed() {
						types = append(types, e.Type)
						if rm, ok := e.Payload.(events.BlocksRemoved); ok {
							removed = append(removed, rm.BlockIDs...)
							assert.Contains(t, rm.Reason, "reasoning block without follower")
						}
					}
					assert.Equal(t, tc.removed, removed)
					assert.Contains(t, types, tc.emitted)
					for i, b := range tx.Turn().Blocks {
						if b.Kind == events.KindReasoning && i+1 < len(tx.Turn().Blocks) {
							k := tx.Turn().Blocks[i+1].Kind
							assert.Contains(t, []events.Kind{events.KindLLMText, events.KindToolCall}, k, "%s keeps its follower", b.ID)
						}
					}
				})
			}
			t.Run("without repair, the wedged case is refused before any request", func(t *testing.T) {
				before := len(p.server.Requests())
				tx := txOf(t, append(at(5, sys("wedge", "Policy.")), next)...)
				err := engine.Chain(p.engine, prompt, ordering, guard)(context.Background(), tx)
				require.ErrorIs(t, err, middlewares.ErrOrphanReasoning)
				assert.Len(t, p.server.Requests(), before, "nothing invalid reaches the provider")
			})
		})
	}
}
