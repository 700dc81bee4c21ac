// Package httpapi is turnlog's HTTP API, served by `turnlog serve --http`:
// the system prompt template (GET/PUT /system-prompt, GET
// /system-prompt/variables, POST /system-prompt/render), conversations
// (list, timeline, the Turn at a position, diff, sending a message, a live
// Server-Sent Events stream), one conversation's system prompt (show, set,
// lock, unlock) and the web console, which uses exactly these
// routes. Each group of routes is one file registering its handlers on the
// same mux (one line in Server.routes), and all share the same rules:
//
//   - Every response body is JSON; an error is {"error": "..."} with a
//     message that says what was wrong and what to do.
//   - A request body is at most Config.MaxBodyBytes (1 MiB): more gets 413.
//     A body that is not the JSON the route expects gets 400.
//   - When a token is configured (turnlog serve always configures one
//     unless told --no-token), every request but the console's pages
//     (GET / and /ui/..., which hold no data) needs
//     "Authorization: Bearer <token>", reads as well as writes, else 401:
//     a conversation's Turn can hold whatever its variables read.
//   - Browsers cannot be used against it from another site: a request whose
//     Origin is not the server's own is refused (403); only requests
//     addressed to localhost, an IP address or a name in
//     Config.AllowedHosts are served, token or not, so a DNS-rebinding page
//     (a hostile name resolving to this machine) reaches nothing; and a
//     write that the browser marks as sent by another site (Sec-Fetch-Site
//     cross-site or same-site) is refused.
package httpapi

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"

	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/internal/bearer"
	"github.com/turnlog/turnlog/profile"
	"github.com/turnlog/turnlog/replay"
	"github.com/turnlog/turnlog/templates"
	"github.com/turnlog/turnlog/webconsole"
)

// DefaultMaxBodyBytes bounds a request body unless Config says otherwise.
const DefaultMaxBodyBytes = 1 << 20

// Config configures a Server. Log is required.
type Config struct {
	// Log is the installation the API serves.
	Log *eventlog.Log
	// Templates is the template store (default templates.New(Log)).
	Templates *templates.Store
	// Token, when not empty, must be sent as "Authorization: Bearer
	// <token>" with every request but the console's pages. Without one,
	// the API is open to whoever can reach the address: keep such a server
	// on localhost.
	Token string
	// AllowedHosts are the host names (without port) requests may be
	// addressed to besides localhost and IP addresses: the names a proxy
	// or a LAN uses for this server. Any other Host header is refused, as
	// a DNS-rebinding page would send.
	AllowedHosts []string
	// Logger receives one line per write and per server error (default
	// slog.Default()).
	Logger *slog.Logger
	// MaxBodyBytes bounds request bodies (default DefaultMaxBodyBytes).
	MaxBodyBytes int64
	// CwdRoots are the directories under which the "cwd" of POST
	// /system-prompt/render must lie for a template that reads it (file:,
	// git:, prompt:cwd), as the workers check a request's cwd
	// (middlewares.CheckCwd); absolute. Empty means any directory: turnlog
	// serve passes the workers' --cwd-root.
	CwdRoots []string
	// DenyDirs are directories a template preview never reads, whatever
	// its cwd (template.Env.DenyDirs): turnlog serve passes <data>/auth,
	// where the NATS keys and this API's token live. Absolute.
	DenyDirs []string
	// Profiles are the workers' profiles, for the reserved request data
	// keys a profile allows (allow_request_data) in POST
	// /conversations/{id}/messages. Without them, or for a profile they
	// do not name, no reserved key is allowed.
	Profiles profile.Set
	// Wire renders the request a worker's model call sent again from the
	// log, for GET /conversations/{id}/calls/{call}/wire: engine/wire's
	// Renderer, which turnlog serve sets (it needs the engines, which the
	// API does not import). Without it only gateway calls are rendered.
	Wire replay.WireRenderer
}

// Validate fills in defaults and reports what is missing.
func (c *Config) Validate() error {
	if c.Log == nil {
		return errors.New("httpapi: Config.Log is nil; open the event log first (eventlog.Open)")
	}
	if strings.TrimSpace(c.Token) != c.Token {
		return errors.New("httpapi: the token starts or ends with white space; remove it")
	}
	for _, h := range c.AllowedHosts {
		if h == "" || strings.ContainsAny(h, " \t/:@[]") {
			return fmt.Errorf("httpapi: allowed host %q: give a host name without scheme, port or path, such as turnlog.example.com", h)
		}
	}
	for _, d := range append(append([]string(nil), c.CwdRoots...), c.DenyDirs...) {
		if !filepath.IsAbs(d) {
			return fmt.Errorf("httpapi: directory %q of CwdRoots or DenyDirs is relative; use an absolute directory", d)
		}
	}
	if c.Templates == nil {
		c.Templates = templates.New(c.Log)
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = DefaultMaxBodyBytes
	}
	return nil
}

// Server is the HTTP API as an http.Handler. Create it with New; serve it
// with Start or any http.Server.
type Server struct {
	cfg   Config
	mux   *http.ServeMux
	token bearer.Token
	// described remembers what the conversation list read of each
	// conversation's history (see withFindings).
	described *replay.Descriptions
}

// New builds the API's routes.
func New(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, mux: http.NewServeMux(), token: bearer.NewToken(cfg.Token),
		described: replay.NewDescriptions(describedConversations)}
	s.routes()
	return s, nil
}

// routes registers every route. A new group of routes gets its own file
// and one line here.
func (s *Server) routes() {
	s.systemPromptRoutes()
	s.conversationRoutes()
	s.callRoutes()
	s.callWireRoutes()
	s.chatRoutes()
	s.promptRoutes()
	webconsole.Register(s.mux, webconsole.Options{TokenRequired: s.cfg.Token != ""})
}

// Handle registers h for pattern (http.ServeMux syntax, e.g. "GET
// /conversations/{id}") behind the same checks as the built-in routes:
// writes need the token, bodies are bounded, cross-site requests refused.
func (s *Server) Handle(pattern string, h http.Handler) { s.mux.Handle(pattern, h) }

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if msg := s.crossSite(r); msg != "" {
		writeError(w, http.StatusForbidden, msg)
		return
	}
	if !isConsolePage(r) {
		if status, msg := s.authorize(r); status != 0 {
			if status == http.StatusUnauthorized {
				w.Header().Set("WWW-Authenticate", `Bearer realm="turnlog"`)
			}
			writeError(w, status, msg)
			return
		}
	}
	if r.Body != nil {
		r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes)
	}
	if _, pattern := s.mux.Handler(r); pattern == "" {
		// The mux's own 404 and 405 answers are plain text: make them JSON.
		s.mux.ServeHTTP(&jsonErrorWriter{ResponseWriter: w}, r)
		return
	}
	s.mux.ServeHTTP(w, r)
}
