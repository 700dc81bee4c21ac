package calls

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/projector"
)

// The render check compares a render with the request byte for byte: it
// agrees with comparing their hashes, whatever part differs.
func TestRendersToComparesTheCanonicalRequest(t *testing.T) {
	req, err := NewParseCache(1<<20).ParseRequest(ChatCompletions,
		[]byte(`{"model":"m","messages":[{"role":"system","content":"s"},{"role":"user","content":"hi"}],"temperature":0.5}`))
	require.NoError(t, err)
	same := func() (map[string][]byte, map[string][][]byte) {
		members := map[string][]byte{}
		for k, v := range req.canon {
			members[k] = v
		}
		lists := map[string][][]byte{}
		for k, v := range req.lists {
			lists[k] = append([][]byte(nil), v...)
		}
		return members, lists
	}
	members, lists := same()
	assert.True(t, req.rendersTo(members, lists), "the request renders to itself")

	for name, change := range map[string]func(map[string][]byte, map[string][][]byte){
		"an item's byte": func(_ map[string][]byte, l map[string][][]byte) {
			l["messages"][1] = []byte(`{"content":"ho","role":"user"}`)
		},
		"an item more":        func(_ map[string][]byte, l map[string][][]byte) { l["messages"] = append(l["messages"], []byte(`{}`)) },
		"an item fewer":       func(_ map[string][]byte, l map[string][][]byte) { l["messages"] = l["messages"][:1] },
		"a parameter":         func(m map[string][]byte, _ map[string][][]byte) { m["temperature"] = []byte(`0.6`) },
		"a parameter more":    func(m map[string][]byte, _ map[string][][]byte) { m["top_p"] = []byte(`1`) },
		"a parameter missing": func(m map[string][]byte, _ map[string][][]byte) { delete(m, "model") },
	} {
		members, lists := same()
		change(members, lists)
		assert.False(t, req.rendersTo(members, lists), name)
		assert.NotEqual(t, req.InputHash, canonicalHash(members, lists), name)
	}
}

// A message that is not one is named by its place in the list, cached or
// not.
func TestParseRequestNamesTheBadMessage(t *testing.T) {
	body := []byte(`{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"wizard","content":"x"}]}`)
	for _, c := range []*ParseCache{nil, NewParseCache(1 << 20)} {
		_, err := c.ParseRequest(ChatCompletions, body)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "messages[1]")
	}
}

// Items a request takes from the parse cache share their metadata with
// it; planning and recording the call (IDs set, events applied to the
// Turn) leave the cached items as parsing would give them.
func TestPlanningLeavesCachedItemsAlone(t *testing.T) {
	cache := NewParseCache(1 << 20)
	body := []byte(`{"model":"m","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi"},` +
		`{"role":"assistant","content":"hello","refusal":null,"annotations":[]},{"role":"user","content":"and?"}]}`)
	fresh, err := ParseRequest(ChatCompletions, body)
	require.NoError(t, err)
	_, err = cache.ParseRequest(ChatCompletions, body) // fills the cache
	require.NoError(t, err)
	turn := projector.New("c")
	for range 2 {
		req, err := cache.ParseRequest(ChatCompletions, body)
		require.NoError(t, err)
		c := &Call{Request: req, Wire: WireSHA256(body), Threading: ThreadExplicit}
		_, err = PlanInput(turn, c)
		require.NoError(t, err)
		_, err = PlanOutcome(turn, c, Outcome{Duration: time.Millisecond})
		require.NoError(t, err)
	}
	again, err := cache.ParseRequest(ChatCompletions, body)
	require.NoError(t, err)
	assert.Equal(t, fresh.Items, again.Items)
	for _, it := range again.Items {
		for _, b := range it.Blocks {
			assert.Empty(t, b.ID, "a cached block has no ID: a plan gave one to its own copy")
		}
	}
}

// The parse cache gives a request the Params of earlier requests only
// when its parameters are those, whatever its messages.
func TestParamsRememberedOnlyForTheSameParameters(t *testing.T) {
	cache := NewParseCache(1 << 20)
	parse := func(body string) Params {
		req, err := cache.ParseRequest(ChatCompletions, []byte(body))
		require.NoError(t, err)
		fresh, err := ParseRequest(ChatCompletions, []byte(body))
		require.NoError(t, err)
		require.Equal(t, fresh.Params, req.Params, "as if parsed afresh: %s", body)
		return req.Params
	}
	base := parse(`{"model":"m","temperature":0.5,"messages":[{"role":"user","content":"hi"}]}`)
	assert.Equal(t, base.Hash, parse(`{"model":"m","temperature":0.5,"messages":[{"role":"user","content":"other"}]}`).Hash, "other messages, same parameters")
	for _, body := range []string{
		`{"model":"m","temperature":0.6,"messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m","messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m","temperature":0.5,"top_p":1,"messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"n","temperature":0.5,"messages":[{"role":"user","content":"hi"}]}`,
	} {
		assert.NotEqual(t, base.Hash, parse(body).Hash, body)
	}
}
