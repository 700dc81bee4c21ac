// A buggy app with the openai SDK on the Responses API, stateless: it
// sends the first call's reasoning item back without the function call
// that followed it (its follower), which the provider refuses.
const OpenAI = require('openai');
const { wireFetch, report } = require('./wire.js');

async function main() {
  const client = new OpenAI({ baseURL: process.env.BASE_URL, apiKey: process.env.API_KEY, fetch: wireFetch, maxRetries: 0,
    defaultHeaders: { 'Turnlog-Conversation': process.env.CONVERSATION } });
  const tools = [{ type: 'function', name: 'weather', description: 'Weather of a city', parameters: { type: 'object', properties: { city: { type: 'string' } } } }];
  const input = [{ role: 'user', content: 'Weather in Paris?' }];
  const opts = { model: 'o-test', instructions: 'You answer briefly.', tools, store: false,
    include: ['reasoning.encrypted_content'], reasoning: { effort: 'low', summary: 'auto' } };
  const res = await client.responses.create({ ...opts, input });
  input.push(...res.output.filter((o) => o.type === 'reasoning')); // the bug: its follower is dropped
  input.push({ role: 'user', content: 'And tomorrow?' });
  const errors = [];
  try {
    await client.responses.create({ ...opts, input });
  } catch (e) {
    errors.push(String(e.status));
  }
  await report({ texts: [], errors });
}
main().catch((e) => { console.error(e); process.exit(1); });
