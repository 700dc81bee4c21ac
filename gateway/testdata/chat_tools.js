// Chat Completions, streamed, with a tool loop, as an app would write it
// with the openai SDK: the assistant's tool call and the tool's result go
// back on the second call.
const OpenAI = require('openai');
const { wireFetch, report } = require('./wire.js');

async function main() {
  const client = new OpenAI({ baseURL: process.env.BASE_URL, apiKey: process.env.API_KEY, fetch: wireFetch,
    defaultHeaders: process.env.TURNLOG_TOKEN ? { 'Turnlog-Token': process.env.TURNLOG_TOKEN } : {}, maxRetries: 0 });
  const tools = [{ type: 'function', function: { name: 'weather', description: 'Weather of a city', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }];
  const messages = [{ role: 'system', content: 'You answer briefly.' }, { role: 'user', content: 'Weather in Paris?' }];
  const texts = [];
  for (let round = 0; round < 3; round++) {
    const stream = await client.chat.completions.create({ model: 'gpt-test', messages, tools, stream: true, temperature: 0.2 });
    let content = '';
    const calls = [];
    for await (const chunk of stream) {
      const d = chunk.choices[0]?.delta ?? {};
      if (d.content) content += d.content;
      for (const tc of d.tool_calls ?? []) {
        calls[tc.index] ??= { id: '', type: 'function', function: { name: '', arguments: '' } };
        if (tc.id) calls[tc.index].id = tc.id;
        if (tc.function?.name) calls[tc.index].function.name += tc.function.name;
        if (tc.function?.arguments) calls[tc.index].function.arguments += tc.function.arguments;
      }
    }
    if (calls.length === 0) { texts.push(content); break; }
    messages.push({ role: 'assistant', content: content || null, tool_calls: calls });
    for (const c of calls) messages.push({ role: 'tool', tool_call_id: c.id, content: 'sunny, 21 C' });
  }
  await report({ texts });
}
main().catch((e) => { console.error(e); process.exit(1); });
