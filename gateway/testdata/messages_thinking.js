// Anthropic Messages with extended thinking and a tool, as an app writes
// it with @anthropic-ai/sdk: the assistant's content (thinking with its
// signature) goes back unchanged. STREAM=1 streams every call.
const Anthropic = require('@anthropic-ai/sdk');
const { wireFetch, report } = require('./wire.js');

async function main() {
  const client = new Anthropic({ baseURL: process.env.BASE_URL, apiKey: process.env.API_KEY, fetch: wireFetch, maxRetries: 0,
    defaultHeaders: process.env.TURNLOG_TOKEN ? { 'Turnlog-Token': process.env.TURNLOG_TOKEN } : {} });
  const tools = [{ name: 'weather', description: 'Weather of a city', input_schema: { type: 'object', properties: { city: { type: 'string' } } } }];
  const messages = [{ role: 'user', content: 'Weather in Paris?' }];
  const texts = [];
  for (let round = 0; round < 3; round++) {
    const params = { model: 'claude-test', max_tokens: 2048, system: 'You answer briefly.', messages, tools,
      thinking: { type: 'enabled', budget_tokens: 1024 } };
    const msg = process.env.STREAM ? await client.messages.stream(params).finalMessage() : await client.messages.create(params);
    messages.push({ role: 'assistant', content: msg.content });
    const uses = msg.content.filter((b) => b.type === 'tool_use');
    if (uses.length === 0) { texts.push(msg.content.filter((b) => b.type === 'text').map((b) => b.text).join('')); break; }
    messages.push({ role: 'user', content: uses.map((u) => ({ type: 'tool_result', tool_use_id: u.id, content: 'sunny, 21 C' })) });
  }
  await report({ texts });
}
main().catch((e) => { console.error(e); process.exit(1); });
