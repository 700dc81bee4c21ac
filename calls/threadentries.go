package calls

// The threading index's entries that are not states: the imported calls
// (import --calls run again records nothing twice) and the erasures (a
// gateway's spool records nothing an erase removed).

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"
)

// Imported returns the conversation the imported call named by key (a
// hash of its line, see Call.Import) was recorded in; ok is false when it
// was not imported. pending is true when an import began to record it
// there and did not note it recorded (ImportPending): it may be there
// whole, in part (its input without its outcome) or not at all.
func (x *Threads) Imported(ctx context.Context, key string) (conv string, pending, ok bool, err error) {
	v, ok, err := x.store.Get(ctx, importedKey(key))
	if err != nil {
		return "", false, false, fmt.Errorf("look up an imported call: %w", err)
	}
	if conv, found := strings.CutPrefix(v, pendingPrefix); found {
		return conv, true, ok, nil
	}
	return v, false, ok, nil
}

// ErasedKey is the entry that says when conversation conv was erased
// (RFC 3339, UTC): a call a gateway kept in its spool while NATS was away,
// made before that time, is not recorded into it when NATS is back. It
// names the conversation by a hash: an erased conversation's ID (which a
// client may have chosen) is not kept.
func ErasedKey(conv string) string {
	h := sha256.Sum256([]byte(conv))
	return "e." + hex.EncodeToString(h[:])
}

// ErasedAt returns when conversation conv was last erased; ok is false
// when it never was (or its entry is not one this code wrote).
func (x *Threads) ErasedAt(ctx context.Context, conv string) (at time.Time, ok bool, err error) {
	v, ok, err := x.store.Get(ctx, ErasedKey(conv))
	if err != nil || !ok {
		return time.Time{}, false, err
	}
	at, err = time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, false, nil
	}
	return at, true, nil
}

// pendingPrefix marks an imported call's entry as pending (a conversation
// ID holds no space).
const pendingPrefix = "pending "

// ImportPending notes that the imported call named by key is about to be
// recorded in conv, before anything of it is stored: an import that stops
// before RecordImported (a crash) leaves the note, and the next import
// looks for the call in conv instead of recording it a second time.
func (x *Threads) ImportPending(ctx context.Context, key, conv string) error {
	if err := x.store.Put(ctx, map[string]string{importedKey(key): pendingPrefix + conv}); err != nil {
		return fmt.Errorf("note an imported call: %w", err)
	}
	return nil
}

// RecordImported notes that the imported call named by key was recorded
// in conv, so that importing it again records nothing.
func (x *Threads) RecordImported(ctx context.Context, key, conv string) error {
	if err := x.store.Put(ctx, map[string]string{importedKey(key): conv}); err != nil {
		return fmt.Errorf("note an imported call: %w", err)
	}
	return nil
}
