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
	"strings"
	"sync"
	"time"
	"unicode/utf8"

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

// Store reads and writes the templates bucket of one installation. It is
// safe for concurrent use. It implements middlewares.TemplateSource, so a
// worker's template middleware reads the global template from it.
type Store struct {
	js     jetstream.JetStream
	bucket string

	mu sync.Mutex
	kv jetstream.KeyValue
}

// New returns the store of l's installation (its prefix decides the
// bucket). The bucket is created by eventlog.Open; it is looked up on first
// use, so New does no I/O.
func New(l *eventlog.Log) *Store {
	return &Store{js: l.JetStream(), bucket: l.Names().TemplatesBucket}
}

func (s *Store) bucketKV(ctx context.Context) (jetstream.KeyValue, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.kv != nil {
		return s.kv, nil
	}
	kv, err := s.js.KeyValue(ctx, s.bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, fmt.Errorf("templates: bucket %s does not exist; start `turnlog serve` (or any command that opens the log) to create it", s.bucket)
	}
	if err != nil {
		return nil, fmt.Errorf("templates: bucket %s: %w", s.bucket, err)
	}
	s.kv = kv
	return kv, nil
}

// Global returns the global template: the stored one, or Default when none
// was set.
func (s *Store) Global(ctx context.Context) (Global, error) {
	kv, err := s.bucketKV(ctx)
	if err != nil {
		return Global{}, err
	}
	e, err := kv.Get(ctx, GlobalKey)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		return Global{Text: Default, Default: true}, nil
	case err != nil:
		return Global{}, fmt.Errorf("templates: read the global template: %w", err)
	}
	return Global{Text: string(e.Value()), Revision: e.Revision(), Updated: e.Created()}, nil
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
	kv, err := s.bucketKV(ctx)
	if err != nil {
		return Global{}, err
	}
	if _, err := kv.Put(ctx, HashKeyPrefix+projector.HashText(text), []byte(text)); err != nil {
		return Global{}, fmt.Errorf("templates: store the template: %w", err)
	}
	rev, err := kv.Put(ctx, GlobalKey, []byte(text))
	if err != nil {
		return Global{}, fmt.Errorf("templates: store the global template: %w", err)
	}
	return Global{Text: text, Revision: rev, Updated: time.Now()}, nil
}

// ResetGlobal goes back to Default for new conversations.
func (s *Store) ResetGlobal(ctx context.Context) error {
	kv, err := s.bucketKV(ctx)
	if err != nil {
		return err
	}
	if err := kv.Delete(ctx, GlobalKey); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
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
// one stored by SetGlobal at any time, the current global template (even if
// written to the bucket by another tool), or Default. ok is false when no
// such template is known, for example a default of an older turnlog
// version.
func (s *Store) TemplateByHash(ctx context.Context, hash string) (text string, ok bool, err error) {
	if hash == projector.HashText(Default) {
		return Default, true, nil
	}
	if !validHash(hash) {
		return "", false, nil
	}
	kv, err := s.bucketKV(ctx)
	if err != nil {
		return "", false, err
	}
	e, err := kv.Get(ctx, HashKeyPrefix+hash)
	switch {
	case err == nil:
		if t := string(e.Value()); projector.HashText(t) == hash {
			return t, true, nil
		}
	case !errors.Is(err, jetstream.ErrKeyNotFound):
		return "", false, fmt.Errorf("templates: read template %s: %w", hash, err)
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
