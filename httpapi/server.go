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
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/profile"
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
	cfg       Config
	mux       *http.ServeMux
	tokenHash [sha256.Size]byte
}

// New builds the API's routes.
func New(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, mux: http.NewServeMux(), tokenHash: sha256.Sum256([]byte(cfg.Token))}
	s.routes()
	return s, nil
}

// routes registers every route. A new group of routes gets its own file
// and one line here.
func (s *Server) routes() {
	s.systemPromptRoutes()
	s.conversationRoutes()
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

// isConsolePage reports whether r asks for a page or an asset of the web
// console: they hold no data (their scripts call the API, with the token),
// so they load without the token, and the page can ask for it.
func isConsolePage(r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	return r.URL.Path == "/" || strings.HasPrefix(r.URL.Path, "/ui/")
}

func isWrite(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return true
}

// authorize checks the bearer token of a request. The comparison is of
// SHA-256 digests in constant time, so neither the token's bytes nor its
// length leak through timing.
func (s *Server) authorize(r *http.Request) (int, string) {
	if s.cfg.Token == "" {
		return 0, ""
	}
	auth := r.Header.Get("Authorization")
	scheme, token, found := strings.Cut(auth, " ")
	if auth == "" || !found || !strings.EqualFold(scheme, "Bearer") {
		return http.StatusUnauthorized, "this server requires a token for everything but the console's pages; send the header \"Authorization: Bearer <token>\" with turnlog serve's token: the one in its data directory's auth/http.token, or the one it was given (TURNLOG_TOKEN or --token)"
	}
	got := sha256.Sum256([]byte(strings.TrimSpace(token)))
	if subtle.ConstantTimeCompare(got[:], s.tokenHash[:]) != 1 {
		return http.StatusUnauthorized, "the bearer token is wrong; use turnlog serve's token: the one in its data directory's auth/http.token, or the one it was given (TURNLOG_TOKEN or --token)"
	}
	return 0, ""
}

// crossSite returns why a request that a browser may have sent on behalf of
// another site is refused, or "".
func (s *Server) crossSite(r *http.Request) string {
	if origin := r.Header.Get("Origin"); origin != "" {
		u, err := url.Parse(origin)
		if err != nil || !strings.EqualFold(u.Host, r.Host) {
			return fmt.Sprintf("cross-origin request from %q refused; call the API from its own origin or from a non-browser client", origin)
		}
	}
	if !s.allowedHost(r.Host) {
		return fmt.Sprintf("host %q refused: the API answers only requests addressed to localhost, an IP address or a name given to turnlog serve with --allowed-hosts (a page from another site that resolves its own name to this machine must not reach it)", r.Host)
	}
	if isWrite(r.Method) {
		switch site := r.Header.Get("Sec-Fetch-Site"); site {
		case "", "same-origin", "none":
		default:
			return fmt.Sprintf("write refused: the browser says a page of another site sent it (Sec-Fetch-Site: %s); change things from the console of this server, or from a non-browser client", site)
		}
	}
	return ""
}

// allowedHost reports whether a request addressed to hostport (the Host
// header) may be served.
func (s *Server) allowedHost(hostport string) bool {
	if localHost(hostport) {
		return true
	}
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(host, ".")
	for _, allowed := range s.cfg.AllowedHosts {
		if strings.EqualFold(host, strings.TrimSuffix(allowed, ".")) {
			return true
		}
	}
	return false
}

// localHost reports whether the Host header names localhost or an IP
// address, which a DNS-rebinding attack (a hostile name resolving to this
// machine) cannot produce.
func localHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	return strings.EqualFold(host, "localhost") || net.ParseIP(host) != nil
}

// writeJSON writes v as the response body with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// errorBody is every error response.
type errorBody struct {
	Error string `json:"error"`
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, errorBody{Error: msg})
}

// decodeBody decodes the request body into v: exactly one JSON value with
// no unknown field. On failure it has answered (400 or 413) and returns
// false.
func decodeBody(w http.ResponseWriter, r *http.Request, v any, example string) bool {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		// Read to the end: trailing data is an error, and so is a body that
		// goes on past the limit after a valid value.
		var extra json.RawMessage
		if err = dec.Decode(&extra); err == io.EOF {
			return true
		} else if err == nil {
			err = errors.New("more than one JSON value")
		}
	}
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the body is larger than %d bytes; send less", tooLarge.Limit))
	case errors.Is(err, io.EOF):
		writeError(w, http.StatusBadRequest, "the body is empty; send JSON like "+example)
	default:
		writeError(w, http.StatusBadRequest, fmt.Sprintf("malformed body: %v; send JSON like %s", err, example))
	}
	return false
}

// jsonErrorWriter turns the mux's plain-text error answers into JSON ones.
type jsonErrorWriter struct {
	http.ResponseWriter
	wrote bool
}

func (w *jsonErrorWriter) WriteHeader(code int) {
	if w.wrote {
		return
	}
	w.wrote = true
	msg := http.StatusText(code)
	switch code {
	case http.StatusNotFound:
		msg = "no such route; see the API routes in README.md"
	case http.StatusMethodNotAllowed:
		msg = "method not allowed here; the allowed methods are " + w.Header().Get("Allow")
	}
	writeError(w.ResponseWriter, code, msg)
}

func (w *jsonErrorWriter) Write(p []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	return len(p), nil // the mux's text is replaced by the JSON
}

// Running is a server started by Start.
type Running struct {
	srv  *http.Server
	addr net.Addr
	done chan struct{}
}

// Start listens on addr (HOST:PORT; port 0 picks a free one) and serves h
// in the background until ctx ends or Close is called. It returns once the
// address is bound, so a port in use is reported at once.
func Start(ctx context.Context, addr string, h http.Handler, logger *slog.Logger) (*Running, error) {
	if logger == nil {
		logger = slog.Default()
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("http api: listen on %s: %w; pick a free HOST:PORT or turn the API off with --http ''", addr, err)
	}
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		// No WriteTimeout: live streams (server-sent events) stay open.
		IdleTimeout: 2 * time.Minute,
		ErrorLog:    slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	// Streams end when the server shuts down (see shutdownOf); the
	// channel is registered before the first request can arrive.
	closing := make(chan struct{})
	srv.RegisterOnShutdown(sync.OnceFunc(func() { close(closing) }))
	srv.BaseContext = func(net.Listener) context.Context {
		return context.WithValue(context.Background(), shutdownKey{}, closing)
	}
	r := &Running{srv: srv, addr: ln.Addr(), done: make(chan struct{})}
	go func() {
		defer close(r.done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("http api stopped", "err", err)
		}
	}()
	go func() {
		select {
		case <-ctx.Done():
			_ = r.Close()
		case <-r.done:
		}
	}()
	return r, nil
}

// Addr is the address the server listens on.
func (r *Running) Addr() net.Addr { return r.addr }

// URL is the server's base URL, e.g. http://127.0.0.1:8080.
func (r *Running) URL() string { return "http://" + r.addr.String() }

// Close stops the server: no new requests, up to 5 s for those in flight.
// It is safe to call more than once.
func (r *Running) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := r.srv.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = r.srv.Close()
	}
	<-r.done
	return err
}
