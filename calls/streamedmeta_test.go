package calls

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/events"
)

// feedStream writes stream to a new Stream of api in small pieces, as the
// network delivers it, and returns its Output.
func feedStream(t *testing.T, api API, stream string) *Output {
	t.Helper()
	s := NewStream(api, 1<<20)
	for i := 0; i < len(stream); i += 11 {
		s.Write([]byte(stream[i:min(i+11, len(stream))]))
	}
	o, err := s.Output()
	require.NoError(t, err)
	return o
}

// TestStreamedCitationsAreKept: a model that searched the web cites its
// sources: Chat Completions in the message's annotations, Messages in a
// text block's citations and in the server tool's blocks. A response that
// is not streamed keeps them (in the item's JSON, MetaItem); a streamed
// one's record dropped them, so an auditor could not say which sources
// the answer gave unless the app happened to send the message back whole.
// They are kept on the output block (MetaStreamed), as a response that is
// not streamed writes them, and the text, threading key and rendering are
// as before.
func TestStreamedCitationsAreKept(t *testing.T) {
	ann := `{"type":"url_citation","url_citation":{"start_index":0,"end_index":5,"title":"Paris","url":"https://example.com/paris"}}`
	chat := "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n" +
		"data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Paris is the capital.\"}}]}\n\n" +
		"data: {\"id\":\"c\",\"choices\":[{\"index\":1,\"delta\":{\"role\":\"assistant\",\"content\":\"Paris.\",\"annotations\":[" + ann + "]}}]}\n\n" +
		"data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"annotations\":[" + ann + "]}}]}\n\n" +
		"data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n"
	o := feedStream(t, ChatCompletions, chat)
	require.Len(t, o.Items, 1)
	b := o.Items[0].Blocks[0]
	assert.Equal(t, "Paris is the capital.", b.Text)
	assert.JSONEq(t, `{"annotations":[`+ann+`]}`, b.Meta[MetaStreamed], "the first choice's annotations, as a message writes them")
	var others []struct {
		Message struct {
			Annotations []json.RawMessage `json:"annotations"`
		} `json:"message"`
	}
	require.NoError(t, json.Unmarshal([]byte(o.OtherChoices), &others))
	require.Len(t, others, 1)
	assert.Len(t, others[0].Message.Annotations, 1, "another choice keeps its own")
	plain := feedStream(t, ChatCompletions, strings.ReplaceAll(strings.ReplaceAll(chat, `,"annotations":[`+ann+`]`, ""), `"annotations":[`+ann+`]`, ""))
	assert.Equal(t, Key(&plain.Items[0].Blocks[0]), Key(&b), "threading compares what it did")
	assert.Empty(t, plain.Items[0].Blocks[0].Meta[MetaStreamed], "nothing to keep, nothing kept")

	cit := `{"type":"web_search_result_location","cited_text":"Paris is the capital of France.","url":"https://example.com/paris","title":"Paris","encrypted_index":"Eo8B"}`
	search := `{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[{"type":"web_search_result","title":"Paris","url":"https://example.com/paris","encrypted_content":"EqgB","page_age":null}]}`
	messages := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"model\":\"claude\",\"usage\":{\"input_tokens\":3}}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"server_tool_use\",\"id\":\"srvtoolu_1\",\"name\":\"web_search\",\"input\":{}}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"query\\\": \\\"capital\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\" of France\\\"}\"}}\n\n" +
		"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":" + search + "}\n\n" +
		"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":2,\"content_block\":{\"type\":\"text\",\"text\":\"\",\"citations\":[]}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":\"citations_delta\",\"citation\":" + cit + "}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":\"text_delta\",\"text\":\"Paris.\"}}\n\n" +
		"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":2}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":3,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":3,\"delta\":{\"type\":\"text_delta\",\"text\":\" Anything else?\"}}\n\n" +
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":9}}\n\n" +
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
	o = feedStream(t, Messages, messages)
	require.Len(t, o.Items, 1)
	bs := o.Items[0].Blocks
	require.Len(t, bs, 4)
	assert.JSONEq(t, `{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"capital of France"}}`, bs[0].Meta[MetaStreamed],
		"the server tool's call whole, its input assembled")
	assert.JSONEq(t, search, bs[1].Meta[MetaStreamed], "the search's results whole")
	assert.Equal(t, events.KindLLMText, bs[2].Kind)
	assert.Equal(t, "Paris.", bs[2].Text)
	assert.JSONEq(t, `{"citations":[`+cit+`]}`, bs[2].Meta[MetaStreamed], "the text's citations")
	assert.Empty(t, bs[3].Meta[MetaStreamed], "a text without citations keeps nothing more")
}

// TestStreamedAnnotationsOfAllChoicesShareOneBound: a streamed answer's
// cited sources share MaxStreamedBytes, but each choice after the first
// (a request's "n") kept up to that much of its own, so five choices
// citing many sources made an outcome larger than one NATS message, and
// the answer's record was lost. They now share it with the first, in
// order; one past it keeps its size alone.
func TestStreamedAnnotationsOfAllChoicesShareOneBound(t *testing.T) {
	ann := `{"type":"url_citation","url_citation":{"start_index":0,"end_index":5,"title":"` + strings.Repeat("t", 900) + `","url":"https://example.com/p"}}`
	perChoice := (MaxStreamedBytes/3 - 64) / (len(ann) + 1) // three choices' fill the bound
	list := strings.TrimSuffix(strings.Repeat(ann+",", perChoice), ",")
	var chat strings.Builder
	const n = 5
	for i := range n {
		chat.WriteString(`data: {"id":"c","choices":[{"index":` + string(rune('0'+i)) + `,"delta":{"role":"assistant","content":"x","annotations":[` + list + `]}}]}` + "\n\n")
	}
	chat.WriteString("data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	s := NewStream(ChatCompletions, 4<<20)
	s.Write([]byte(chat.String()))
	o, err := s.Output()
	require.NoError(t, err)
	kept := len(o.Items[0].Blocks[0].Meta[MetaStreamed])
	require.Greater(t, kept, MaxStreamedBytes/4, "the first choice's are kept")
	var others []struct {
		Message struct {
			Annotations json.RawMessage `json:"annotations"`
		} `json:"message"`
	}
	require.NoError(t, json.Unmarshal([]byte(o.OtherChoices), &others))
	require.Len(t, others, n-1)
	var lists []json.RawMessage
	for _, c := range others {
		lists = append(lists, c.Message.Annotations)
	}
	more, omitted := keptInOrder(t, lists)
	kept += more
	assert.LessOrEqual(t, kept, MaxStreamedBytes+64, "all choices' sources together within the bound")
	assert.Equal(t, 2, omitted, "the choices past the bound keep their size alone")
}
