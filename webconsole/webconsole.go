// Package webconsole is turnlog's web console: a few server-rendered pages
// (Go html/template) and plain JavaScript modules, served on the HTTP API's
// port at / and /ui/. Everything is embedded in the binary, so the console
// needs no network, no CDN and no build step.
//
// The pages hold no data of their own: their scripts call the JSON API
// that docs/http-api.md documents for scripts (GET /conversations, the timeline,
// turns, /diff, /system-prompt, chat messages and the SSE stream), so what
// a browser shows is what a script gets. When the server has a token, every
// call (reads, writes and the live stream, which is read with fetch since
// EventSource cannot send it) carries the API's bearer token, which a page
// takes from its address (/#token=..., the link turnlog serve prints; it is
// removed from the address bar at once) or asks for, once, and keeps in
// sessionStorage; the pages themselves hold no data and load without it.
//
// Pages:
//
//   - /ui/ lists conversations, newest first, with a search by ID.
//   - /ui/conversations/{id} shows one conversation's timeline (a row per
//     event, coloured by kind, the active system prompt at every model
//     call, the input Turn of a model call on click) and the diff of two
//     picked points, side by side.
//   - /ui/conversations/{id}/calls lists its model calls (number, time,
//     model, tokens, latency, status, findings) as they arrive; a call
//     opens the exact request it sent (GET .../calls/{call}/wire, pretty
//     printed, reasoning and signatures shown as opaque), its output and
//     what changed in its input since the previous call, findings marked
//     at their blocks.
//   - /ui/chat/{id} sends messages and streams the answers.
//   - /ui/diff?a=<conversation>@<n>&b=<conversation>@<n> diffs any two
//     points.
//   - /ui/template opens the system prompt template editor, which every
//     page also opens from its header.
package webconsole

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"strings"

	"github.com/turnlog/turnlog/events"
)

//go:embed assets pages
var files embed.FS

// Options configures the console.
type Options struct {
	// TokenRequired tells the pages that the API needs a bearer token, so
	// they ask for it before the first call instead of failing.
	TokenRequired bool
}

// Mux is where Register adds the console's routes; *http.ServeMux is one.
type Mux interface {
	Handle(pattern string, h http.Handler)
}

// Register serves the console on mux: GET / (which redirects to /ui/) and
// everything under GET /ui/. The API's own routes are left to the mux, so an
// unknown API path still gets the API's JSON 404.
func Register(mux Mux, opts Options) {
	h := Handler(opts)
	mux.Handle("GET /{$}", h)
	mux.Handle("GET /ui/", h)
}

// contentSecurityPolicy allows the page to load and call only its own
// origin: no CDN, no inline script, no framing by other sites.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// Handler is the console as an http.Handler for / and /ui/; Register
// mounts it.
func Handler(opts Options) http.Handler {
	c := &console{opts: opts, pages: parsePages()}
	assets, err := fs.Sub(files, "assets")
	if err != nil {
		panic("webconsole: " + err.Error()) // the embed directive guarantees the folder
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/ui/", http.StatusSeeOther)
	})
	mux.HandleFunc("GET /ui/{$}", c.page("conversations", "Conversations"))
	mux.HandleFunc("GET /ui/conversations/{id}", c.conversationPage("conversation", "Conversation"))
	mux.HandleFunc("GET /ui/conversations/{id}/calls", c.conversationPage("calls", "Model calls of"))
	// A page's address typed or pasted with a trailing slash goes to the
	// page.
	mux.HandleFunc("GET /ui/conversations/{id}/{$}", trimSlash)
	mux.HandleFunc("GET /ui/conversations/{id}/calls/{$}", trimSlash)
	mux.HandleFunc("GET /ui/chat/{$}", c.page("chat", "Chat"))
	mux.HandleFunc("GET /ui/chat/{id}", c.conversationPage("chat", "Chat"))
	mux.HandleFunc("GET /ui/diff", c.page("diff", "Diff"))
	mux.HandleFunc("GET /ui/template", c.page("template", "System prompt template"))
	mux.Handle("GET /ui/assets/", http.StripPrefix("/ui/assets/", noListing(http.FileServerFS(assets))))
	mux.HandleFunc("/ui/", func(w http.ResponseWriter, r *http.Request) {
		c.render(w, http.StatusNotFound, "error", view{Title: "Not found",
			Error: fmt.Sprintf("There is no page %s; start from the conversations list.", r.URL.Path)})
	})
	return securityHeaders(mux)
}

// trimSlash sends a request for a page's address with a trailing slash
// to the page (the path stays on this server: it starts with /ui/).
func trimSlash(w http.ResponseWriter, r *http.Request) {
	http.Redirect(w, r, strings.TrimSuffix(r.URL.EscapedPath(), "/"), http.StatusMovedPermanently)
}

// console renders the pages.
type console struct {
	opts  Options
	pages map[string]*template.Template
}

// view is what a page template gets.
type view struct {
	Title string
	// Page names the page for the scripts (body data-page).
	Page string
	// Conversation is the conversation the page is about, if any.
	Conversation  string
	TokenRequired bool
	// Error is shown instead of the page's content.
	Error string
}

// pageNames are the templates under pages/, each rendered inside
// layout.html.
var pageNames = []string{"conversations", "conversation", "calls", "chat", "diff", "template", "error"}

func parsePages() map[string]*template.Template {
	out := make(map[string]*template.Template, len(pageNames))
	for _, name := range pageNames {
		out[name] = template.Must(template.ParseFS(files, "pages/layout.html", "pages/"+name+".html"))
	}
	return out
}

func (c *console) page(name, title string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c.render(w, http.StatusOK, name, view{Title: title})
	}
}

// conversationPage renders a page about the conversation in the path,
// after checking its ID as the API does.
func (c *console) conversationPage(name, title string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		if err := events.ValidateConversationID(id); err != nil {
			c.render(w, http.StatusBadRequest, "error", view{Title: "Bad conversation ID", Error: "Conversation ID: " + err.Error()})
			return
		}
		c.render(w, http.StatusOK, name, view{Title: title + " " + id, Conversation: id})
	}
}

func (c *console) render(w http.ResponseWriter, status int, name string, v view) {
	v.Page = name
	v.TokenRequired = c.opts.TokenRequired
	var b bytes.Buffer
	if err := c.pages[name].ExecuteTemplate(&b, "layout", v); err != nil {
		// The templates are embedded and tested: this is a bug, not input.
		http.Error(w, "webconsole: render "+name+": "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(b.Bytes())
}

// noListing answers 404 for directories: the assets are files, not a tree
// to browse.
func noListing(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "" || strings.HasSuffix(r.URL.Path, "/") {
			http.NotFound(w, r)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// securityHeaders sets the headers every console response carries.
func securityHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", contentSecurityPolicy)
		hd.Set("Referrer-Policy", "no-referrer")
		hd.Set("X-Frame-Options", "DENY")
		h.ServeHTTP(w, r)
	})
}
