package check_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/turnlog/turnlog/calls"
	"github.com/turnlog/turnlog/check"
	"github.com/turnlog/turnlog/events"
)

// TestHistoryRewrittenNamesWhoDidIt: a middleware of one's own that
// moves or removes history is found by history_rewritten, and the finding
// names the event that did it and its actor, so that the team knows which
// middleware to fix without reading the timeline.
func TestHistoryRewrittenNamesWhoDidIt(t *testing.T) {
	tests := []struct {
		name string
		conv func() *rec
		want string
	}{
		{name: "a reorder by a middleware of one's own",
			conv: func() *rec {
				// events 1-11 are chat()'s, 12 the user's message
				return chat().user("u3", "more").add("acme.compact", events.BlocksReordered{
					Order: []string{"s", "u1", "a1", "u2", "c1", "t1", "a2", "u3", "r1"}}).call()
			},
			want: `reasoning r1 at index 8 moved since call 3, by blocks.reordered of "acme.compact" (event 13); only the ordering middleware may move history`,
		},
		{name: "two reorders by two middlewares",
			conv: func() *rec {
				return chat().user("u3", "more").
					add("acme.a", events.BlocksReordered{Order: []string{"s", "u1", "a1", "u2", "c1", "t1", "a2", "r1", "u3"}}).
					add("acme.b", events.BlocksReordered{Order: []string{"s", "u1", "a1", "u2", "c1", "t1", "a2", "u3", "r1"}}).call()
			},
			want: `reasoning r1 at index 8 moved since call 3, by blocks.reordered of "acme.a" (event 13), blocks.reordered of "acme.b" (event 14); only the ordering middleware may move history`,
		},
		{name: "a removal by a middleware of one's own",
			conv: func() *rec {
				return chat().user("u3", "more").add("acme.trim", events.BlocksRemoved{BlockIDs: []string{"u1"}, Reason: "trim"}).call()
			},
			want: `user u1 was removed since call 3, by blocks.removed of "acme.trim" (event 13); only a compaction, an operator or the reasoning guard may remove history`,
		},
		{name: "the gateway's removal records what an app's call left out, and blames no middleware",
			conv: func() *rec {
				return chat().user("u3", "more").add(calls.Actor, events.BlocksRemoved{BlockIDs: []string{"u1"}, Reason: "the call left it out"}).call()
			},
			want: `user u1 was removed since call 3, by no compaction, operator or documented middleware`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var details []string
			for _, f := range tc.conv().findings(t) {
				if f.Rule == check.RuleHistoryRewritten {
					details = append(details, f.Detail)
				}
			}
			assert.Equal(t, []string{tc.want}, details)
		})
	}
}
