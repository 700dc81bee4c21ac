// A buggy app with the openai SDK: on its second call it re-sends its
// flattened history (system prompt and all) after the conversation it
// keeps, so the model gets the system prompt twice.
const OpenAI = require('openai');
const { wireFetch, report } = require('./wire.js');

async function main() {
  const client = new OpenAI({ baseURL: process.env.BASE_URL, apiKey: process.env.API_KEY, fetch: wireFetch, maxRetries: 0 });
  const tools = [{ type: 'function', function: { name: 'weather', description: 'Weather of a city', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }];
  const history = [{ role: 'system', content: 'You answer briefly.' }, { role: 'user', content: 'Weather in Paris?' }];
  const messages = [...history];
  const first = await client.chat.completions.create({ model: 'gpt-test', messages, tools });
  const msg = first.choices[0].message;
  messages.push(msg);
  for (const c of msg.tool_calls ?? []) messages.push({ role: 'tool', tool_call_id: c.id, content: 'sunny, 21 C' });
  messages.push(...history); // the bug: the flattened history again
  await client.chat.completions.create({ model: 'gpt-test', messages, tools });
  await report({ texts: [] });
}
main().catch((e) => { console.error(e); process.exit(1); });
