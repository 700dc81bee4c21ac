package gateway

import (
	"context"

	"github.com/turnlog/turnlog/calls"
	"github.com/turnlog/turnlog/events"
)

// resending reports whether a call continuing response at, an earlier
// state of its conversation than its latest, sends again at the head of
// its input what the conversation holds after that response: a tool loop
// chained by previous_response_id (the Vercel AI SDK's generateText with
// tools and providerOptions.openai.previousResponseId) names the same
// response in every step, and sends the earlier steps' items again with
// the tool's result. The provider's history at that response followed by
// the call's input then begins with a later recorded state of the
// conversation, which the call continues (latest) or forks (the
// conversation went on since); from is how many blocks the Turn held at
// the response (calls.Call.ResentFrom). Not ok: the call branches at the
// response, as an app regenerating from an earlier answer does.
func (r *Recorder) resending(ctx context.Context, at calls.Ref, req *calls.Request) (state calls.Ref, latest bool, from int, ok bool) {
	turn, err := r.log.LoadAt(ctx, at.Conversation, at.Events)
	if err != nil || len(turn.Blocks) == 0 {
		return calls.Ref{}, false, 0, false
	}
	blocks := make([]events.Block, 0, len(turn.Blocks)+len(req.Items))
	blocks = append(blocks, turn.Blocks...)
	for i := range req.Items {
		if req.Items[i].Field == "" { // a call's instructions are no item of the history
			blocks = append(blocks, req.Items[i].Blocks...)
		}
	}
	state, latest, ok, err = r.threads.Find(ctx, req.Scope, blocks, nil)
	if err != nil || !ok || state.Conversation != at.Conversation || state.Events <= at.Events {
		return calls.Ref{}, false, 0, false
	}
	return state, latest, len(turn.Blocks), true
}
