package httpapi_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/httpapi"
	"github.com/turnlog/turnlog/replay"
)

// TestListConversationsWithFindings: GET /conversations gives each listed
// conversation's findings as `turnlog ls --json` counts them, and
// findings=true lists only the conversations that have some, newest
// first, paged by limit with total counting them all.
func TestListConversationsWithFindings(t *testing.T) {
	ts, l := startChatAPI(t)
	ctx := context.Background()
	secondPrompt := func(conv string) {
		turn, err := l.Load(ctx, conv)
		require.NoError(t, err)
		appendAt(t, l, conv, time.Now(), events.SystemPromptSet{BlockID: "second-" + conv, Text: "Also be brief.", Index: len(turn.Blocks)})
	}
	chat(t, ts, l, "flawed-1", "hello")
	secondPrompt("flawed-1")
	chat(t, ts, l, "flawed-1", "hello again")
	chat(t, ts, l, "clean-1", "hello")
	chat(t, ts, l, "flawed-2", "hello")
	secondPrompt("flawed-2")
	chat(t, ts, l, "flawed-2", "count the words in red green")
	chat(t, ts, l, "clean-2", "hello")

	type row struct {
		ID       string `json:"id"`
		Findings int    `json:"findings"`
	}
	list := func(query string) ([]row, int) {
		t.Helper()
		var body struct {
			Conversations []row `json:"conversations"`
			Total         int   `json:"total"`
		}
		require.Equal(t, http.StatusOK, getJSON(t, ts, "/conversations"+query, &body), query)
		return body.Conversations, body.Total
	}

	all, total := list("")
	require.Equal(t, 4, total)
	for _, r := range all {
		want := replay.Conversation{ID: r.ID}
		require.NoError(t, replay.Describe(ctx, l, &want))
		assert.Equal(t, want.Findings, r.Findings, "%s: the findings ls counts", r.ID)
	}

	for _, tc := range []struct {
		name, query string
		want        []string
		total       int
	}{
		{"with findings, newest first", "?findings=true", []string{"flawed-2", "flawed-1"}, 2},
		{"and a search", "?findings=true&q=-1", []string{"flawed-1"}, 1},
		{"a page", "?findings=true&limit=1", []string{"flawed-2"}, 2},
		{"none found", "?findings=true&q=clean", []string{}, 0},
		{"false is no filter", "?findings=false", []string{"clean-2", "flawed-2", "clean-1", "flawed-1"}, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows, total := list(tc.query)
			ids := []string{}
			for _, r := range rows {
				ids = append(ids, r.ID)
				if tc.query != "?findings=false" {
					assert.Positive(t, r.Findings, r.ID)
				}
			}
			assert.Equal(t, tc.want, ids)
			assert.Equal(t, tc.total, total)
		})
	}

	// A conversation that breaks a rule later is listed once it does.
	secondPrompt("clean-1")
	chat(t, ts, l, "clean-1", "hello again")
	rows, total := list("?findings=true")
	assert.Equal(t, 3, total)
	assert.Equal(t, "clean-1", rows[0].ID)

	status, out, _ := call(t, ts, "GET", "/conversations?findings=yes-please", "Bearer "+token, "")
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Contains(t, out["error"], `findings "yes-please": use true`)
	var typed httpapi.ConversationsBody
	require.Equal(t, http.StatusOK, getJSON(t, ts, "/conversations?findings=1", &typed))
	assert.Equal(t, 3, typed.Total)
}
