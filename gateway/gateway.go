package gateway

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/turnlog/turnlog/calls"
	"github.com/turnlog/turnlog/events"
)

// Gateway is the recording gateway as an http.Handler for /v1/ paths.
type Gateway struct {
	cfg       Config
	tokenHash [sha256.Size]byte
	index     *calls.Index
	openai    *httputil.ReverseProxy
	anthropic *httputil.ReverseProxy
}

// New builds a Gateway.
func New(cfg Config) (*Gateway, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	g := &Gateway{cfg: cfg, tokenHash: sha256.Sum256([]byte(cfg.Token)), index: calls.NewIndex(cfg.IndexSize)}
	var err error
	if g.openai, err = g.proxy(cfg.OpenAIUpstream, true); err != nil {
		return nil, err
	}
	if g.anthropic, err = g.proxy(cfg.AnthropicUpstream, false); err != nil {
		return nil, err
	}
	return g, nil
}

// proxy forwards to base. An OpenAI base URL ends with /v1 as its SDK
// takes it, so the route's /v1 is dropped; Anthropic's does not.
func (g *Gateway) proxy(base string, dropV1 bool) (*httputil.ReverseProxy, error) {
	u, err := url.Parse(base)
	if err != nil {
		return nil, err
	}
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			path := pr.In.URL.Path
			if dropV1 {
				path = strings.TrimPrefix(path, "/v1")
			}
			pr.Out.URL.Scheme, pr.Out.URL.Host = u.Scheme, u.Host
			pr.Out.URL.Path = strings.TrimSuffix(u.Path, "/") + path
			pr.Out.URL.RawPath = ""
			pr.Out.Host = u.Host
			stripTurnlog(pr.Out.Header)
			// The response is read to be recorded: it must come as the
			// provider wrote it, not compressed for the client.
			pr.Out.Header.Del("Accept-Encoding")
		},
		Transport:      g.cfg.Transport,
		FlushInterval:  -1,
		ModifyResponse: g.modifyResponse,
		ErrorHandler:   g.upstreamError,
		ErrorLog:       nil,
	}, nil
}

// state is one call in flight, carried by its request's context.
type state struct {
	api       calls.API
	anthropic bool
	conv      string
	call      *calls.Call
	started   time.Time
	input     chan inputResult // the first step, recorded while upstream works
	tee       *tee
	recorded  bool
}

type stateKey struct{}

func stateOf(ctx context.Context) *state {
	s, _ := ctx.Value(stateKey{}).(*state)
	return s
}

// ServeHTTP serves /v1/ paths: the three recorded routes, everything else
// forwarded unrecorded.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	api, recorded := calls.APIOfPath(r.URL.Path)
	recorded = recorded && r.Method == http.MethodPost
	anthropic := api.Anthropic()
	if !recorded {
		anthropic = r.Header.Get("X-Api-Key") != "" || r.Header.Get("Anthropic-Version") != ""
		api = calls.ChatCompletions
		if anthropic {
			api = calls.Messages
		}
	}
	if msg := g.authorize(r.Header, anthropic, g.cfg.providerKey(api)); msg != "" {
		if !anthropic {
			w.Header().Set("WWW-Authenticate", `Bearer realm="turnlog"`)
		}
		writeError(w, anthropic, http.StatusUnauthorized, msg)
		return
	}
	proxy := g.openai
	if anthropic {
		proxy = g.anthropic
	}
	if !recorded {
		proxy.ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, g.cfg.MaxBody+1))
	if err != nil {
		writeError(w, anthropic, http.StatusBadRequest, "reading the request body: "+err.Error())
		return
	}
	if int64(len(body)) > g.cfg.MaxBody {
		writeError(w, anthropic, http.StatusRequestEntityTooLarge,
			fmt.Sprintf("the request body is larger than this gateway's limit of %d bytes (--max-body); nothing was forwarded", g.cfg.MaxBody))
		return
	}
	if !g.cfg.Connected() {
		writeError(w, anthropic, http.StatusServiceUnavailable,
			"turnlog cannot record this call: its NATS server is unreachable, and calls are not forwarded unrecorded; retry shortly")
		return
	}
	st, msg := g.begin(r, api, body)
	if msg != "" {
		writeError(w, anthropic, http.StatusBadRequest, msg)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	r = r.WithContext(context.WithValue(r.Context(), stateKey{}, st))
	proxy.ServeHTTP(w, r)
	if !st.recorded {
		// The proxy ended without a response body to finish (an error
		// handled, or a panic recovered by net/http).
		g.finish(r.Context(), st, calls.Outcome{Failure: "the call ended without a response"})
	}
}

// begin parses the call, finds its conversation and starts recording its
// input. msg is a 400's message (a conversation ID that cannot be one).
func (g *Gateway) begin(r *http.Request, api calls.API, body []byte) (*state, string) {
	c := &calls.Call{ID: ulid.Make().String(), Wire: calls.WireSHA256(body)}
	req, err := calls.ParseRequest(api, body)
	if err != nil {
		c.Unparsed = err.Error()
	} else {
		c.Request = req
	}
	st := &state{api: api, anthropic: api.Anthropic(), call: c, started: time.Now(), input: make(chan inputResult, 1)}
	var fork *calls.Ref
	switch named := r.Header.Get(ConversationHeader); {
	case named != "":
		if err := events.ValidateConversationID(named); err != nil {
			return nil, "the " + ConversationHeader + " header: " + err.Error()
		}
		st.conv, c.Threading = named, calls.ThreadExplicit
	case req != nil && req.PreviousResponseID != "":
		if conv, ok := g.index.Response(req.PreviousResponseID); ok {
			st.conv, c.Threading = conv, calls.ThreadExplicit
		}
	case req != nil:
		if ref, latest, ok := g.index.Find(req.RequestBlocks()); ok {
			c.Threading = calls.ThreadInferred
			if latest {
				st.conv = ref.Conversation
			} else {
				fork = &ref
			}
		}
	}
	if st.conv == "" {
		st.conv = ulid.Make().String()
		if c.Threading == "" {
			c.Threading = calls.ThreadNew
		}
	}
	go func() { st.input <- g.recordInput(context.WithoutCancel(r.Context()), st, fork) }()
	return st, ""
}

// modifyResponse marks the response with its conversation and wraps its
// body so that the call is recorded as it passes.
func (g *Gateway) modifyResponse(resp *http.Response) error {
	st := stateOf(resp.Request.Context())
	if st == nil {
		return nil // a path forwarded unrecorded
	}
	resp.Header.Set(ConversationHeader, st.conv)
	resp.Header.Set("X-Accel-Buffering", "no")
	sse := strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")
	st.tee = newTee(resp.Body, st, sse, resp.StatusCode, int(g.cfg.MaxBody), func(o calls.Outcome) error {
		return g.finish(resp.Request.Context(), st, o)
	})
	resp.Body = st.tee
	return nil
}

// upstreamError answers a call the upstream never answered (unreachable,
// refused, timed out before its headers) with 502, and records it failed.
func (g *Gateway) upstreamError(w http.ResponseWriter, r *http.Request, err error) {
	st := stateOf(r.Context())
	anthropic := st != nil && st.anthropic
	reason := "the upstream did not answer: " + err.Error()
	if errors.Is(err, context.Canceled) {
		reason = "the client disconnected before the upstream answered"
	}
	if st != nil && !st.recorded {
		if ferr := g.finish(r.Context(), st, calls.Outcome{Failure: reason, Transient: true}); ferr != nil {
			g.cfg.Logger.Error("gateway: call not recorded", "conversation", st.conv, "err", ferr)
		}
	}
	if errors.Is(err, context.Canceled) {
		return
	}
	if st != nil {
		w.Header().Set(ConversationHeader, st.conv)
	}
	writeError(w, anthropic, http.StatusBadGateway, "turnlog's gateway could not reach the provider: "+err.Error())
}

// statusFailure is the reason a non-2xx answer records.
func statusFailure(status int, body []byte) string {
	msg := calls.ErrorMessage(body)
	if msg == "" {
		msg = strings.TrimSpace(string(body))
		if len(msg) > 200 {
			msg = msg[:200] + "…"
		}
	}
	return "upstream answered " + strconv.Itoa(status) + " " + http.StatusText(status) + ": " + msg
}
