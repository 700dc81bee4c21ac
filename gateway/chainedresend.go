package gateway

import (
	"context"

	"github.com/turnlog/turnlog/calls"
	"github.com/turnlog/turnlog/projector"
)

// resending reports whether a call continuing response at, an earlier
// state of its conversation than its latest, sends again at the head of
// its input what the conversation holds after that response: a tool loop
// chained by previous_response_id (the Vercel AI SDK's generateText with
// tools and providerOptions.openai.previousResponseId) names the same
// response in every step, and sends the earlier steps' items again (their
// reasoning left out) with the tool's result. The call then continues
// the conversation, and from is how many blocks the Turn held at the
// response (calls.Call.ResentFrom), and state the conversation's state
// whose blocks the call sends again (see wentOnSinceResent). Not ok: the
// call branches at the response, as an app regenerating from an earlier
// answer does.
func (r *Recorder) resending(ctx context.Context, at calls.Ref, req *calls.Request) (from int, state calls.Ref, ok bool) {
	now, _, err := r.turn(ctx, at.Conversation, false)
	if err != nil {
		return 0, state, false
	}
	// The call's input is planned against it; read before it goes back
	// to the cache, where another call of the conversation may take it
	// and append to it.
	defer r.cache.put(now)
	if from, ok = r.resentSince(ctx, at, now, req); !ok {
		return 0, state, false
	}
	return from, calls.Ref{Conversation: now.Conversation, Events: now.Events}, true
}

// resentSince is resending against now, the conversation's Turn.
func (r *Recorder) resentSince(ctx context.Context, at calls.Ref, now *projector.Turn, req *calls.Request) (from int, ok bool) {
	was, err := r.log.LoadAt(ctx, at.Conversation, at.Events)
	if err != nil || len(was.Blocks) == 0 {
		return 0, false
	}
	if len(now.Blocks) <= len(was.Blocks) {
		return 0, false
	}
	for i := range was.Blocks {
		if now.Blocks[i].ID != was.Blocks[i].ID {
			return 0, false // the history before the response changed since
		}
	}
	return len(was.Blocks), calls.Resends(now, req, len(was.Blocks))
}

// wentOnSinceResent reports whether turn, the conversation a chained
// step's re-sent items were matched in (Pending.resent) as it stands when
// the step is recorded, went on since in a way the step does not send
// again: another call of the conversation was recorded in between (a
// sibling step, on this gateway or another one whose Turn this one had not
// seen). Planned against it, the step's items would all be appended anew,
// the re-sent ones a second time; the step forks the conversation at the
// state it sends again instead, as a step threaded after that call would
// branch.
func wentOnSinceResent(p *Pending, turn *projector.Turn) bool {
	rs := p.resent
	return rs != nil && turn.Conversation == rs.Conversation && turn.Events != rs.Events &&
		!calls.Resends(turn, p.call.Request, p.call.ResentFrom)
}

// resentAfterFailed sets the ResentFrom of a call continuing its
// conversation's latest response (p.response) when turn, the
// conversation as the call is recorded against it, went on past that
// response (calls that failed after it keep their items: a call whose
// upstream never answered) and the call sends those items again at the
// head of its input: the app's retry of a failed call, which the
// provider reads after the response once, not after the failed call's
// copy. Nothing is looked up when the conversation ends at the response,
// as it does for each call of a chat that goes well.
func (r *Recorder) resentAfterFailed(ctx context.Context, p *Pending, turn *projector.Turn) {
	at := p.response
	if at == nil || p.call.ResentFrom != 0 || p.call.Request == nil || turn.Conversation != at.Conversation || turn.Events <= at.Events {
		return
	}
	if from, ok := r.resentSince(ctx, *at, turn, p.call.Request); ok {
		p.call.ResentFrom = from
	}
}
