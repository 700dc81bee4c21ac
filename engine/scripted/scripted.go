// Package scripted is a deterministic Engine that needs no network: the
// embedded default, so `turnlog serve` answers out of the box, and the
// engine of tests and benchmarks. A small script (YAML or JSON) maps the
// last user message to replies, reasoning and tool calls.
package scripted

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/events"
	"go.yaml.in/yaml/v3"
)

// Script is the scripted engine's behaviour. Rules are tried in order
// against the last user message; the first that matches answers. Replies
// may use $0 (the whole message), $1... (the pattern's groups), and, after
// a tool call, {{result}} for the tool's output.
type Script struct {
	Rules []Rule `yaml:"rules" json:"rules"`
	// Default answers when no rule matches (default: echo the message).
	Default *Rule `yaml:"default,omitempty" json:"default,omitempty"`
}

// Rule is one scripted behaviour.
type Rule struct {
	// Match is a regular expression (RE2) matched against the last user
	// message; empty matches everything.
	Match string `yaml:"match" json:"match"`
	// Reasoning, when set, is emitted as a reasoning block before the reply.
	Reasoning string `yaml:"reasoning,omitempty" json:"reasoning,omitempty"`
	// Reply is the answer text.
	Reply string `yaml:"reply,omitempty" json:"reply,omitempty"`
	// ToolCalls are made before replying; the reply then comes in the next
	// model call, after the results (AfterTools, or Reply).
	ToolCalls []ToolCall `yaml:"tool_calls,omitempty" json:"tool_calls,omitempty"`
	// AfterTools is the reply once the tool results are in.
	AfterTools string `yaml:"after_tools,omitempty" json:"after_tools,omitempty"`
	// Fail makes the call fail with this error, to exercise error paths.
	Fail string `yaml:"fail,omitempty" json:"fail,omitempty"`
	// Transient marks Fail as worth retrying.
	Transient bool `yaml:"transient,omitempty" json:"transient,omitempty"`

	re                               *regexp.Regexp
	reasoning, reply, after, failure template
	arguments                        []template // one per ToolCalls
}

// ToolCall is a scripted tool call; Arguments is JSON and may use $1...
type ToolCall struct {
	Name      string `yaml:"name" json:"name"`
	Arguments string `yaml:"arguments" json:"arguments"`
}

// DefaultScript echoes and shows the tool loop: "count words in <text>"
// calls the word_count tool (see WordCount) and answers with its result.
const DefaultScript = `
rules:
  - match: '(?i)^\s*count (?:the )?words (?:in|of) (.+)'
    reasoning: 'The user wants a word count; the word_count tool does that.'
    tool_calls:
      - name: word_count
        arguments: '{"text": $1json}'
    after_tools: 'There are {{result}} words in "$1".'
default:
  reasoning: 'Nothing to look up; echo the message.'
  reply: 'You said: $0'
`

// Parse reads a script from YAML or JSON (JSON is YAML) and checks it.
func Parse(data []byte) (*Script, error) {
	var s Script
	if err := yaml.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("parse script: %w", err)
	}
	for i := range s.Rules {
		if err := s.Rules[i].compile(); err != nil {
			return nil, fmt.Errorf("parse script: rule %d: %w", i+1, err)
		}
	}
	if s.Default != nil {
		if err := s.Default.compile(); err != nil {
			return nil, fmt.Errorf("parse script: default: %w", err)
		}
	}
	return &s, nil
}

// Load reads a script file.
func Load(path string) (*Script, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load script: %w", err)
	}
	s, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

func (r *Rule) compile() error {
	re, err := regexp.Compile(r.Match)
	if err != nil {
		return fmt.Errorf("match %q: %w", r.Match, err)
	}
	r.re = re
	r.arguments = r.arguments[:0]
	for _, c := range r.ToolCalls {
		if c.Name == "" {
			return fmt.Errorf("a tool call has no name")
		}
		r.arguments = append(r.arguments, compileTemplate(c.Arguments))
	}
	after := r.AfterTools
	if after == "" {
		after = r.Reply
	}
	r.reasoning, r.reply, r.after, r.failure = compileTemplate(r.Reasoning), compileTemplate(r.Reply), compileTemplate(after), compileTemplate(r.Fail)
	return nil
}

// Engine answers from a Script.
type Engine struct {
	script *Script
}

var _ engine.Engine = (*Engine)(nil)

// New returns an engine for s; nil means DefaultScript.
func New(s *Script) *Engine {
	if s == nil {
		var err error
		if s, err = Parse([]byte(DefaultScript)); err != nil {
			panic("scripted: the default script does not parse: " + err.Error())
		}
	}
	return &Engine{script: s}
}

// Infer implements engine.Engine. It answers the last user message; when
// the Turn ends with tool results of a rule's calls, it gives the rule's
// after-tools reply.
func (e *Engine) Infer(ctx context.Context, in engine.Input, delta func(engine.Delta)) (engine.Output, error) {
	if err := ctx.Err(); err != nil {
		return engine.Output{}, err
	}
	if err := record(ctx, in); err != nil {
		return engine.Output{}, err
	}
	blocks := in.Turn.Blocks
	userIdx := -1
	for i := len(blocks) - 1; i >= 0; i-- {
		if blocks[i].Kind == events.KindUser {
			userIdx = i
			break
		}
	}
	msg := ""
	if userIdx >= 0 {
		msg = blocks[userIdx].Text
	}
	rule, groups := e.match(msg)
	if (rule == e.script.Default || rule == echo) && engine.PurposeFrom(ctx) == purposeCompaction {
		return summary(msg), nil
	}
	if rule.Fail != "" {
		err := fmt.Errorf("scripted failure: %s", rule.failure.expand(groups, ""))
		if rule.Transient {
			err = engine.Transient(err)
		}
		return engine.Output{}, err
	}
	var results []string
	for _, b := range blocks[userIdx+1:] {
		if b.Kind == events.KindToolResult {
			results = append(results, b.Text)
		}
	}
	var out engine.Output
	emit := func(kind events.Kind, text string) {
		if text == "" {
			return
		}
		if delta != nil {
			for w := range strings.SplitAfterSeq(text, " ") {
				delta(engine.Delta{Kind: kind, Text: w})
			}
		}
		out.Blocks = append(out.Blocks, events.Block{Kind: kind, Text: text})
	}
	switch {
	case len(rule.ToolCalls) > 0 && len(results) == 0:
		emit(events.KindReasoning, rule.reasoning.expand(groups, ""))
		for i, c := range rule.ToolCalls {
			out.Blocks = append(out.Blocks, events.Block{
				Kind:      events.KindToolCall,
				CallID:    fmt.Sprintf("call_%s_%d", engine.NewID(), i),
				ToolName:  c.Name,
				Arguments: rule.arguments[i].expand(groups, ""),
			})
		}
		out.StopReason = "tool_calls"
	case len(results) > 0:
		emit(events.KindLLMText, rule.after.expand(groups, strings.Join(results, ", ")))
		out.StopReason = "stop"
	default:
		emit(events.KindReasoning, rule.reasoning.expand(groups, ""))
		emit(events.KindLLMText, rule.reply.expand(groups, ""))
		out.StopReason = "stop"
	}
	out.Usage = engine.Usage{PromptTokens: approxTokens(blocks), CompletionTokens: approxTokens(out.Blocks)}
	return out, nil
}

// purposeCompaction is middlewares.PurposeCompaction, the purpose of the
// calls that ask for a conversation's summary (an engine does not import
// the middlewares).
const purposeCompaction = "compaction"

// summaryBytes bounds the summaries the engine writes: a summary is short,
// whatever the transcript, as a model's would be.
const summaryBytes = 200

// summary answers a summarizing call that no rule of the script matches:
// how many lines the transcript had, and its beginning. Echoing the
// transcript, as the default rule would, makes a summary as long as what
// it replaces.
func summary(transcript string) engine.Output {
	lines := strings.Count(transcript, "\n")
	if lines == 0 && transcript != "" {
		lines = 1
	}
	head := strings.Join(strings.Fields(transcript), " ")
	if len(head) > summaryBytes {
		end := summaryBytes
		for end > 0 && !utf8.RuneStart(head[end]) {
			end--
		}
		head = head[:end] + "…"
	}
	text := fmt.Sprintf("Summary of %d transcript lines: %s", lines, head)
	b := []events.Block{{Kind: events.KindLLMText, Text: text}}
	return engine.Output{Blocks: b, StopReason: "stop",
		Usage: engine.Usage{PromptTokens: (len(transcript) + 3) / 4, CompletionTokens: approxTokens(b)}}
}

func (e *Engine) match(msg string) (*Rule, []string) {
	for i := range e.script.Rules {
		r := &e.script.Rules[i]
		if m := r.re.FindStringSubmatch(msg); m != nil {
			return r, m
		}
	}
	if e.script.Default != nil {
		return e.script.Default, []string{msg}
	}
	return echo, []string{msg}
}

// echo answers when a script has neither a matching rule nor a default.
var echo = func() *Rule {
	r := &Rule{Reply: "You said: $0"}
	if err := r.compile(); err != nil {
		panic("scripted: the echo rule does not compile: " + err.Error())
	}
	return r
}()

func approxTokens(bs []events.Block) int {
	n := 0
	for _, b := range bs {
		n += (len(b.Text) + len(b.Arguments) + 3) / 4
	}
	return n
}

// WordCount is the tool the default script calls: engine.WordCount, kept
// here for the programs that found it here first.
func WordCount() engine.Tool { return engine.WordCount() }

// Provider names the provider for trace spans (gen_ai.provider.name): the
// scripted engine answers inside turnlog.
func (e *Engine) Provider() string { return "turnlog.scripted" }
