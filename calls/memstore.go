package calls

import (
	"container/list"
	"context"
	"strings"
	"sync"
)

// MemStore is a ThreadStore in one process's memory, holding at most its
// limit of entries (the least recently written are forgotten first): for
// tests, and for a gateway that runs alone without a shared store.
type MemStore struct {
	mu    sync.Mutex
	limit int
	m     map[string]*list.Element
	order *list.List // of [2]string, most recent first
}

// NewMemStore returns a MemStore of up to limit entries.
func NewMemStore(limit int) *MemStore {
	return &MemStore{limit: max(limit, 1), m: map[string]*list.Element{}, order: list.New()}
}

// Get implements ThreadStore.
func (s *MemStore) Get(_ context.Context, key string) (string, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if el, ok := s.m[key]; ok {
		return el.Value.([2]string)[1], true, nil
	}
	return "", false, nil
}

// Swap implements SwapThreadStore.
func (s *MemStore) Swap(_ context.Context, key, old, new string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	el, ok := s.m[key]
	if !ok || el.Value.([2]string)[1] != old {
		return false, nil
	}
	el.Value = [2]string{key, new}
	return true, nil
}

// Put implements ThreadStore.
func (s *MemStore) Put(_ context.Context, pairs map[string]string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, v := range pairs {
		if el, ok := s.m[k]; ok {
			s.order.Remove(el)
		}
		s.m[k] = s.order.PushFront([2]string{k, v})
	}
	for s.order.Len() > s.limit {
		el := s.order.Back()
		s.order.Remove(el)
		delete(s.m, el.Value.([2]string)[0])
	}
	return nil
}

// ForgetConversation removes the entries that name conversation conv
// (its states, its latest call, its responses, their items and imported
// calls): what a gateway's own copy of the index keeps of a conversation
// erased since.
func (s *MemStore) ForgetConversation(conv string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, el := range s.m {
		v := el.Value.([2]string)[1]
		var names bool
		switch {
		case k == latestKey(conv):
			names = true
		case strings.HasPrefix(k, "s."), strings.HasPrefix(k, "n."), strings.HasPrefix(k, "o."):
			ref, ok := parseRef(v)
			names = ok && ref.Conversation == conv
		case strings.HasPrefix(k, "r."):
			// conv@n, or conv alone as written before positions were
			// kept.
			ref, ok := parseRef(v)
			names = ok && ref.Conversation == conv || v == conv
		case strings.HasPrefix(k, "i."):
			names = v == conv || v == pendingPrefix+conv
		}
		if names {
			s.order.Remove(el)
			delete(s.m, k)
		}
	}
}
