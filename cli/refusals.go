package cli

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/spf13/cobra"
)

// refusals records the first permission the NATS server refused to a
// command. A refused request gets no reply, so without it the command
// would wait for its timeout and then report only that; with it, connect's
// error handler closes the connection at once and the command reports the
// server's own reason.
type refusals struct {
	mu         sync.Mutex
	err        error
	credential string
	// expected are the publishes whose refusal is an answer (see expect),
	// each with the channel closed when it arrives.
	expected map[string]chan struct{}
}

// expect makes a refusal of a publish to subject an answer, not the
// command's failure: the connection stays open and the returned channel
// is closed when the refusal arrives, so the command stops waiting for the
// reply a refused request never gets. What a credential may see differs
// by role (the client key may not read the threading index's info), and
// status shows what it may. done ends the expectation.
func (r *refusals) expect(subject string) (refused <-chan struct{}, done func()) {
	ch := make(chan struct{})
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.expected == nil {
		r.expected = map[string]chan struct{}{}
	}
	r.expected[subject] = ch
	return ch, func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.expected[subject] == ch {
			delete(r.expected, subject)
		}
	}
}

// answered reports whether err is the refusal of an expected publish, and
// if so tells the one waiting for it. nats.go gives the refused subject in
// the error's text only (the server's 'Permissions Violation for Publish
// to "<subject>"').
func (r *refusals) answered(err error) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for subject, ch := range r.expected {
		if strings.Contains(err.Error(), `Publish to "`+subject+`"`) {
			close(ch)
			delete(r.expected, subject)
			return true
		}
	}
	return false
}

func (r *refusals) record(err error, credential string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err == nil {
		r.err, r.credential = err, credential
	}
}

// refused returns the command's error when the server refused something.
func (r *refusals) refused() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err == nil {
		return nil
	}
	if strings.Contains(r.err.Error(), `Subscription to "_INBOX`) {
		return fmt.Errorf("the NATS server refused this command: %w (credential: %s); each role has its own reply subjects: name the key file after its role (client.nk, worker.nk, admin.nk) or pass --inbox-prefix _INBOX_<role> (see docs/roles.md)", r.err, r.credential)
	}
	return fmt.Errorf("the NATS server refused this command: %w (credential: %s); this credential's role may not do it: use one whose role may, such as the admin key in <data>/auth/admin.nk (see docs/security.md)", r.err, r.credential)
}

type refusalsKey struct{}

func refusalsIn(ctx context.Context) *refusals {
	r, _ := ctx.Value(refusalsKey{}).(*refusals)
	return r
}

// reportRefusals wraps every command of the tree so that a refusal
// recorded during its run becomes its error.
func reportRefusals(c *cobra.Command) {
	if run := c.RunE; run != nil {
		c.RunE = func(cmd *cobra.Command, args []string) error {
			box := &refusals{}
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			cmd.SetContext(context.WithValue(ctx, refusalsKey{}, box))
			err := run(cmd, args)
			if rerr := box.refused(); rerr != nil {
				return rerr
			}
			return err
		}
	}
	for _, sub := range c.Commands() {
		reportRefusals(sub)
	}
}
