package gateway

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/turnlog/turnlog/calls"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
)

// appendAttempts bounds the reloads after conflicts: concurrent calls of
// one conversation (parallel sub-agents) each win in turn.
const appendAttempts = 20

// recordTimeout bounds one step's recording.
const recordTimeout = 30 * time.Second

type inputResult struct {
	turn *projector.Turn
	evs  []events.Event
	err  error
}

// recordInput records a call's first step: its input against the
// conversation's Turn (or a fork's), then inference.started. On a
// conflict (another call of the conversation appended first) it reloads
// and plans again.
func (g *Gateway) recordInput(ctx context.Context, st *state, fork *calls.Ref) inputResult {
	ctx, cancel := context.WithTimeout(ctx, recordTimeout)
	defer cancel()
	if fork != nil {
		from, err := g.cfg.Log.LoadAt(ctx, fork.Conversation, fork.Events)
		if err != nil {
			return inputResult{err: fmt.Errorf("load %s@%d to fork it: %w", fork.Conversation, fork.Events, err)}
		}
		blocks := make([]events.Block, len(from.Blocks))
		for i, b := range from.Blocks {
			blocks[i] = b.Clone()
		}
		st.call.Fork = &calls.Fork{From: fork.Conversation, At: fork.Events, Blocks: blocks, Data: from.Data}
	}
	for attempt := 0; ; attempt++ {
		turn, err := g.cfg.Log.Load(ctx, st.conv)
		if err != nil {
			return inputResult{err: err}
		}
		evs, err := calls.PlanInput(turn, st.call)
		if err != nil && st.call.Request != nil {
			// The call cannot be recorded as parsed (the gateway's own
			// rendering would not prove it): record it unparsed, with why.
			g.cfg.Logger.Warn("gateway: call recorded as unparsed", "conversation", st.conv, "err", err)
			st.call.Request, st.call.Unparsed = nil, err.Error()
			continue
		}
		if err != nil {
			return inputResult{err: err}
		}
		seq, err := g.cfg.Log.Append(ctx, st.conv, turn.Seq, evs...)
		if errors.Is(err, eventlog.ErrConflict) && attempt < appendAttempts {
			continue
		}
		if err != nil {
			return inputResult{err: fmt.Errorf("record the call's input: %w", err)}
		}
		turn.Seq = seq
		return inputResult{turn: turn, evs: evs}
	}
}

// finish records a call's outcome after its input, and returns once
// JetStream acknowledged it. It runs once per call.
func (g *Gateway) finish(ctx context.Context, st *state, o calls.Outcome) error {
	if st.recorded {
		return nil
	}
	st.recorded = true
	if o.Duration == 0 {
		o.Duration = time.Since(st.started)
	}
	in := <-st.input
	if in.err != nil {
		g.cfg.Logger.Error("gateway: call not recorded", "conversation", st.conv, "err", in.err)
		return in.err
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	turn := in.turn
	for attempt := 0; ; attempt++ {
		evs, err := calls.PlanOutcome(turn, st.call, o)
		if err != nil {
			return err
		}
		if g.cfg.Checker != nil {
			for _, p := range g.cfg.Checker.Check(turn, append(in.evs[:len(in.evs):len(in.evs)], evs...)) {
				e := events.New(st.conv, st.call.ID, 1, calls.Actor, p)
				if err := projector.Apply(turn, e); err != nil {
					return fmt.Errorf("record a finding: %w", err)
				}
				evs = append(evs, e)
			}
		}
		seq, err := g.cfg.Log.Append(ctx, st.conv, turn.Seq, evs...)
		if errors.Is(err, eventlog.ErrConflict) && attempt < appendAttempts {
			if turn, err = g.cfg.Log.Load(ctx, st.conv); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			g.cfg.Logger.Error("gateway: call's outcome not recorded", "conversation", st.conv, "err", err)
			return fmt.Errorf("record the call's outcome: %w", err)
		}
		turn.Seq = seq
		break
	}
	if o.Failure == "" && (o.Output == nil || o.Output.Error == "") {
		g.index.Record(st.conv, turn.Events, turn.Blocks)
		if o.Output != nil {
			g.index.RecordResponse(o.Output.ResponseID, st.conv)
		}
	}
	return nil
}
