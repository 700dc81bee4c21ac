package benchmark

// The stand-in upstream of `turnlog bench --gateway` and the clients'
// conversations: realistic Chat Completions bodies (a ~12 KB first call:
// a system prompt, tools, earlier exchanges), each chain continuing with
// the answer it got, as an app re-sends its history.

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
)

// benchToken is the gateway's token in the benchmark.
const benchToken = "bench-token-0123456789abcdef"

// chainLength is how many calls a benchmark client makes in one
// conversation before it starts another.
const chainLength = 5

const benchTools = `[{"type":"function","function":{"name":"search_docs","description":"Search the product documentation and return the best matching passages.","parameters":{"type":"object","properties":{"query":{"type":"string","description":"What to look for"},"limit":{"type":"integer","minimum":1,"maximum":20}},"required":["query"]}}},{"type":"function","function":{"name":"open_ticket","description":"Open a support ticket for the user with a summary of the problem.","parameters":{"type":"object","properties":{"summary":{"type":"string"},"priority":{"type":"string","enum":["low","normal","high"]}},"required":["summary"]}}}]`

// prose is filler text of n bytes that varies with seed.
func prose(n, seed int) string {
	words := []string{"the", "request", "conversation", "model", "answer", "customer", "account", "billing", "setting", "deploy", "region", "latency", "token", "history", "prompt", "invoice"}
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		b.WriteString(words[((i*7+seed*13+i/5)%len(words)+len(words))%len(words)])
		b.WriteByte(' ')
	}
	return b.String()[:n]
}

func jsonString(s string) string { b, _ := json.Marshal(s); return string(b) }

// answerFor is the upstream's answer to a user message: what the upstream
// writes and the client sends back on its next call.
func answerFor(user string) string {
	h := sha256.Sum256([]byte(user))
	return "Answer " + hex.EncodeToString(h[:4]) + ": " + prose(600, int(h[0]))
}

// chain is one client's conversation.
type chain struct {
	id     int
	stream bool
	// long: never start over (the 200-call conversation).
	long bool
	msgs []string
	user string
	n    int
	sent int
}

// firstBody is a chain's first request, about 12 KB.
func firstBody(id int, stream bool) string {
	c := chain{id: id, stream: stream}
	return string(c.next())
}

func (c *chain) next() []byte {
	if c.msgs == nil || (!c.long && c.n >= chainLength) {
		c.n = 0
		c.msgs = []string{`{"role":"system","content":` + jsonString("You are the support assistant of a software company. "+prose(2000, 1)) + `}`}
		for i := range 8 {
			c.msgs = append(c.msgs,
				`{"role":"user","content":`+jsonString(prose(250, 10+i))+`}`,
				`{"role":"assistant","content":`+jsonString(prose(700, 30+i))+`}`)
		}
	}
	c.user = fmt.Sprintf("Question %d of chain %d: %s", c.n, c.id, prose(200, c.id+c.n))
	msgs := append(c.msgs, `{"role":"user","content":`+jsonString(c.user)+`}`)
	body := `{"model":"gpt-4o","temperature":0.2,"stream":` + fmt.Sprint(c.stream) + `,"tools":` + benchTools + `,"messages":[` + strings.Join(msgs, ",") + `]}`
	c.sent = len(body)
	return []byte(body)
}

// answered moves the chain on past a call answered by the upstream.
func (c *chain) answered() {
	c.msgs = append(c.msgs, `{"role":"user","content":`+jsonString(c.user)+`}`,
		`{"role":"assistant","content":`+jsonString(answerFor(c.user))+`}`)
	c.n++
}

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }

// upstream is the stand-in provider: it reads the request as a server
// does, waits delay, and answers the last user message, as JSON or as a
// stream of chunks.
type upstream struct {
	delay atomic.Int64 // a time.Duration
}

func (u *upstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model    string `json:"model"`
		Stream   bool   `json:"stream"`
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) == 0 {
		http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
		return
	}
	if d := time.Duration(u.delay.Load()); d > 0 {
		time.Sleep(d)
	}
	answer := answerFor(req.Messages[len(req.Messages)-1].Content)
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"chatcmpl-bench","object":"chat.completion","created":1700000000,"model":%q,"choices":[{"index":0,"message":{"role":"assistant","content":%s,"refusal":null},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":3000,"completion_tokens":150,"total_tokens":3150},"system_fingerprint":"fp_bench"}`,
			req.Model, jsonString(answer))
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	fl := w.(http.Flusher)
	chunk := func(delta, finish string) {
		fmt.Fprintf(w, "data: {\"id\":\"chatcmpl-bench\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,\"model\":%q,\"choices\":[{\"index\":0,\"delta\":%s,\"finish_reason\":%s}]}\n\n", req.Model, delta, finish)
		fl.Flush()
	}
	chunk(`{"role":"assistant","content":""}`, "null")
	for i := 0; i < len(answer); i += 60 {
		chunk(`{"content":`+jsonString(answer[i:min(i+60, len(answer))])+`}`, "null")
	}
	chunk(`{}`, `"stop"`)
	io.WriteString(w, "data: [DONE]\n\n")
	fl.Flush()
}
