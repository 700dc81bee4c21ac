package eventlog

// This file holds how a write refused for want of storage is told apart
// from every other failure: the caller must neither retry it as if the
// server were away nor end a request over it.

import (
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// ErrStorageFull is returned by every write (an append, a chat request, a
// dead letter) that JetStream refused because its storage is full: the
// server's max_store (turnlog serve --max-store) or the account's limit is
// reached. Nothing was stored. Writes succeed again once space is freed
// (old data removed, or the limit raised); a worker keeps a request it
// holds until then rather than fail it.
var ErrStorageFull = errors.New("JetStream storage is full")

// JetStream's codes for a write refused for want of storage.
const (
	// codeInsufficientResources (503) is a publish past the server's
	// max_store.
	codeInsufficientResources jetstream.ErrorCode = 10023
	// codeStorageResourcesExceeded (500) is a stream whose reservation
	// (its max bytes) does not fit in what is left of max_store.
	codeStorageResourcesExceeded jetstream.ErrorCode = 10047
	// codeAccountResourcesExceeded (400) is a publish past the account's
	// storage limit.
	codeAccountResourcesExceeded jetstream.ErrorCode = 10002
)

// StorageFullError is ErrStorageFull with the server's own words. It
// matches ErrStorageFull and the *jetstream.APIError it wraps.
type StorageFullError struct {
	API *jetstream.APIError
}

func (e *StorageFullError) Error() string {
	return fmt.Sprintf("%v: the server says %q (code %d); free space (erase conversations, purge dead letters, or free disk space) or raise --max-store",
		ErrStorageFull, e.API.Description, e.API.ErrorCode)
}

// Is makes errors.Is(err, ErrStorageFull) true.
func (e *StorageFullError) Is(target error) bool { return target == ErrStorageFull }

// Unwrap returns the server's error.
func (e *StorageFullError) Unwrap() error { return e.API }

// storageFull returns err as a *StorageFullError when it is JetStream
// refusing a write for want of storage, else err itself.
func storageFull(err error) error {
	var api *jetstream.APIError
	if err == nil || !errors.As(err, &api) {
		return err
	}
	switch api.ErrorCode {
	case codeInsufficientResources, codeStorageResourcesExceeded, codeAccountResourcesExceeded:
		return &StorageFullError{API: api}
	}
	return err
}
