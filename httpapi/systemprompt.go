package httpapi

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"strconv"

	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/middlewares"
	"github.com/turnlog/turnlog/middlewares/template"
	"github.com/turnlog/turnlog/projector"
	"github.com/turnlog/turnlog/templates"
)

// TemplateBody is the body of GET and PUT /system-prompt. Template is the
// global template's source ("" means new conversations get no system
// prompt). Default, in answers only, says that Template is the built-in
// default: no template was set, or (Unavailable set) the templates store
// could not be read, so whether one was set is unknown.
type TemplateBody struct {
	Template    *string `json:"template"`
	Default     bool    `json:"default,omitempty"`
	Unavailable string  `json:"unavailable,omitempty"`
}

// SetTemplateResponse is the answer of PUT /system-prompt: the template as
// stored, and the suspicious constructs template.Lint found in it
// (unknown variables, unmatched [if]/[else]/[endif], unterminated tags),
// each with its position; [] when there are none. The template is stored
// whatever its warnings: they are for the person who typed it.
type SetTemplateResponse struct {
	Template *string            `json:"template"`
	Warnings []template.Warning `json:"warnings"`
}

// VariablesBody is the answer of GET /system-prompt/variables.
type VariablesBody struct {
	Variables []template.Variable `json:"variables"`
}

// RenderRequest is the body of POST /system-prompt/render: a template
// (the stored global one when absent) and what a conversation would
// provide. Cwd must be absolute when set.
type RenderRequest struct {
	Template       *string `json:"template,omitempty"`
	Cwd            string  `json:"cwd,omitempty"`
	Model          string  `json:"model,omitempty"`
	ConversationID string  `json:"conversation_id,omitempty"`
}

// RenderResponse is the answer of POST /system-prompt/render: the prompt a
// conversation would get ("" for none), the variables it used, as
// systemprompt.set would record them, and the template's warnings as PUT
// would answer them, so an editor shows them while the template is typed.
type RenderResponse struct {
	Prompt    string             `json:"prompt"`
	Variables map[string]string  `json:"variables"`
	Warnings  []template.Warning `json:"warnings"`
}

// lint is template.Lint, never nil: the JSON says [] rather than null.
func lint(src string) []template.Warning {
	if ws := template.Lint(src); ws != nil {
		return ws
	}
	return []template.Warning{}
}

const (
	templateExample = `{"template": "You are a helpful assistant."}`
	renderExample   = `{"template": "Branch: [git:branch]", "cwd": "/path/to/project"}`
)

func (s *Server) systemPromptRoutes() {
	s.mux.HandleFunc("GET /system-prompt", s.getTemplate)
	s.mux.HandleFunc("PUT /system-prompt", s.putTemplate)
	s.mux.HandleFunc("GET /system-prompt/variables", s.getVariables)
	s.mux.HandleFunc("POST /system-prompt/render", s.render)
}

// HeaderTemplateSource says where the template of GET /system-prompt
// comes from: TemplateSourceStore when the templates store answered (the
// template set, or the default when none is), TemplateSourceDefault when
// the store could not be read and the answer is the built-in default
// instead (the seed's contract: GET still answers, with the default).
const (
	HeaderTemplateSource  = "Turnlog-Template-Source"
	TemplateSourceStore   = "store"
	TemplateSourceDefault = "default"
)

func (s *Server) getTemplate(w http.ResponseWriter, r *http.Request) {
	g, err := s.cfg.Templates.Global(r.Context())
	if err != nil {
		// A template outage: answer the default, and say so.
		s.cfg.Logger.Warn("http api: the templates store is unavailable; GET /system-prompt answers the built-in default", "err", err)
		w.Header().Set(HeaderTemplateSource, TemplateSourceDefault)
		text := templates.Default
		writeJSON(w, http.StatusOK, TemplateBody{Template: &text, Default: true,
			Unavailable: "the templates store cannot be read (" + err.Error() + "); this is the built-in default, not necessarily the template in use"})
		return
	}
	w.Header().Set(HeaderTemplateSource, TemplateSourceStore)
	writeJSON(w, http.StatusOK, TemplateBody{Template: &g.Text, Default: g.Default})
}

func (s *Server) putTemplate(w http.ResponseWriter, r *http.Request) {
	var body TemplateBody
	if !decodeBody(w, r, &body, templateExample) {
		return
	}
	if body.Template == nil {
		writeError(w, http.StatusBadRequest, `the body has no "template" key; send `+templateExample+` ("" for no system prompt)`)
		return
	}
	g, err := s.cfg.Templates.SetGlobal(r.Context(), *body.Template)
	if errors.Is(err, templates.ErrInvalid) {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if err != nil {
		s.unavailable(w, "store the global template", err)
		return
	}
	warnings := lint(g.Text)
	s.cfg.Logger.Info("global template set", "bytes", len(g.Text), "hash", projector.HashText(g.Text), "revision", g.Revision,
		"warnings", len(warnings), "remote", r.RemoteAddr)
	writeJSON(w, http.StatusOK, SetTemplateResponse{Template: &g.Text, Warnings: warnings})
}

func (s *Server) getVariables(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, VariablesBody{Variables: template.Catalog()})
}

// render resolves a template as a conversation would, for a live preview.
// It reads files and runs git in the directory the caller names, so it
// needs the token, reads only where the workers may (Config.CwdRoots:
// else 403) and never in Config.DenyDirs, whose files are as absent as
// missing ones.
func (s *Server) render(w http.ResponseWriter, r *http.Request) {
	var req RenderRequest
	if !decodeBody(w, r, &req, renderExample) {
		return
	}
	if req.Cwd != "" && !filepath.IsAbs(req.Cwd) {
		writeError(w, http.StatusBadRequest, `"cwd" `+strconv.Quote(req.Cwd)+` is relative; send an absolute directory`)
		return
	}
	var src string
	if req.Template != nil {
		src = *req.Template
		if err := templates.Validate(src); err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
	} else {
		g, err := s.cfg.Templates.Global(r.Context())
		if err != nil {
			s.unavailable(w, "read the global template", err)
			return
		}
		src = g.Text
	}
	if req.Cwd != "" && len(s.cfg.CwdRoots) > 0 && middlewares.ReadsCwd(template.Parse(src).Variables()) {
		// The workers would refuse this cwd; a preview must not read
		// where a conversation may not.
		if err := middlewares.CheckCwd(req.Cwd, s.cfg.CwdRoots); err != nil {
			writeError(w, http.StatusForbidden, err.Error())
			return
		}
	}
	ctx, cancel := context.WithTimeout(r.Context(), template.DefaultResolveTimeout)
	defer cancel()
	prompt, used, _, err := template.RenderWith(ctx, src, template.Env{Cwd: req.Cwd, Model: req.Model, ConversationID: req.ConversationID,
		DenyDirs: s.cfg.DenyDirs})
	if errors.Is(err, template.ErrTooLarge) {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if err != nil {
		s.serverError(w, "render the template", err)
		return
	}
	if used == nil {
		used = template.Values{}
	}
	writeJSON(w, http.StatusOK, RenderResponse{Prompt: prompt, Variables: used, Warnings: lint(src)})
}

// unavailable answers 503 when the templates store cannot be reached (the
// seed's contract for PUT /system-prompt), and logs it.
func (s *Server) unavailable(w http.ResponseWriter, what string, err error) {
	s.cfg.Logger.Error("http api: "+what, "err", err)
	w.Header().Set("Retry-After", "5")
	writeError(w, http.StatusServiceUnavailable, what+": the templates store is unavailable: "+err.Error()+"; check that NATS is reachable and try again")
}

// serverError answers 500 for a failure that is not the caller's, and logs
// it.
func (s *Server) serverError(w http.ResponseWriter, what string, err error) {
	if errors.Is(err, eventlog.ErrStorageFull) {
		// Not the server failing: nothing can be stored until space is
		// freed, and the error says how.
		s.cfg.Logger.Warn("http api: "+what, "err", err)
		w.Header().Set("Retry-After", "30")
		writeError(w, http.StatusServiceUnavailable, what+": "+err.Error())
		return
	}
	s.cfg.Logger.Error("http api: "+what, "err", err)
	writeError(w, http.StatusInternalServerError, what+": "+err.Error()+"; check that NATS is reachable and try again")
}
