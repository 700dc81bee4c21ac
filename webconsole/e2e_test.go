package webconsole_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/oklog/ulid/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	_ "github.com/turnlog/turnlog/engine/scripted" // provider "scripted", the default profile's
	"github.com/turnlog/turnlog/engine/wire"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/httpapi"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/profile"
	"github.com/turnlog/turnlog/replay"
	"github.com/turnlog/turnlog/worker"
)

// The end-to-end tests drive the console in a real headless Chromium
// (Debian's chromium package; .ci/run installs it) against the real
// server: embedded NATS, two workers with the default profile (scripted
// engine), and the HTTP API with a token, as `turnlog serve --token` runs
// them. Each test writes a screenshot to screenshots/ at the repository
// root (git-ignored).

const e2eToken = "e2e-secret"

// chromiumPath finds the browser or skips the test, saying how to get one.
func chromiumPath(t *testing.T) string {
	t.Helper()
	// Debian's /usr/bin/chromium is a shell launcher whose /dev/shm check
	// breaks when /dev/shm is mounted twice (seen on this machine: a test
	// failed to start the browser); the binary behind it needs no launcher,
	// and startConsole passes the flag the check would add.
	if _, err := os.Stat("/usr/lib/chromium/chromium"); err == nil {
		return "/usr/lib/chromium/chromium"
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium"
	}
	t.Skip("no chromium on PATH nor /usr/bin/chromium: the browser tests need it (apt-get install chromium; .ci/run installs it)")
	return ""
}

// console is a running installation and a browser tab on its console.
type console struct {
	t   *testing.T
	url string
	log *eventlog.Log
	tab context.Context

	mu       sync.Mutex
	requests []string // every URL the page asked for
	problems []string // uncaught exceptions, CSP violations, JS errors
}

func startConsole(t *testing.T) *console {
	t.Helper()
	chromium := chromiumPath(t)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv := natstest.Start(t)
	l, err := eventlog.Open(context.Background(), srv.Conn)
	require.NoError(t, err)
	for i := range 2 {
		startWorker(t, srv, fmt.Sprintf("e2e-w%d", i+1), quiet)
	}
	api, err := httpapi.New(httpapi.Config{Log: l, Token: e2eToken, Logger: quiet, Wire: wire.New(nil)})
	require.NoError(t, err)
	running, err := httpapi.Start(context.Background(), "127.0.0.1:0", api, quiet)
	require.NoError(t, err)
	t.Cleanup(func() { _ = running.Close() })

	// The machine may have no network at all: without these flags Chromium
	// stalls on background fetches. A fresh profile per test.
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1400, 1000),
	)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	tab, cancelTab := chromedp.NewContext(alloc)
	t.Cleanup(cancelTab)
	require.NoError(t, chromedp.Do(tab), "start chromium")

	c := &console{t: t, url: running.URL(), log: l, tab: tab}
	require.NoError(t, chromedp.Listen(tab, func(ev any) {
		c.mu.Lock()
		defer c.mu.Unlock()
		switch ev := ev.(type) {
		case *network.EventRequestWillBeSent:
			c.requests = append(c.requests, ev.Request.URL)
		case *runtime.EventExceptionThrown:
			d := ev.ExceptionDetails
			msg := d.Text
			if d.Exception != nil {
				msg += " " + d.Exception.Description
			}
			c.problems = append(c.problems, fmt.Sprintf("exception at %s:%d: %s", d.URL, d.LineNumber, msg))
		case *log.EventEntryAdded:
			if ev.Entry.Source == log.EntrySourceSecurity || ev.Entry.Source == log.EntrySourceJavascript {
				c.problems = append(c.problems, fmt.Sprintf("%s %s: %s", ev.Entry.Source, ev.Entry.Level, ev.Entry.Text))
			}
		}
	}))
	return c
}

// startWorker runs a worker with the default profiles on its own
// connection until the test ends.
func startWorker(t *testing.T, srv *natstest.Server, name string, logger *slog.Logger) {
	t.Helper()
	nc, err := srv.Connect()
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	l, err := eventlog.Open(context.Background(), nc)
	require.NoError(t, err)
	profiles, err := profile.Load("")
	require.NoError(t, err)
	w, err := worker.New(worker.Config{Log: l, Conn: nc, Profiles: profiles, Name: name,
		AckWait: 5 * time.Second, ShutdownGrace: time.Second, Logger: logger})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

// do runs browser actions with a deadline, so a page that never gets there
// fails the test instead of hanging it.
func (c *console) do(actions ...chromedp.Action[chromedp.Void]) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.tab, time.Minute)
	defer cancel()
	require.NoError(c.t, chromedp.Do(ctx, actions...))
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](c *console, js string) T {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.tab, time.Minute)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	require.NoError(c.t, err, "evaluate %s", js)
	return v
}

// waitFor polls a JavaScript predicate until it is true, failing with what
// (and the page's text) if it never is.
func (c *console) waitFor(what, js string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.tab, time.Minute)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](js, chromedp.WithPollingTimeout(0))); err != nil {
		text, _ := chromedp.Run(c.tab, chromedp.Evaluate[string](`document.body.innerText`))
		c.t.Fatalf("waiting for %s (%s): %v\npage text:\n%s", what, js, err, text)
	}
}

// open navigates to a console path and waits for its module to load.
func (c *console) open(path string) {
	c.t.Helper()
	c.do(chromedp.Navigate(c.url + path))
	c.waitFor("the page", `document.readyState === "complete"`)
}

// follow runs an action that navigates (a click on a link) and waits for
// the new page to load.
func (c *console) follow(action chromedp.Action[chromedp.Void]) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.tab, time.Minute)
	defer cancel()
	_, err := chromedp.Run(ctx, chromedp.WaitEvent(page.LoadEventFired, nil, action))
	require.NoError(c.t, err)
}

// clear empties the field with the given id as a user would (chromedp's
// SetValue cannot set "": it reads the empty result back as missing).
func (c *console) clear(id string) {
	c.t.Helper()
	eval[chromedp.Void](c, fmt.Sprintf(`(() => { const el = document.getElementById(%q);
		el.value = ""; el.dispatchEvent(new Event("input", {bubbles: true})); })()`, id))
}

// seedToken stores the API token in the tab, as the token dialog does.
func (c *console) seedToken() {
	c.t.Helper()
	c.open("/ui/")
	eval[chromedp.Void](c, fmt.Sprintf(`sessionStorage.setItem("turnlog.token", %q)`, e2eToken))
}

// screenshot writes the page to screenshots/<name>.png at the repository
// root.
func (c *console) screenshot(name string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.tab, time.Minute)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	require.NoError(c.t, err)
	dir := filepath.Join("..", "screenshots")
	require.NoError(c.t, os.MkdirAll(dir, 0o755))
	require.NoError(c.t, os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644))
}

// checkClean asserts that the page fetched nothing but the server's own
// URLs (no CDN, no network) and raised no script error or CSP violation.
func (c *console) checkClean() {
	c.t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	assert.NotEmpty(c.t, c.requests)
	for _, u := range c.requests {
		if !strings.HasPrefix(u, c.url+"/") && !strings.HasPrefix(u, "data:") {
			c.t.Errorf("the page fetched %s, which is not the console's own origin %s", u, c.url)
		}
	}
	assert.Empty(c.t, c.problems, "script errors or CSP violations in the page")
}

// api calls the JSON API as a script would, with the token.
func (c *console) api(method, path string, body any) map[string]any {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		require.NoError(c.t, err)
		rd = strings.NewReader(string(data))
	}
	req, err := http.NewRequest(method, c.url+path, rd)
	require.NoError(c.t, err)
	req.Header.Set("Authorization", "Bearer "+e2eToken)
	res, err := http.DefaultClient.Do(req)
	require.NoError(c.t, err)
	defer res.Body.Close()
	var out map[string]any
	require.NoError(c.t, json.NewDecoder(res.Body).Decode(&out))
	require.Less(c.t, res.StatusCode, 300, "%s %s: %v", method, path, out)
	return out
}

// ask sends a chat request through the API and waits for its end in the
// log.
func (c *console) ask(conv, text string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	turn, err := c.log.Load(ctx, conv)
	require.NoError(c.t, err)
	sent := c.api("POST", "/conversations/"+conv+"/messages", map[string]string{"text": text})
	_, err = worker.Await(ctx, c.log, conv, sent["request_id"].(string), turn.Seq, turn.Events)
	require.NoError(c.t, err)
}

func TestE2ETemplateEditor(t *testing.T) {
	c := startConsole(t)
	project := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(project, "AGENTS.md"), []byte("Be kind to the tests."), 0o644))

	c.open("/ui/template")
	// A token is configured: the editor asks for it once, before the
	// preview (a write) and saving.
	c.waitFor("the token dialog", `document.getElementById("token-dialog").open`)
	c.do(chromedp.SendKeys(chromedp.ID("token-input"), e2eToken), chromedp.Click(chromedp.ID("token-ok")))
	// The dialog's close event (which stores the token) is dispatched as a
	// task after the dialog stops being open, so wait for what the user
	// sees: the header saying the token is set.
	c.waitFor("the variable buttons", `document.querySelectorAll("#variable-buttons button").length >= 10 && !document.getElementById("token-dialog").open`)
	c.waitFor("the token to be stored", `document.getElementById("token-state").textContent === "set"`)
	assert.Equal(t, e2eToken, eval[string](c, `sessionStorage.getItem("turnlog.token")`))
	c.waitFor("the template", `document.getElementById("template-source").dataset.default !== undefined`)

	// Type, insert a variable at the cursor, type on, insert a file.
	c.clear("template-source")
	c.do(
		chromedp.SendKeys(chromedp.ID("template-source"), "You help on "),
		chromedp.Click(chromedp.CSS(`#variable-buttons button[data-ref="system:date"]`)),
		chromedp.SendKeys(chromedp.ID("template-source"), ". Notes: "),
		chromedp.Click(chromedp.CSS(`#variable-buttons button[data-ref="file:<path>"]`)),
	)
	c.waitFor("the file path form", `!document.getElementById("file-path-form").hidden`)
	c.do(
		chromedp.SendKeys(chromedp.ID("file-path-input"), "AGENTS.md"),
		chromedp.Click(chromedp.CSS(`#file-path-form button[type="submit"]`)),
	)
	const want = "You help on [system:date]. Notes: [file:AGENTS.md]"
	assert.Equal(t, want, eval[string](c, `document.getElementById("template-source").value`))

	// The live preview, rendered by the server for a working directory.
	c.do(chromedp.SendKeys(chromedp.ID("preview-cwd"), project))
	c.waitFor("the preview with the file", `document.getElementById("preview-output").textContent.includes("Be kind to the tests.")`)
	assert.Regexp(t, regexp.MustCompile(`^You help on \d{4}-\d{2}-\d{2}\. Notes: Be kind to the tests\.$`),
		eval[string](c, `document.getElementById("preview-output").textContent`))
	assert.Equal(t, "Be kind to the tests.", eval[string](c, `document.querySelector("#preview-variables th + td").textContent`),
		"the variables the prompt used are listed")

	c.do(chromedp.Click(chromedp.ID("template-save")))
	c.waitFor("saved", `document.getElementById("template-status").textContent.startsWith("Saved")`)
	assert.Equal(t, want, c.api("GET", "/system-prompt", nil)["template"], "GET /system-prompt shows what the editor saved")
	c.screenshot("template-editor")

	// A template the server refuses: its error is shown, nothing stored.
	eval[chromedp.Void](c, `(() => { const ta = document.getElementById("template-source");
		ta.value = "x".repeat(300 * 1024); ta.dispatchEvent(new Event("input")); })()`)
	c.do(chromedp.Click(chromedp.ID("template-save")))
	c.waitFor("the error", `!document.getElementById("template-error").hidden`)
	assert.Contains(t, eval[string](c, `document.getElementById("template-error").textContent`), "the limit is 262144",
		"the API's own error text is shown")
	assert.Equal(t, want, c.api("GET", "/system-prompt", nil)["template"], "nothing was stored")
	c.checkClean()
}

func TestE2EChatStreamsTheAnswer(t *testing.T) {
	c := startConsole(t)
	c.seedToken()
	c.open("/ui/chat/e2e-chat")
	c.waitFor("the stream", `document.getElementById("stream-state").dataset.state === "ready"`)

	c.do(chromedp.SendKeys(chromedp.ID("chat-input"), "hello from the browser"), chromedp.Click(chromedp.ID("chat-send")))
	c.waitFor("the answer", `document.querySelectorAll(".bubble.assistant.done[data-request]").length === 1`)
	assert.Equal(t, "You said: hello from the browser", eval[string](c, `document.querySelector(".bubble.assistant.done[data-request] .answer").textContent`))
	assert.Greater(t, eval[int](c, `Number(document.querySelector(".bubble.assistant.done[data-request]").dataset.deltas)`), 0,
		"the answer came as deltas through the event stream")
	assert.Equal(t, "true", eval[string](c, `document.querySelector(".bubble.assistant.done[data-request]").dataset.streamedMatches`),
		"the streamed text is the text the log stored")

	// A request with a tool call: two model calls, one answer.
	c.do(chromedp.SendKeys(chromedp.ID("chat-input"), "count the words in red green blue"), chromedp.Click(chromedp.ID("chat-send")))
	c.waitFor("the second answer", `document.querySelectorAll(".bubble.assistant.done[data-request]").length === 2`)
	assert.Equal(t, `There are 3 words in "red green blue".`, eval[string](c, `[...document.querySelectorAll(".bubble.assistant.done[data-request] .answer")][1].textContent`))
	assert.Contains(t, eval[string](c, `[...document.querySelectorAll(".bubble.assistant.done[data-request]")][1].textContent`), "tool call word_count")

	tail, err := c.log.Last(context.Background(), "e2e-chat")
	require.NoError(t, err)
	assert.True(t, tail.Closed(), "the log holds the completed requests")
	c.screenshot("chat")
	c.checkClean()
}

func TestE2ETimelineShowsTheActivePrompt(t *testing.T) {
	c := startConsole(t)
	c.api("PUT", "/system-prompt", map[string]string{"template": "You are the e2e assistant of [prompt:conversation_id]."})
	c.ask("e2e-older", "hello")
	c.ask("e2e-timeline", "count the words in one two three") // two model calls
	c.ask("e2e-timeline", "hello again")                      // one more

	// Reads need the token too: the first page asks for it, once.
	c.open("/ui/")
	c.waitFor("the token dialog", `document.getElementById("token-dialog").open`)
	assert.Zero(t, eval[int](c, `document.querySelectorAll("#conversation-list tbody tr[data-id]").length`), "nothing is shown before the token")
	c.do(chromedp.SendKeys(chromedp.ID("token-input"), e2eToken), chromedp.Click(chromedp.ID("token-ok")))

	// The list, newest first, searched by ID; a row leads to the timeline.
	c.waitFor("the list", `document.getElementById("conversation-list").dataset.ready === "true"`)
	rows := `[...document.querySelectorAll("#conversation-list tbody tr")].map(r => r.dataset.id)`
	assert.Equal(t, []string{"e2e-timeline", "e2e-older"}, eval[[]string](c, rows))
	// The counts are ls's, named as ls names them (issue 23, item 6: the
	// list showed "Messages", steps, where ls showed events and model calls).
	// The first message tells apart conversations named by ULIDs alone.
	assert.Equal(t, []string{"ID", "First message", "Events", "Model calls", "Last activity", "Findings", ""},
		eval[[]string](c, `[...document.querySelectorAll("#conversation-list thead th")].map(th => th.textContent)`))
	described := replay.Conversation{ID: "e2e-timeline"}
	require.NoError(t, replay.Describe(context.Background(), c.log, &described))
	assert.Equal(t, []string{"e2e-timeline", described.FirstMessage, strconv.Itoa(described.Events), "3"},
		eval[[]string](c, `[...document.querySelectorAll("#conversation-list tbody tr")[0].cells].slice(0, 4).map(td => td.textContent)`))
	assert.NotEmpty(t, described.FirstMessage)
	c.screenshot("conversations")
	c.do(chromedp.SendKeys(chromedp.ID("search"), "OLD"))
	c.waitFor("the search", `document.querySelectorAll("#conversation-list tbody tr").length === 1`)
	assert.Equal(t, []string{"e2e-older"}, eval[[]string](c, rows))
	c.clear("search")
	c.do(chromedp.SendKeys(chromedp.ID("search"), "timeline"))
	c.waitFor("the other search", `document.querySelector("#conversation-list tbody tr")?.dataset.id === "e2e-timeline"`)
	c.follow(chromedp.Click(chromedp.CSS(`#conversation-list a[href="/ui/conversations/e2e-timeline"]`)))
	assert.Equal(t, "/ui/conversations/e2e-timeline", eval[string](c, `location.pathname`))
	c.waitFor("the timeline", `document.getElementById("timeline").dataset.ready === "true"`)
	assert.False(t, eval[bool](c, `document.getElementById("token-dialog").open`), "the token is asked for once per tab, not per page")
	// The live stream (Server-Sent Events) carries the token too.
	c.waitFor("the live stream", `document.getElementById("live-state").textContent === "live"`)
	tl := c.api("GET", "/conversations/e2e-timeline/timeline", nil)
	assert.Equal(t, len(tl["events"].([]any)), eval[int](c, `document.querySelectorAll("#timeline tbody tr").length`), "one row per event")
	assert.Equal(t, 3, eval[int](c, `document.querySelectorAll("#timeline tr[data-type='inference.started']").length`))
	prompts := eval[[]string](c, `[...document.querySelectorAll("#timeline tr.model-call .active-prompt .prompt-text")].map(e => e.textContent)`)
	assert.Equal(t, []string{
		"You are the e2e assistant of e2e-timeline.",
		"You are the e2e assistant of e2e-timeline.",
		"You are the e2e assistant of e2e-timeline.",
	}, prompts, "every model call shows its active system prompt")
	// Which words the operator wrote: the variable's value is marked.
	marked := `[...document.querySelectorAll("#timeline tr.model-call .active-prompt .prompt-text mark.untrusted")].map(e => e.dataset.var + "=" + e.textContent)`
	assert.Equal(t, []string{"prompt:conversation_id=e2e-timeline", "prompt:conversation_id=e2e-timeline", "prompt:conversation_id=e2e-timeline"},
		eval[[]string](c, marked), "variable content is marked as untrusted")
	operator := `[...document.querySelectorAll("#timeline tr.model-call .active-prompt .prompt-text")].map(e => [...e.childNodes].filter(n => n.nodeType === Node.TEXT_NODE).map(n => n.textContent).join(""))`
	assert.Equal(t, "You are the e2e assistant of .", eval[[]string](c, operator)[0], "the rest is the operator's template text")
	assert.Equal(t, 3, eval[int](c, `document.querySelectorAll("#timeline tr.model-call .badge.verified").length`), "each input hash verified")
	kinds := eval[[]string](c, `[...new Set([...document.querySelectorAll("#timeline tbody tr")].map(r => [...r.classList].find(k => k.startsWith("kind-"))))]`)
	assert.Subset(t, kinds, []string{"kind-user", "kind-systemprompt", "kind-inference", "kind-llm_text", "kind-tool", "kind-request"}, "rows are coloured by kind")
	assert.Equal(t, fmt.Sprintf("%d events, 3 model calls.", len(tl["events"].([]any))), eval[string](c, `document.getElementById("timeline-status").textContent`))
	c.screenshot("timeline")

	// A model call's exact input Turn.
	c.do(chromedp.Click(chromedp.CSS("#timeline tr.model-call")))
	c.waitFor("the input Turn", `document.getElementById("turn-dialog").open`)
	assert.Equal(t, []string{"system", "user"}, eval[[]string](c, `[...document.querySelectorAll("#turn-view .block .kind")].map(e => e.textContent)`))
	assert.Equal(t, []string{"You are the e2e assistant of e2e-timeline.", "count the words in one two three"},
		eval[[]string](c, `[...document.querySelectorAll("#turn-view .block .block-text")].map(e => e.textContent)`))
	assert.NotContains(t, eval[string](c, `document.getElementById("turn-view").innerText`), "null")
	c.screenshot("timeline-input-turn")

	// One model call is counted in the singular (issue 17: "1 model calls").
	c.open("/ui/conversations/e2e-older")
	c.waitFor("the other timeline", `document.getElementById("timeline").dataset.ready === "true"`)
	older := c.api("GET", "/conversations/e2e-older/timeline", nil)
	assert.Equal(t, fmt.Sprintf("%d events, 1 model call.", len(older["events"].([]any))), eval[string](c, `document.getElementById("timeline-status").textContent`))
	c.checkClean()
}

func TestE2EDiffShowsAMove(t *testing.T) {
	c := startConsole(t)
	const conv = "e2e-diff"
	c.ask(conv, "hello")

	// An operator moves the system prompt to the end: the kind of ordering
	// bug the diff must show as one move, not a removal and an addition.
	ctx := context.Background()
	turn, err := c.log.Load(ctx, conv)
	require.NoError(t, err)
	require.Equal(t, events.KindSystem, turn.Blocks[0].Kind)
	var order []string
	for _, b := range turn.Blocks[1:] {
		order = append(order, b.ID)
	}
	order = append(order, turn.Blocks[0].ID)
	ev := events.New(conv, "op-"+ulid.Make().String(), 0, "e2e.operator", events.BlocksReordered{Order: order, Reason: "move the system prompt last"})
	_, err = c.log.Append(ctx, conv, turn.Seq, ev)
	require.NoError(t, err)
	before, after := turn.Events, turn.Events+1
	last := len(order) - 1

	c.seedToken()
	c.open("/ui/conversations/" + conv)
	c.waitFor("the timeline", `document.getElementById("timeline").dataset.ready === "true"`)
	c.do(
		chromedp.Click(chromedp.CSS(fmt.Sprintf(`#timeline input.pick[data-n="%d"]`, before))),
		chromedp.Click(chromedp.CSS(fmt.Sprintf(`#timeline input.pick[data-n="%d"]`, after))),
	)
	c.waitFor("the diff button", `!document.getElementById("diff-button").disabled`)
	assert.Equal(t, fmt.Sprintf("%s@%d and %s@%d", conv, before, conv, after), eval[string](c, `document.getElementById("diff-picked").textContent`))
	c.do(chromedp.Click(chromedp.ID("diff-button")))
	c.waitFor("the diff", `document.getElementById("diff-view").dataset.ready === "true"`)

	assert.Equal(t, []string{"moved"}, eval[[]string](c, `[...document.querySelectorAll("#diff-view li.change .op")].map(e => e.textContent)`),
		"one move: no removal, no addition")
	assert.Equal(t, fmt.Sprintf("moved system %s A[0] → B[%d]", turn.Blocks[0].ID, last),
		strings.Join(strings.Fields(eval[string](c, `document.querySelector("#diff-view li.change").textContent`)), " "))
	assert.Equal(t, []string{"0"}, eval[[]string](c, `[...document.querySelectorAll("#diff-view .side-a .block.op-moved")].map(e => e.dataset.index)`))
	assert.Equal(t, []string{fmt.Sprint(last)}, eval[[]string](c, `[...document.querySelectorAll("#diff-view .side-b .block.op-moved")].map(e => e.dataset.index)`))
	assert.Equal(t, "moved from A[0]", eval[string](c, `document.querySelector("#diff-view .side-b .block.op-moved .badge.op-moved").textContent`))
	assert.True(t, eval[bool](c, `document.querySelector("#diff-view .side-b .block.op-moved").classList.contains("kind-system")`))
	assert.Contains(t, eval[string](c, `document.querySelector("#diff-view .system-prompt-change").textContent`), "index",
		"the active system prompt's move is called out")
	c.screenshot("diff")

	// The diff page shows the same for any two points named in its URL.
	c.open(fmt.Sprintf("/ui/diff?a=%s@%d&b=%s@%d", conv, before, conv, after))
	c.waitFor("the diff page", `document.getElementById("diff-view").dataset.ready === "true"`)
	assert.Equal(t, []string{"moved"}, eval[[]string](c, `[...document.querySelectorAll("#diff-view li.change .op")].map(e => e.textContent)`))
	assert.Equal(t, fmt.Sprintf("%s@%d", conv, before), eval[string](c, `document.getElementById("diff-a").value`))
	c.screenshot("diff-page")
	c.checkClean()
}
