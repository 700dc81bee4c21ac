package providertest

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func post(t *testing.T, url string, header map[string]string, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(raw)
}

// TestMessagesRoleOrder: the Messages fake refuses what Bedrock and the
// 2024 API refuse, so an engine test catches a request that only
// Anthropic's lenient endpoint would take.
func TestMessagesRoleOrder(t *testing.T) {
	s := NewMessages(t, func(Request) Reply { return Reply{Text: "ok"} })
	header := map[string]string{"anthropic-version": "2023-06-01", "x-api-key": "k"}
	for _, tc := range []struct{ name, messages, want string }{
		{"user first", `[{"role":"user","content":"hi"}]`, ""},
		{"assistant first", `[{"role":"assistant","content":"[summary] s"},{"role":"user","content":"hi"}]`, `first message must use the \"user\" role`},
		{"two user messages in a row", `[{"role":"user","content":"a"},{"role":"user","content":"b"}]`, `found multiple \"user\" roles in a row`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := post(t, s.URL+"/v1/messages", header, `{"model":"m","max_tokens":100,"messages":`+tc.messages+`}`)
			if tc.want == "" {
				assert.Equal(t, http.StatusOK, status, body)
				return
			}
			assert.Equal(t, http.StatusBadRequest, status)
			assert.Contains(t, body, tc.want)
		})
	}
	assert.Equal(t, "k", s.Requests()[0].APIKey)
}

// TestResponsesPairing: a reasoning item and the item after it are paired
// by the follower's ID, both ways.
func TestResponsesPairing(t *testing.T) {
	s := NewResponses(t, func(Request) Reply { return Reply{Reasoning: []string{"r"}, Text: "ok"} })
	header := map[string]string{"Authorization": "Bearer k"}
	request := func(input string) string {
		return `{"model":"m","store":false,"include":["reasoning.encrypted_content"],"input":` + input + `}`
	}
	status, body := post(t, s.URL+"/v1/responses", header, request(`[{"role":"user","content":"hi"}]`))
	require.Equal(t, http.StatusOK, status, body)
	assert.Equal(t, "k", s.Requests()[0].APIKey)
	var resp struct{ Output []map[string]any }
	require.NoError(t, json.Unmarshal([]byte(body), &resp))
	require.Len(t, resp.Output, 2)
	reasoning, _ := json.Marshal(resp.Output[0])
	msgID := resp.Output[1]["id"].(string)
	user := `{"role":"user","content":"hi"}`
	for _, tc := range []struct{ name, follower, want string }{
		{"the follower with its ID", `{"type":"message","role":"assistant","id":"` + msgID + `","status":"completed","content":[{"type":"output_text","text":"ok","annotations":[]}]}`, ""},
		{"the follower without its ID", `{"role":"assistant","content":"ok"}`, "was provided without its required following item"},
		{"without its status", `{"type":"message","role":"assistant","id":"` + msgID + `","content":"ok"}`, "status"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := post(t, s.URL+"/v1/responses", header, request(`[`+user+`,`+string(reasoning)+`,`+tc.follower+`,`+user+`]`))
			if tc.want == "" {
				assert.Equal(t, http.StatusOK, status, body)
				return
			}
			assert.NotEqual(t, http.StatusOK, status)
			assert.Contains(t, body, tc.want)
		})
	}
	t.Run("an ID of another type", func(t *testing.T) {
		status, body := post(t, s.URL+"/v1/responses", header, request(`[`+user+`,{"type":"message","role":"assistant","id":"fc_1","status":"completed","content":"ok"},`+user+`]`))
		assert.Equal(t, http.StatusBadRequest, status)
		assert.Contains(t, body, "Expected an ID that begins with 'msg'")
	})
	t.Run("the follower's ID without its reasoning item", func(t *testing.T) {
		status, body := post(t, s.URL+"/v1/responses", header, request(`[`+user+`,{"type":"message","role":"assistant","id":"`+msgID+`","status":"completed","content":"ok"},`+user+`]`))
		assert.Equal(t, http.StatusBadRequest, status)
		assert.Contains(t, body, "of type 'message' was provided without its required 'reasoning' item")
	})
}
