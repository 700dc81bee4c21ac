// Package templates stores the system prompt templates of an installation
// in its TURNLOG_TEMPLATES key-value bucket: the global template that new
// conversations are prompted with, and every template ever set, by hash, so
// that a conversation can be prompted again (on compaction) from the very
// template it started with, whatever the global one has become since.
//
// When no global template was set, [Default] is used: one helpful-assistant
// line, the project's AGENTS.md when the conversation's working directory
// has one, and the working directory itself.
package templates

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/projector"
)

// Default is the global template until one is set. With neither an
// AGENTS.md nor a working directory it renders to exactly its first line.
const Default = "You are a helpful assistant." +
	"[if file:AGENTS.md]\n\nProject instructions (from AGENTS.md):\n\n[file:AGENTS.md][endif]" +
	"[if prompt:cwd]\n\nWorking directory: [prompt:cwd][endif]"

// Keys of the bucket. GlobalKey holds the global template; each template
// set is also kept under HashKeyPrefix + its hash (projector.HashText), so
// it stays readable after the global template changed.
const (
	GlobalKey     = "global"
	HashKeyPrefix = "sha256."
)

// MaxBytes bounds a template. A template is sent to the model at the start
// of every conversation: far beyond this it would crowd out the
// conversation itself.
const MaxBytes = 256 << 10

// ErrInvalid marks a template that cannot be stored (too large, not UTF-8).
// It is the caller's to fix; callers branch on it with errors.Is (the HTTP
// API answers 400).
var ErrInvalid = errors.New("invalid template")

// Validate reports why text cannot be a template, wrapping ErrInvalid, or
// nil. The template language itself has no errors: any text is a template.
func Validate(text string) error {
	if len(text) > MaxBytes {
		return fmt.Errorf("%w: it is %d bytes; the limit is %d, shorten it", ErrInvalid, len(text), MaxBytes)
	}
	if !utf8.ValidString(text) {
		return fmt.Errorf("%w: it is not valid UTF-8; save it as UTF-8 text", ErrInvalid)
	}
	return nil
}

// Global is the global template as stored.
type Global struct {
	// Text is the template source ("" means: no system prompt at all).
	Text string
	// Default is true when no template was set (or it was reset): Text is
	// then the built-in Default.
	Default bool
	// Revision is the bucket revision of the stored template (0 for the
	// default): a sequence over every write to the bucket (templates kept
	// by hash included), so it orders sets but does not count them.
	// Updated is when it was stored (zero for the default).
	Revision uint64
	Updated  time.Time
}

// Hash is the template's hash, as recorded in systemprompt.set.
func (g Global) Hash() string { return projector.HashText(g.Text) }

// MarkHeader is the header every template turnlog stores carries, with
// the key it was stored under as its value. Only a value so marked is
// read as a template: NATS checks a client's right to publish a request,
// never the reply subject it names, so a client allowed to read the
// bucket could have the server's answer to a request of its own (a
// JetStream API response, a copy of another key's template) stored under
// a template's key. Such an answer carries no mark, or the mark of
// another key, and is refused (ErrUnmarked).
const MarkHeader = "Turnlog-Template"

// ErrUnmarked is matched by the error for a stored template value that
// turnlog did not store under its key (see MarkHeader): it is never
// rendered. A template stored by a turnlog before the mark existed reads
// so too, until it is set again (turnlog template set).
// A retry does not help (it reports Permanent), so a request that needs
// the template fails at once, saying so, instead of coming again.
var ErrUnmarked error = permanentError("the stored template was not stored by turnlog under this key")

// permanentError is an error no retry cures: middlewares.TemplatePrompt
// fails the request on it rather than marking it transient.
type permanentError string

func (e permanentError) Error() string { return string(e) }

// Permanent says a retry does not help.
func (permanentError) Permanent() bool { return true }

// Store reads and writes the templates bucket of one installation. It is
// safe for concurrent use. It implements middlewares.TemplateSource, so a
// worker's template middleware reads the global template from it.
type Store struct {
	log    *eventlog.Log
	js     jetstream.JetStream
	bucket string

	mu     sync.Mutex
	stream jetstream.Stream
}

// New returns the store of l's installation (its prefix decides the
// bucket). The bucket is created by eventlog.Open; it is looked up on first
// use, so New does no I/O.
func New(l *eventlog.Log) *Store {
	return &Store{log: l, js: l.JetStream(), bucket: l.Names().TemplatesBucket}
}

// bucketStream returns the stream that holds the bucket: templates are
// read with their headers, which a key-value Get does not return.
func (s *Store) bucketStream(ctx context.Context) (jetstream.Stream, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stream != nil {
		return s.stream, nil
	}
	st, err := s.js.Stream(ctx, "KV_"+s.bucket)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, fmt.Errorf("templates: bucket %s does not exist; start `turnlog serve` (or any command that opens the log) to create it", s.bucket)
	}
	if err != nil {
		return nil, fmt.Errorf("templates: bucket %s: %w", s.bucket, err)
	}
	s.stream = st
	return st, nil
}

// subject is where the bucket stores key.
func (s *Store) subject(key string) string { return "$KV." + s.bucket + "." + key }

// stored is a template value as read, with its revision and time.
type stored struct {
	text     string
	revision uint64
	time     time.Time
}

// get reads key's value; ok is false when the key holds none (never set,
// or deleted). A value turnlog did not store under key is ErrUnmarked.
func (s *Store) get(ctx context.Context, key string) (v stored, ok bool, err error) {
	st, err := s.bucketStream(ctx)
	if err != nil {
		return stored{}, false, err
	}
	m, err := st.GetLastMsgForSubject(ctx, s.subject(key))
	switch {
	case errors.Is(err, jetstream.ErrMsgNotFound):
		return stored{}, false, nil
	case err != nil:
		return stored{}, false, err
	}
	if eventlog.StoredCopy(m.Header) {
		// The server's headers stored with it: a direct get's answer
		// (of this key's value or deletion, to roll it back) that a
		// client had stored here, not a value turnlog wrote. The value
		// it covers is still in the key's history.
		before, err := s.beforeCopies(ctx, key, m)
		if err != nil {
			return stored{}, false, err
		}
		if before == nil {
			return stored{}, false, fmt.Errorf("templates: %s (it is a copy of stored message %s, a JetStream answer another client had stored here, and the key's history holds no value before it): %w; it is not used, and nothing is rendered from it. Set the template again (`turnlog template set`)",
				key, m.Header.Get(jetstream.SequenceHeader), ErrUnmarked)
		}
		m = before
	}
	switch m.Header.Get(kvOperationHeader) {
	case kvDelete, kvPurge:
		// Deleted (turnlog template reset): the default, whoever wrote
		// the marker; the only one a client could have copied here is
		// the key's own latest.
		return stored{}, false, nil
	}
	if mark := m.Header.Get(MarkHeader); mark != key {
		why := "it has no " + MarkHeader + " header"
		if mark != "" {
			why = fmt.Sprintf("it is marked as stored under %q", mark)
		}
		return stored{}, false, fmt.Errorf("templates: %s (message %d, %s): %w; it is not used, and nothing is rendered from it. "+
			"Another NATS client's message, or a template stored by a turnlog older than the mark: set the template again (`turnlog template set`)",
			key, m.Sequence, why, ErrUnmarked)
	}
	return stored{text: string(m.Data), revision: m.Sequence, time: m.Time}, true, nil
}

// beforeCopies is key's newest message in the bucket's history that is
// not a stored copy, older than copy (the key's latest, a copy), or nil
// when the history holds none (the bucket keeps 16 revisions a key, so
// more copies than that push the value out). The copy is logged: someone
// with a key that may send JetStream requests on the bucket put it there.
func (s *Store) beforeCopies(ctx context.Context, key string, copy *jetstream.RawStreamMsg) (*jetstream.RawStreamMsg, error) {
	at, ok := eventlog.StoredSequence(copy.Header)
	if !ok {
		at = copy.Sequence
	}
	var newest *jetstream.RawStreamMsg
	for m, err := range s.log.SubjectHistory(ctx, "KV_"+s.bucket, s.subject(key), at) {
		if err != nil {
			return nil, fmt.Errorf("templates: %s: its latest message (%d) is a copy another client had stored, and reading the value before it failed: %w", key, at, err)
		}
		if !eventlog.StoredCopy(m.Header) {
			newest = m
		}
	}
	if newest != nil {
		slog.Warn("templates: the key's latest message is a copy of a JetStream answer another client had stored there; the value before it is used",
			"key", key, "copy", at, "used", newest.Sequence)
	}
	return newest, nil
}

// The key-value store's header for a deleted key, and its values.
const (
	kvOperationHeader = "KV-Operation"
	kvDelete          = "DEL"
	kvPurge           = "PURGE"
)

// put stores text under key, marked (MarkHeader), and returns its
// revision. op is "" for a value, kvDelete for a deletion.
func (s *Store) put(ctx context.Context, key, text, op string) (uint64, error) {
	if _, err := s.bucketStream(ctx); err != nil {
		return 0, err
	}
	msg := nats.NewMsg(s.subject(key))
	msg.Header.Set(MarkHeader, key)
	if op != "" {
		msg.Header.Set(kvOperationHeader, op)
	}
	msg.Data = []byte(text)
	ack, err := s.js.PublishMsg(ctx, msg)
	if err != nil {
		return 0, err
	}
	return ack.Sequence, nil
}

// Global returns the global template: the stored one, or Default when none
// was set. A stored value turnlog did not store is ErrUnmarked.
func (s *Store) Global(ctx context.Context) (Global, error) {
	v, ok, err := s.get(ctx, GlobalKey)
	switch {
	case err != nil && errors.Is(err, ErrUnmarked):
		return Global{}, err
	case err != nil:
		return Global{}, fmt.Errorf("templates: read the global template: %w", err)
	case !ok:
		return Global{Text: Default, Default: true}, nil
	}
	return Global{Text: v.text, Revision: v.revision, Updated: v.time}, nil
}

// SetGlobal makes text the global template: conversations started from now
// on use it, conversations already started keep their prompt until their
// next compaction renders it again (see middlewares.TemplatePromptConfig's
// KeepTemplate). An empty text means
// new conversations get no system prompt at all. The template is first
// stored under its hash, so that it can be found again by conversations
// started with it after it is replaced.
func (s *Store) SetGlobal(ctx context.Context, text string) (Global, error) {
	if err := Validate(text); err != nil {
		return Global{}, err
	}
	if _, err := s.put(ctx, HashKeyPrefix+projector.HashText(text), text, ""); err != nil {
		return Global{}, fmt.Errorf("templates: store the template: %w", err)
	}
	rev, err := s.put(ctx, GlobalKey, text, "")
	if err != nil {
		return Global{}, fmt.Errorf("templates: store the global template: %w", err)
	}
	return Global{Text: text, Revision: rev, Updated: time.Now()}, nil
}

// ResetGlobal goes back to Default for new conversations.
func (s *Store) ResetGlobal(ctx context.Context) error {
	if _, err := s.put(ctx, GlobalKey, "", kvDelete); err != nil {
		return fmt.Errorf("templates: reset the global template: %w", err)
	}
	return nil
}

// Template returns the text of the global template. It is what the
// template middleware renders on a conversation's first turn.
func (s *Store) Template(ctx context.Context) (string, error) {
	g, err := s.Global(ctx)
	return g.Text, err
}

// TemplateByHash returns the template whose projector.HashText is hash:
// one stored by SetGlobal at any time, the current global template, or
// Default. ok is false when no such template is known, for example a
// default of an older turnlog version.
func (s *Store) TemplateByHash(ctx context.Context, hash string) (text string, ok bool, err error) {
	if hash == projector.HashText(Default) {
		return Default, true, nil
	}
	if !validHash(hash) {
		return "", false, nil
	}
	v, found, err := s.get(ctx, HashKeyPrefix+hash)
	switch {
	case err != nil && !errors.Is(err, ErrUnmarked):
		return "", false, fmt.Errorf("templates: read template %s: %w", hash, err)
	case found && projector.HashText(v.text) == hash:
		return v.text, true, nil
	}
	g, err := s.Global(ctx)
	if err != nil {
		return "", false, err
	}
	if g.Hash() == hash {
		return g.Text, true, nil
	}
	return "", false, nil
}

// validHash reports whether h looks like a hex SHA-256, so that no other
// string can be turned into a bucket key.
func validHash(h string) bool {
	return len(h) == 64 && strings.Trim(h, "0123456789abcdef") == ""
}
