// The Responses API, stateless (store: false), as an app writes a tool
// loop with the openai SDK: the output items (encrypted reasoning
// included) go back as input on the next call.
const OpenAI = require('openai');
const { wireFetch, report } = require('./wire.js');

async function main() {
  const client = new OpenAI({ baseURL: process.env.BASE_URL, apiKey: process.env.API_KEY, fetch: wireFetch, maxRetries: 0 });
  const tools = [{ type: 'function', name: 'weather', description: 'Weather of a city', parameters: { type: 'object', properties: { city: { type: 'string' } } } }];
  const input = [{ role: 'user', content: 'Weather in Paris?' }];
  const texts = [];
  for (let round = 0; round < 3; round++) {
    const res = await client.responses.create({ model: 'o-test', instructions: 'You answer briefly.', input, tools, store: false,
      include: ['reasoning.encrypted_content'], reasoning: { effort: 'low', summary: 'auto' } });
    input.push(...res.output);
    const calls = res.output.filter((o) => o.type === 'function_call');
    if (calls.length === 0) { texts.push(res.output_text); break; }
    for (const c of calls) input.push({ type: 'function_call_output', call_id: c.call_id, output: 'sunny, 21 C' });
  }
  await report({ texts });
}
main().catch((e) => { console.error(e); process.exit(1); });
