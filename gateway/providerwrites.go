package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/turnlog/turnlog/calls"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
)

// Changes an app makes to a conversation OpenAI holds (the Conversations
// API) beside its model calls: items put in when it is created or later,
// an item deleted. The model reads that history before each call's input,
// so the gateway records the changes in the turnlog conversation that
// records the provider's (calls.ProviderConversationID), once the provider
// made them, before the app gets the answer (as a call's outcome is).

// providerWrite is such a change, as its request shows it.
type providerWrite struct {
	kind string // "created", "added" or "deleted" (the metric's label)
	conv string // the provider's conversation ID ("" when created: from the answer)
	item string // the deleted item's ID
}

// providerWriteOf reports whether r changes a conversation the provider
// holds, and how.
func providerWriteOf(r *http.Request) (providerWrite, bool) {
	rest, ok := strings.CutPrefix(strings.TrimSuffix(r.URL.Path, "/"), "/v1/conversations")
	if !ok {
		return providerWrite{}, false
	}
	parts := strings.Split(strings.TrimPrefix(rest, "/"), "/")
	switch {
	case r.Method == http.MethodPost && rest == "":
		return providerWrite{kind: "created"}, true
	case r.Method == http.MethodPost && len(parts) == 2 && parts[0] != "" && parts[1] == "items":
		return providerWrite{kind: "added", conv: parts[0]}, true
	case r.Method == http.MethodDelete && len(parts) == 3 && parts[0] != "" && parts[1] == "items" && parts[2] != "":
		return providerWrite{kind: "deleted", conv: parts[0], item: parts[2]}, true
	}
	return providerWrite{}, false
}

// forwardProviderWrite forwards a change to a provider's conversation and
// records it once the provider made it: the app gets the provider's
// answer after the record is stored, or 503 saying the change was made
// but not recorded. While NATS is away it is refused (503) unless the
// gateway forwards unrecorded calls (--record-optional), and then logged.
func (g *Gateway) forwardProviderWrite(w http.ResponseWriter, r *http.Request, proxy http.Handler, pw providerWrite) {
	count := func(outcome string) { g.cfg.Metrics.providerWrites.WithLabelValues(pw.kind, outcome).Inc() }
	if !g.cfg.Connected() {
		if g.spool == nil {
			g.cfg.Metrics.errors.WithLabelValues("unavailable").Inc()
			writeError(w, false, http.StatusServiceUnavailable,
				"turnlog cannot record this change to the provider's conversation: its NATS server is unreachable, and nothing is forwarded unrecorded; retry shortly")
			return
		}
		g.cfg.Logger.Warn("gateway: NATS is unreachable: a change to a provider's conversation was forwarded unrecorded (--record-optional); the record lacks it",
			"method", r.Method, "path", r.URL.Path)
		count("unrecorded")
		proxy.ServeHTTP(w, r)
		return
	}
	var body []byte
	var items []calls.Item
	var parseErr error
	if r.Method == http.MethodPost {
		var err error
		body, err = readBody(r, g.cfg.MaxBody)
		if err != nil {
			writeError(w, false, http.StatusBadRequest, "reading the request body: "+err.Error())
			return
		}
		if int64(len(body)) > g.cfg.MaxBody {
			g.cfg.Metrics.errors.WithLabelValues("too_large").Inc()
			writeError(w, false, http.StatusRequestEntityTooLarge,
				fmt.Sprintf("the request body is larger than this gateway's limit of %d bytes (--max-body); nothing was forwarded", g.cfg.MaxBody))
			return
		}
		items, parseErr = calls.ParseItems(body)
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	}
	answer := &heldResponse{header: http.Header{}, limit: g.cfg.MaxBody}
	proxy.ServeHTTP(answer, r)
	if answer.status/100 != 2 {
		answer.send(w) // refused or failed: nothing changed
		return
	}
	if answer.over {
		g.cfg.Logger.Error("gateway: a change to a provider's conversation was made but not recorded: the provider's answer is larger than --max-body", "path", r.URL.Path)
		count("unrecorded")
		writeError(w, false, http.StatusBadGateway, "the provider made this change, but its answer is larger than this gateway's limit of "+
			strconv.FormatInt(g.cfg.MaxBody, 10)+" bytes (--max-body), so turnlog did not record it and cannot pass the answer on")
		return
	}
	if parseErr != nil {
		// The provider took what the gateway cannot read: the app gets
		// its answer, the log says what is missing.
		g.cfg.Logger.Warn("gateway: a change to a provider's conversation was made but not recorded: its items are not the API's shape; the record lacks it",
			"method", r.Method, "path", r.URL.Path, "err", parseErr)
		count("unparsed")
		answer.send(w)
		return
	}
	conv := pw.conv
	if pw.kind == "created" {
		var c struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(answer.body.Bytes(), &c) != nil || c.ID == "" {
			g.cfg.Logger.Warn("gateway: a created provider conversation's answer names no ID; its items are not recorded", "path", r.URL.Path)
			count("unparsed")
			answer.send(w)
			return
		}
		conv = c.ID
	}
	if len(items) == 0 && pw.kind == "created" {
		count("recorded") // nothing in it yet: its first call starts it
		answer.header.Set(ConversationHeader, calls.ProviderConversationID(conv))
		answer.send(w)
		return
	}
	write := &calls.ProviderWrite{By: r.Method + " " + r.URL.Path}
	ids := calls.ResponseItemIDs(answer.body.Bytes())
	placed := true
	turn, err := g.rec.appendPlanned(r.Context(), calls.ProviderConversationID(conv), func(turn *projector.Turn) ([]events.Event, error) {
		if pw.kind == "deleted" {
			evs, ok, err := calls.PlanItemDeleted(turn, write, pw.item)
			placed = ok
			return evs, err
		}
		return calls.PlanItemsAdded(turn, write, items, ids)
	})
	g.rec.cache.put(turn)
	if errors.Is(err, eventlog.ErrTooLarge) {
		// As a model call's content too large to store: the app gets the
		// provider's answer (a retry would make the change twice there),
		// and the log and the metrics say what the record lacks; the
		// record marks the place of the items by their hash.
		if pw.kind == "deleted" {
			g.cfg.Logger.Warn("gateway: a change to a provider's conversation is too large to store; the app got the provider's answer, the record lacks the change",
				"conversation", conv, "err", err)
		} else {
			g.recordUnstored(r, conv, write, len(items), body)
		}
		count("unrecorded")
		answer.header.Set(ConversationHeader, calls.ProviderConversationID(conv))
		answer.send(w)
		return
	}
	if err != nil {
		g.cfg.Logger.Error("gateway: a change to a provider's conversation was made but not recorded", "conversation", conv, "err", err)
		count("unrecorded")
		g.cfg.Metrics.errors.WithLabelValues("unavailable").Inc()
		writeError(w, false, http.StatusServiceUnavailable, "the provider made this change to conversation "+conv+
			", but turnlog could not record it, so its answer is withheld: "+err.Error())
		return
	}
	if !placed {
		g.cfg.Logger.Warn("gateway: the app deleted an item the record cannot place (added before the app pointed at turnlog, or a call's input item, whose ID the provider keeps to itself); the record still holds it",
			"conversation", conv, "item", pw.item)
		count("unplaced")
	} else {
		count("recorded")
	}
	answer.header.Set(ConversationHeader, calls.ProviderConversationID(conv))
	answer.send(w)
}

// unstoredItems is why items put into a provider's conversation are not
// in its record (calls.MetaUnstored).
const unstoredItems = "too large to store: larger than one NATS message (raise the server's max_payload, or have the app send large attachments by URL or file ID); recorded by the SHA-256 of the request's bytes alone"

// recordUnstored marks, in the record of the provider's conversation
// conv, the place of n items that write (whose request body was body)
// put into it and that are too large to store: the record's reader sees
// that the provider holds items it lacks, and by what bytes
// (calls.PlanItemsUnstored). Where the mark cannot be stored either, the
// log's warning alone says what the record lacks.
func (g *Gateway) recordUnstored(r *http.Request, conv string, write *calls.ProviderWrite, n int, body []byte) {
	u := calls.UnstoredItems{Items: n, Wire: calls.WireSHA256(body), Bytes: len(body), Reason: unstoredItems}
	turn, err := g.rec.appendPlanned(r.Context(), calls.ProviderConversationID(conv), func(turn *projector.Turn) ([]events.Event, error) {
		return calls.PlanItemsUnstored(turn, write, u)
	})
	g.rec.cache.put(turn)
	switch {
	case errors.Is(err, eventlog.ErrTooLarge):
		g.cfg.Logger.Warn("gateway: a change to a provider's conversation is too large to store, and so is the mark of its place; the app got the provider's answer, the record lacks the change and does not say so",
			"conversation", conv, "method", r.Method, "path", r.URL.Path, "items", n, "bytes", len(body), "sha256", u.Wire, "err", err)
		return
	case err != nil:
		g.cfg.Logger.Error("gateway: a change to a provider's conversation is too large to store, and the mark of its place could not be stored; the app got the provider's answer, the record lacks the change and does not say so",
			"conversation", conv, "method", r.Method, "path", r.URL.Path, "items", n, "bytes", len(body), "sha256", u.Wire, "err", err)
		return
	}
	g.cfg.Logger.Warn("gateway: a change to a provider's conversation is too large to store; the app got the provider's answer, the record marks its place by the hash of its bytes alone",
		"conversation", conv, "method", r.Method, "path", r.URL.Path, "items", n, "bytes", len(body), "sha256", u.Wire)
}
