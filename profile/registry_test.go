package profile_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/middlewares"
	"github.com/turnlog/turnlog/profile"
	"github.com/turnlog/turnlog/projector"
)

// A program's own engine and middleware, registered as a program would:
// in init, before any profile is read.
func init() {
	profile.RegisterEngine("test.echo", func(s profile.EngineSpec) (engine.Engine, error) {
		opts := struct {
			Prefix string `yaml:"prefix"`
		}{Prefix: "echo: "}
		if err := s.Options.Decode(&opts); err != nil {
			return nil, err
		}
		if s.CheckOnly {
			return nil, nil
		}
		return engine.EngineFunc(func(_ context.Context, in engine.Input, _ func(engine.Delta)) (engine.Output, error) {
			last := in.Turn.Blocks[len(in.Turn.Blocks)-1]
			return engine.Output{Blocks: []events.Block{{Kind: events.KindLLMText, Text: opts.Prefix + last.Text}}}, nil
		}), nil
	}, profile.WithWire("test.echo/1", renderTestEcho))
	profile.RegisterMiddleware("test.sysprompt", func(s profile.MiddlewareSpec) (engine.Middleware, error) {
		var opts struct {
			Prompt string `yaml:"prompt"`
		}
		if err := s.Options.Decode(&opts); err != nil {
			return nil, err
		}
		if opts.Prompt == "" {
			return nil, errors.New("options: prompt is required")
		}
		return middlewares.SystemPromptReplace(middlewares.SystemPromptReplaceConfig{Prompt: middlewares.StaticPrompt(opts.Prompt), Source: "test"})
	})
	profile.RegisterTool(engine.Tool{
		Spec: engine.ToolSpec{Name: "test_lookup", Description: "Looks a key up.", Parameters: json.RawMessage(`{"type":"object","properties":{"key":{"type":"string"}}}`)},
		Func: func(_ context.Context, args json.RawMessage) (string, error) { return "found " + string(args), nil },
	})
}

// renderTestEcho is test.echo's wire rendering: the recorded parameters
// and the last block's text.
func renderTestEcho(_ context.Context, params []byte, in *projector.Turn) ([]byte, []engine.BlockNote, error) {
	return append(append(params, ' '), in.Blocks[len(in.Blocks)-1].Text...), nil, nil
}

const ownChain = `profiles:
  default:
    provider: test.echo
    middlewares: [test.sysprompt, ordering]
    options:
      test.echo: {prefix: "you said: "}
      test.sysprompt:
        prompt: Be brief.
`

func TestRegisteredNamesRunFromAProfile(t *testing.T) {
	set, err := profile.Parse([]byte(ownChain))
	require.NoError(t, err)
	b, err := set[profile.DefaultName].Build(slog.New(slog.DiscardHandler), nil)
	require.NoError(t, err)

	tx := engine.NewTx(projector.New("c"), "r1")
	require.NoError(t, tx.Emit("test", events.UserAppended{BlockID: engine.NewID(), Text: "hello"}))
	require.NoError(t, b.Loop.Run(context.Background(), tx))

	turn := tx.Turn()
	sp, _, ok := turn.SystemPrompt()
	require.True(t, ok, "the registered middleware ran")
	assert.Equal(t, "Be brief.", sp.Text)
	assert.Equal(t, "you said: hello", turn.Blocks[len(turn.Blocks)-1].Text, "the registered engine answered, with its options")

	assert.Contains(t, profile.Engines(), "test.echo")
	assert.Contains(t, profile.Middlewares(), "test.sysprompt")
	assert.Contains(t, profile.Middlewares(), "ordering", "the built-ins are in the same registry")
}

// TestWireRenderersComeWithTheirEngine: an engine's wire rendering is
// registered with it, turnlog's own as a program's.
func TestWireRenderersComeWithTheirEngine(t *testing.T) {
	r := profile.WireRenderers()
	require.Contains(t, r, "test.echo/1")
	require.Contains(t, r, "scripted/1", "the built-in engines register theirs the same way")
	turn := projector.New("c")
	require.NoError(t, projector.Apply(turn, events.New("c", "r", 0, "t", events.UserAppended{BlockID: "u", Text: "hello"})))
	body, _, err := r["test.echo/1"](context.Background(), []byte(`{"p":1}`), turn)
	require.NoError(t, err)
	assert.Equal(t, `{"p":1} hello`, string(body))

	r["test.echo/1"] = nil
	assert.NotNil(t, profile.WireRenderers()["test.echo/1"], "callers get a copy of the registry")
}

// TestRegisteredToolsRunFromAProfile: a tool a program registered is
// offered to, and run for, a profile that names it, as the engines and
// middlewares a program registers are; a name the binary lacks fails when
// the profile is read, listing what it has.
func TestRegisteredToolsRunFromAProfile(t *testing.T) {
	set, err := profile.Parse([]byte("profiles:\n  default:\n    provider: test.echo\n    middlewares: []\n    tools: [test_lookup, word_count]\n"))
	require.NoError(t, err)
	b, err := set[profile.DefaultName].Build(slog.New(slog.DiscardHandler), nil)
	require.NoError(t, err)
	var names []string
	for _, s := range b.Tools.Specs() {
		names = append(names, s.Name)
	}
	assert.Equal(t, []string{"test_lookup", "word_count"}, names, "both are offered to the model")
	result, isError := b.Tools.Call(t.Context(), "test_lookup", `{"key":"k1"}`)
	assert.False(t, isError)
	assert.Equal(t, `found {"key":"k1"}`, result)
	assert.Contains(t, profile.Tools(), "test_lookup")

	_, err = profile.Parse([]byte("profiles:\n  default:\n    tools: [acme_search]\n"))
	assert.ErrorContains(t, err, `tools: tool "acme_search" is not registered in this binary (it has test_lookup, word_count)`)
	assert.ErrorIs(t, err, profile.ErrNotRegistered)
}

func TestProfileNamesWhatIsNotRegistered(t *testing.T) {
	cases := []struct {
		name, yaml, want, has string
	}{
		{name: "middleware", yaml: "middlewares: [acme.sysprompt, ordering]", has: "test.sysprompt",
			want: `profile "default": middleware "acme.sysprompt" is not registered in this binary (it has `},
		{name: "provider", yaml: "provider: acme.gpt\n    middlewares: []", has: "test.echo",
			want: `profile "default": provider "acme.gpt" is not registered in this binary (it has `},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := profile.Parse([]byte("profiles:\n  default:\n    " + tc.yaml + "\n"))
			require.Error(t, err)
			assert.ErrorContains(t, err, tc.want)
			assert.ErrorContains(t, err, "see docs/library.md", "it says how to get a binary that has it")
			assert.ErrorIs(t, err, profile.ErrNotRegistered)
			var nr *profile.NotRegisteredError
			require.ErrorAs(t, err, &nr)
			assert.Contains(t, nr.Registered, tc.has, "it lists what the binary has")
		})
	}
}

// TestChainOnly: `replay --rerun` reads profiles with ChainOnly, since it
// replays the model: a provider this binary lacks is no error then, a
// middleware it lacks still is, and such a profile builds only around an
// engine it is given.
func TestChainOnly(t *testing.T) {
	const yaml = "profiles:\n  default:\n    provider: acme.gpt\n    middlewares: [test.sysprompt]\n    options:\n      acme.gpt: {endpoint: x}\n      test.sysprompt: {prompt: Be brief.}\n"
	_, err := profile.Parse([]byte(yaml))
	require.ErrorIs(t, err, profile.ErrNotRegistered, "by default the provider must be registered")

	set, err := profile.Parse([]byte(yaml), profile.ChainOnly())
	require.NoError(t, err)
	p := set[profile.DefaultName]
	assert.Equal(t, "acme.gpt", p.ProviderName())
	_, err = p.Build(nil, nil)
	assert.ErrorContains(t, err, `provider "acme.gpt" is not registered in this binary`)
	b, err := p.BuildWithEngine(engine.EngineFunc(func(context.Context, engine.Input, func(engine.Delta)) (engine.Output, error) {
		return engine.Output{Blocks: []events.Block{{Kind: events.KindLLMText, Text: "recorded"}}}, nil
	}), nil, nil)
	require.NoError(t, err)
	tx := engine.NewTx(projector.New("c"), "r1")
	require.NoError(t, tx.Emit("test", events.UserAppended{BlockID: engine.NewID(), Text: "hello"}))
	require.NoError(t, b.Loop.Run(context.Background(), tx))
	sp, _, ok := tx.Turn().SystemPrompt()
	require.True(t, ok)
	assert.Equal(t, "Be brief.", sp.Text, "the chain ran")

	_, err = profile.Parse([]byte("profiles:\n  default:\n    provider: acme.gpt\n    middlewares: [acme.sysprompt]\n"), profile.ChainOnly())
	assert.ErrorContains(t, err, `middleware "acme.sysprompt" is not registered in this binary`, "the chain is what a rerun runs")
	_, err = profile.Parse([]byte("profiles:\n  default:\n    provider: acme.gpt\n    middlewares: [test.sysprompt]\n"), profile.ChainOnly())
	assert.ErrorContains(t, err, "middleware test.sysprompt: options: prompt is required", "the chain's settings are checked")
	assert.Equal(t, "scripted", profile.Profile{}.ProviderName())
}

func TestOptionsAreChecked(t *testing.T) {
	cases := []struct {
		name, yaml, want string
	}{
		{name: "a key the middleware does not know",
			yaml: "middlewares: [test.sysprompt]\n    options:\n      test.sysprompt: {prompt: x, tone: dry}",
			want: "middleware test.sysprompt: options: line 5: field tone not found"},
		{name: "the factory's own check",
			yaml: "middlewares: [test.sysprompt]",
			want: "middleware test.sysprompt: options: prompt is required"},
		{name: "options of a name the profile does not use",
			yaml: "middlewares: [ordering]\n    options:\n      test.sysprompt: {prompt: x}",
			want: `options: "test.sysprompt" is neither the provider nor one of the middlewares`},
		{name: "options of a built-in middleware",
			yaml: "middlewares: [ordering]\n    options:\n      ordering: {x: 1}",
			want: "middleware ordering: takes no options (line 5): its settings are the profile's own keys"},
		{name: "options of a built-in engine",
			yaml: "middlewares: []\n    options:\n      scripted: {x: 1}",
			want: "provider scripted: takes no options"},
		{name: "options that are not a mapping",
			yaml: "middlewares: [test.sysprompt]\n    options:\n      test.sysprompt: Be brief.",
			want: "options of an engine or a middleware are a mapping"},
		{name: "a built-in key on an engine of your own",
			yaml: "provider: test.echo\n    base_url: http://127.0.0.1:1/v1\n    middlewares: []",
			want: "base_url applies to provider openai and openai_responses and anthropic, not test.echo"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := profile.Parse([]byte("profiles:\n  default:\n    " + tc.yaml + "\n"))
			require.Error(t, err)
			assert.ErrorContains(t, err, tc.want)
		})
	}
}

// registryTestFile is where this file's init registers test.echo, as
// a panic names it: the file's path ends so.
const registryTestFile = "profile/registry_test.go:"

func TestRegistrationMistakesPanic(t *testing.T) {
	_, err := profile.Load("") // profiles have been read: the registry is frozen
	require.NoError(t, err)
	mw := func(profile.MiddlewareSpec) (engine.Middleware, error) { return nil, nil }
	eng := func(profile.EngineSpec) (engine.Engine, error) { return nil, nil }
	cases := []struct {
		name     string
		register func()
		want     string
	}{
		{name: "a built-in's name twice", register: func() { profile.RegisterMiddleware("ordering", mw) },
			want: `profile: RegisterMiddleware("ordering"): the name is registered already, by turnlog itself or an earlier call (at `},
		{name: "a built-in's name twice: what to do", register: func() { profile.RegisterMiddleware("ordering", mw) },
			want: `); give yours a prefix of your own, as in "acme.ordering"`},
		// A name with a prefix already was told to take one ("acme.test.echo"),
		// and not where the first registration is.
		{name: "an engine's name twice", register: func() { profile.RegisterEngine("test.echo", eng) },
			want: `profile: RegisterEngine("test.echo"): the name is registered already, by turnlog itself or an earlier call (at `},
		{name: "an engine's name twice: where first", register: func() { profile.RegisterEngine("test.echo", eng) },
			want: registryTestFile},
		{name: "a prefixed name twice: what to do", register: func() { profile.RegisterEngine("test.echo", eng) },
			want: `); register each name once: two packages register it, or one init registers it twice`},
		{name: "after profiles were read", register: func() { profile.RegisterMiddleware("test.late", mw) },
			want: `profile: RegisterMiddleware("test.late") after profiles were read: register in an init function`},
		{name: "a name a YAML list would misread", register: func() { profile.RegisterMiddleware("Acme Prompt", mw) },
			want: `profile: RegisterMiddleware("Acme Prompt"): a name is lowercase letters and digits`},
		{name: "a tool's name twice", register: func() { profile.RegisterTool(engine.WordCount()) },
			want: `profile: RegisterTool("word_count"): the name is registered already`},
		{name: "a tool name the providers refuse", register: func() {
			profile.RegisterTool(engine.Tool{Spec: engine.ToolSpec{Name: "acme.lookup"}, Func: engine.WordCount().Func})
		}, want: `profile: RegisterTool("acme.lookup"): a tool's name is what the model sees: letters, digits, '_' and '-', at most 64`},
		{name: "a tool without its function", register: func() { profile.RegisterTool(engine.Tool{Spec: engine.ToolSpec{Name: "test_nil"}}) },
			want: `profile: RegisterTool("test_nil") with a nil function`},
		{name: "a tool after profiles were read", register: func() {
			profile.RegisterTool(engine.Tool{Spec: engine.ToolSpec{Name: "test_late"}, Func: engine.WordCount().Func})
		}, want: `profile: RegisterTool("test_late") after profiles were read`},
		{name: "no factory", register: func() { profile.RegisterEngine("test.nil", nil) },
			want: "profile: RegisterEngine test.nil with a nil factory"},
		{name: "a rendering another engine registered", register: func() {
			profile.RegisterEngine("test.other", eng, profile.WithWire("scripted/1", renderTestEcho))
		}, want: `profile: RegisterEngine("test.other"): rendering "scripted/1" is registered already, by engine "scripted"`},
		{name: "a rendering version without its number", register: func() {
			profile.RegisterEngine("test.other", eng, profile.WithWire("test.other", renderTestEcho))
		}, want: `profile: RegisterEngine("test.other"): WithWire("test.other"): a rendering version is <name>/<number>`},
		{name: "no renderer", register: func() { profile.RegisterEngine("test.other", eng, profile.WithWire("test.other/1", nil)) },
			want: `profile: RegisterEngine("test.other"): WithWire("test.other/1") with a nil renderer`},
		{name: "a rendering given twice", register: func() {
			profile.RegisterEngine("test.other", eng, profile.WithWire("test.other/1", renderTestEcho), profile.WithWire("test.other/1", renderTestEcho))
		}, want: `profile: RegisterEngine("test.other"): WithWire("test.other/1") given twice`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				got, _ := recover().(string)
				assert.Contains(t, got, tc.want)
			}()
			tc.register()
			t.Error("it did not panic")
		})
	}
	assert.NotContains(t, profile.Middlewares(), "test.late")
	assert.NotContains(t, profile.Engines(), "test.other")
	assert.NotContains(t, profile.Tools(), "test_late")
	assert.NotContains(t, profile.WireRenderers(), "test.other/1")
}
