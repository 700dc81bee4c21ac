package gateway

import (
	"context"

	"github.com/turnlog/turnlog/calls"
)

// resending reports whether a call continuing response at, an earlier
// state of its conversation than its latest, sends again at the head of
// its input what the conversation holds after that response: a tool loop
// chained by previous_response_id (the Vercel AI SDK's generateText with
// tools and providerOptions.openai.previousResponseId) names the same
// response in every step, and sends the earlier steps' items again (their
// reasoning left out) with the tool's result. The call then continues
// the conversation, and from is how many blocks the Turn held at the
// response (calls.Call.ResentFrom). Not ok: the call branches at the
// response, as an app regenerating from an earlier answer does.
func (r *Recorder) resending(ctx context.Context, at calls.Ref, req *calls.Request) (from int, ok bool) {
	was, err := r.log.LoadAt(ctx, at.Conversation, at.Events)
	if err != nil || len(was.Blocks) == 0 {
		return 0, false
	}
	now, _, err := r.turn(ctx, at.Conversation, false)
	if err != nil {
		return 0, false
	}
	r.cache.put(now) // the call's input is planned against it
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
