package worker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/middlewares"
	"github.com/turnlog/turnlog/operator"
	"github.com/turnlog/turnlog/profile"
	"github.com/turnlog/turnlog/projector"
	"github.com/turnlog/turnlog/replay"
	"github.com/turnlog/turnlog/templates"
	"github.com/turnlog/turnlog/worker"
)

// Where a conversation comes from before a profile first answers in it.
const (
	originNew            = "new"             // no event at all
	originImportedSystem = "imported_system" // a chat file that starts with a system message
	originImportedPlain  = "imported_plain"  // a chat file without one
	originForked         = "forked"          // a fork of a conversation the default profile answered
	originUserSystem     = "user_system"     // a hand-written chat file with a system message after the first one
)

var origins = []string{originNew, originImportedSystem, originImportedPlain, originForked, originUserSystem}

// The texts the table expects.
const (
	originTemplate = "You are the template assistant of [prompt:conversation_id]."
	terse          = "You are a terse assistant. Answer in five words or fewer."
	pirate         = "From now on, answer like a pirate."
	ada            = "You are Ada, the support assistant of Example Corp."
	global         = "Never share one customer's data with another."
	houseStyle     = "Answer in British English."
	forkSource     = "fork-src"
)

// rendered is the global template rendered for one conversation.
func rendered(conv string) string { return "You are the template assistant of " + conv + "." }

// chatFile is a chat file as `turnlog import` reads it.
func chatFile(t *testing.T, id string, messages ...[2]string) []byte {
	t.Helper()
	var ms []map[string]string
	for _, m := range messages {
		ms = append(ms, map[string]string{"role": m[0], "content": m[1]})
	}
	data, err := json.Marshal(map[string]any{"id": id, "model": "gpt-x", "messages": ms})
	require.NoError(t, err)
	return data
}

// prepare gives conv the origin, as a user would: turnlog import, turnlog
// fork, or nothing.
func prepare(t *testing.T, l *eventlog.Log, conv, origin string) {
	t.Helper()
	ctx := context.Background()
	var file []byte
	switch origin {
	case originNew:
		return
	case originForked:
		_, err := replay.Fork(ctx, l, forkSource, 0, conv)
		require.NoError(t, err)
		return
	case originImportedSystem:
		file = chatFile(t, conv, [2]string{"system", terse}, [2]string{"user", "hi"}, [2]string{"assistant", "Hello."})
	case originImportedPlain:
		file = chatFile(t, conv, [2]string{"user", "hi"}, [2]string{"assistant", "Hello."})
	case originUserSystem:
		file = chatFile(t, conv, [2]string{"user", "hi"}, [2]string{"system", pirate}, [2]string{"assistant", "Arr."})
	}
	c, err := replay.ParseChat(file)
	require.NoError(t, err)
	plan, err := replay.PlanImport(conv+".json", c, time.Now())
	require.NoError(t, err)
	_, err = replay.Import(ctx, l, []*replay.ImportPlan{plan})
	require.NoError(t, err)
}

// askAs sends one request under a profile and waits for its end.
func askAs(t *testing.T, l *eventlog.Log, conv, profileName, text string) {
	t.Helper()
	_, err := askProfile(t, l, conv, profileName, text)
	require.NoError(t, err)
}

// TestOnePromptWhateverTheOrigin runs every built-in profile (the default
// set and profile/examples.yaml) on conversations of every origin and
// checks, by export and by diff-turns, that each ends with exactly one
// conversation prompt: the one the policy says, no second prompt, no
// prompt demoted to a developer message. The only other system block is
// the global prompt, for profiles that ask for it. Before the policy, an
// imported system prompt was pushed down by the template's (export:
// "system" the template, "developer" the imported prompt).
func TestOnePromptWhateverTheOrigin(t *testing.T) {
	set, err := profile.BuiltIn()
	require.NoError(t, err)
	srv := natstest.Start(t)
	l := startWorker(t, srv, func(c *worker.Config) { c.Profiles = set })
	ctx := context.Background()
	_, err = templates.New(l).SetGlobal(ctx, originTemplate)
	require.NoError(t, err)
	askAs(t, l, forkSource, profile.DefaultName, "hello")

	type row struct {
		profile, origin string
		// system is the export's one "system" message: the
		// conversation's prompt. conv is replaced by rendered(conv).
		system string
		// developer are the other system blocks: the global prompt.
		developer []string
	}
	conv := "<rendered>"
	fork := rendered(forkSource)
	var rows []row
	add := func(p string, developer []string, bySource map[string]string) {
		for _, o := range origins {
			rows = append(rows, row{profile: p, origin: o, system: bySource[o], developer: developer})
		}
	}
	// default: the template writes the prompt of conversations without
	// one and keeps the others' (a fork's is the template's own).
	add("default", nil, map[string]string{originNew: conv, originImportedSystem: terse, originImportedPlain: conv,
		originForked: fork, originUserSystem: pirate})
	// bounded: the default with tighter template_limits, which this
	// template stays well within.
	add("bounded", nil, map[string]string{originNew: conv, originImportedSystem: terse, originImportedPlain: conv,
		originForked: fork, originUserSystem: pirate})
	// strict: prompt_policy replace; the fork's prompt is the template's
	// own, rendered once, and stays.
	add("strict", nil, map[string]string{originNew: conv, originImportedSystem: conv, originImportedPlain: conv,
		originForked: fork, originUserSystem: conv})
	add("persona", []string{global}, map[string]string{originNew: ada, originImportedSystem: terse, originImportedPlain: ada,
		originForked: fork, originUserSystem: pirate})
	add("persona_strict", nil, map[string]string{originNew: ada, originImportedSystem: ada, originImportedPlain: ada,
		originForked: ada, originUserSystem: ada})
	add("house_style", nil, map[string]string{originNew: conv + "\n\n" + houseStyle, originImportedSystem: terse + "\n\n" + houseStyle,
		originImportedPlain: conv + "\n\n" + houseStyle, originForked: fork + "\n\n" + houseStyle, originUserSystem: pirate + "\n\n" + houseStyle})
	add("policy", []string{global}, map[string]string{originNew: conv, originImportedSystem: terse, originImportedPlain: conv,
		originForked: fork, originUserSystem: pirate})

	// Every built-in profile has its rows: a new profile needs some.
	var covered []string
	for _, r := range rows {
		if !slices.Contains(covered, r.profile) {
			covered = append(covered, r.profile)
		}
	}
	slices.Sort(covered)
	require.Equal(t, set.Names(), covered, "every built-in profile x every origin")

	for _, r := range rows {
		t.Run(r.profile+"/"+r.origin, func(t *testing.T) {
			id := fmt.Sprintf("%s-%s", r.profile, r.origin)
			id = sanitize(id)
			prepare(t, l, id, r.origin)
			before, err := l.Load(ctx, id)
			require.NoError(t, err)
			askAs(t, l, id, r.profile, "hello")
			askAs(t, l, id, r.profile, "hello again") // idempotent: nothing changes the second time
			after, err := l.Load(ctx, id)
			require.NoError(t, err)

			want := r.system
			if want == conv {
				want = rendered(id)
			} else if len(want) > len(conv) && want[:len(conv)] == conv {
				want = rendered(id) + want[len(conv):]
			}

			// By export: one system message, the expected one; the only
			// developer messages are the global prompt's.
			ex, err := replay.Export(ctx, l, id)
			require.NoError(t, err)
			var system, developer []string
			for _, m := range ex.Chat.Messages {
				switch m.Role {
				case replay.RoleSystem:
					system = append(system, *m.Content)
				case replay.RoleDeveloper:
					developer = append(developer, *m.Content)
				}
			}
			assert.Equal(t, []string{want}, system, "the conversation's one prompt")
			assert.Equal(t, r.developer, developer, "no prompt demoted to developer; only the global prompt beside it")

			// By diff-turns, before the profile answered and after.
			d := replay.Diff(before, after)
			for _, dup := range d.Duplicates {
				assert.NotEqual(t, events.KindSystem, dup.Kind, "duplicated system block: %+v", dup)
			}
			var prompts int
			for _, b := range after.Blocks {
				if b.Kind == events.KindSystem && b.Meta[middlewares.MetaGlobalPromptID] == "" {
					prompts++
				}
			}
			assert.Equal(t, 1, prompts, "exactly one conversation prompt block")
			sp, _, hadPrompt := before.SystemPrompt()
			if !hadPrompt {
				require.NotNil(t, d.SystemPrompt)
				assert.Equal(t, []string{"added"}, d.SystemPrompt.Fields)
				return
			}
			// The prompt the conversation arrived with is still the
			// active one, the same block: kept (perhaps moved to the
			// front by ordering, perhaps with an append) or replaced in
			// place.
			if d.SystemPrompt != nil {
				assert.Equal(t, sp.ID, d.SystemPrompt.ToID, "no other block became the prompt: %+v", d.SystemPrompt)
				assert.NotContains(t, d.SystemPrompt.Fields, "id")
				assert.NotContains(t, d.SystemPrompt.Fields, "added")
			}
			if want == sp.Text {
				assert.True(t, d.SystemPrompt == nil || !slices.Contains(d.SystemPrompt.Fields, "text"), "kept as it is")
			}
			for _, c := range d.Changes {
				if c.Op == replay.OpAdded && c.Kind == events.KindSystem {
					assert.NotEmpty(t, c.Block.Meta[middlewares.MetaGlobalPromptID], "the only system block added is the global prompt: %+v", c.Block)
				}
			}
			assertSameHash(t, after, l, id)
		})
	}
}

// assertSameHash checks that the Turn the worker's log loads is the one
// the export re-projected from the events: the table is about the log,
// not a cache.
func assertSameHash(t *testing.T, loaded *projector.Turn, l *eventlog.Log, conv string) {
	t.Helper()
	ex, err := replay.Export(context.Background(), l, conv)
	require.NoError(t, err)
	assert.Equal(t, projector.Hash(ex.Turn), projector.Hash(loaded))
}

func sanitize(s string) string {
	out := []byte(s)
	for i, c := range out {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			out[i] = '_'
		}
	}
	return string(out)
}

// TestOperatorPromptAndLockHoldAgainstTheProfile: an operator's prompt is
// the conversation's prompt under the default policy; a profile with
// prompt_policy replace takes an unlocked one over, but not a locked one,
// and after an unlock it does.
func TestOperatorPromptAndLockHoldAgainstTheProfile(t *testing.T) {
	set, err := profile.BuiltIn()
	require.NoError(t, err)
	l := startWorker(t, natstest.Start(t), func(c *worker.Config) { c.Profiles = set })
	ctx := context.Background()
	byAda, err := operator.Actor("ada")
	require.NoError(t, err)
	active := func(conv string) *replay.ActivePrompt {
		pt, err := replay.Latest(ctx, l, conv)
		require.NoError(t, err)
		return pt.SystemPrompt
	}

	_, err = operator.SetPrompt(ctx, l, "op", "Operator's prompt.", byAda, operator.SetOptions{})
	require.NoError(t, err)
	askAs(t, l, "op", profile.DefaultName, "hello")
	assert.Equal(t, "Operator's prompt.", active("op").Text, "kept by the default profile")

	_, err = operator.LockPrompt(ctx, l, "op", byAda, "")
	require.NoError(t, err)
	askAs(t, l, "op", "strict", "hello")
	askAs(t, l, "op", "persona_strict", "hello")
	askAs(t, l, "op", "persona", "hello") // its global prompt waits for the unlock
	p := active("op")
	assert.Equal(t, "Operator's prompt.", p.Text, "the lock holds against prompt_policy replace")
	assert.Equal(t, "operator:ada", p.LockedBy)
	turn, err := l.Load(ctx, "op")
	require.NoError(t, err)
	assert.Equal(t, []string{"Operator's prompt."}, systemTextsOf(turn), "nothing beside a locked prompt")

	_, err = operator.UnlockPrompt(ctx, l, "op", byAda, "")
	require.NoError(t, err)
	askAs(t, l, "op", "persona_strict", "hello")
	p = active("op")
	assert.Equal(t, ada, p.Text, "unlocked, the profile replaces it, in place")
	turn, err = l.Load(ctx, "op")
	require.NoError(t, err)
	assert.Equal(t, []string{ada}, systemTextsOf(turn))
}

func systemTextsOf(t *projector.Turn) []string {
	var out []string
	for _, b := range t.Blocks {
		if b.Kind == events.KindSystem {
			out = append(out, b.Text)
		}
	}
	return out
}
