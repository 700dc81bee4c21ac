package eventlog

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
)

// A recording gateway names itself (an instance ID, one per process) in
// the model calls it begins. A call it began and never finished (the
// process was killed, or its connection to NATS lost, before the answer
// was recorded) is open in the log; another gateway, or the same one
// later, closes it as abandoned once it knows that no running process
// will finish it. These two methods are how it knows.

// aliveTimeout bounds Alive's wait: a running gateway listens and never
// answers, so a request to it always waits this long.
const aliveTimeout = time.Second

// AnswerAlive answers, until stop is called, every request asking whether
// gateway instance is running (Alive). The subscription lives on the
// log's connection: when the process dies or the connection is lost, no
// one answers for the instance any more.
func (l *Log) AnswerAlive(instance string) (stop func(), err error) {
	if err := validInstance(instance); err != nil {
		return nil, err
	}
	// Listening is the answer: Alive asks whether anyone listens. Nothing
	// is published back, since the role gateways run as answers no
	// requests (a request's reply subject may name any subject).
	sub, err := l.nc.Subscribe(l.Names().GatewayInstance(instance), func(*nats.Msg) {})
	if err != nil {
		return nil, fmt.Errorf("answer for gateway %s: %w", instance, err)
	}
	return func() { _ = sub.Unsubscribe() }, nil
}

// Alive reports whether gateway instance is running: false only when the
// server says that no one listens for it (nats.ErrNoResponders), which it
// knows at once. A running gateway listens and does not answer (see
// AnswerAlive), so Alive waits aliveTimeout and counts it running; an
// answer, from a gateway of an earlier turnlog, counts so at once.
func (l *Log) Alive(ctx context.Context, instance string) (bool, error) {
	if err := validInstance(instance); err != nil {
		return false, err
	}
	ctx, cancel := context.WithTimeout(ctx, aliveTimeout)
	defer cancel()
	_, err := l.nc.RequestWithContext(ctx, l.Names().GatewayInstance(instance), nil)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, nats.ErrNoResponders):
		return false, nil
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout):
		return true, nil
	}
	return false, fmt.Errorf("ask whether gateway %s runs: %w", instance, err)
}

// validInstance accepts what a subject token can hold: letters and digits
// (a gateway's instance is a ULID).
func validInstance(instance string) error {
	if instance == "" || len(instance) > 64 {
		return fmt.Errorf("gateway instance %q: not an instance ID", instance)
	}
	for _, r := range instance {
		if !('0' <= r && r <= '9' || 'A' <= r && r <= 'Z' || 'a' <= r && r <= 'z') {
			return fmt.Errorf("gateway instance %q: not an instance ID", instance)
		}
	}
	return nil
}
