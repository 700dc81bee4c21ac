// Claude's server tool (web search) over three turns, as an app writes it
// with @anthropic-ai/sdk: each answer's content (server_tool_use,
// web_search_tool_result, text) goes back as the SDK gave it, the
// streamed one as its finalMessage() accumulated it. STREAM=1 streams.
const Anthropic = require('@anthropic-ai/sdk');
const { wireFetch, report } = require('./wire.js');

async function main() {
  const client = new Anthropic({ baseURL: process.env.BASE_URL, apiKey: process.env.API_KEY, fetch: wireFetch, maxRetries: 0 });
  const tools = [{ type: 'web_search_20250305', name: 'web_search', max_uses: 3 }];
  const messages = [{ role: 'user', content: 'Weather in Paris?' }];
  const texts = [];
  const contents = [];
  for (const next of ['And tomorrow?', 'Thanks.', null]) {
    const params = { model: 'claude-test', max_tokens: 1024, messages, tools };
    const msg = process.env.STREAM ? await client.messages.stream(params).finalMessage() : await client.messages.create(params);
    messages.push({ role: 'assistant', content: msg.content });
    contents.push(msg.content);
    texts.push(msg.content.filter((b) => b.type === 'text').map((b) => b.text).join(''));
    if (next) messages.push({ role: 'user', content: next });
  }
  await report({ texts, contents });
}
main().catch((e) => { console.error(e); process.exit(1); });
