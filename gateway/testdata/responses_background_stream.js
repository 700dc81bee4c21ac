// The Responses API in background mode, the answer streamed as the openai
// SDK offers it: client.responses.create with background: true, then
// client.responses.retrieve(id, { stream: true }) read to its end.
const OpenAI = require('openai');
const { wireFetch, report } = require('./wire.js');

async function main() {
  const client = new OpenAI({ baseURL: process.env.BASE_URL, apiKey: process.env.API_KEY, fetch: wireFetch, maxRetries: 0 });
  const queued = await client.responses.create({ model: 'm', input: 'a long job', background: true });
  const stream = await client.responses.retrieve(queued.id, { stream: true });
  let deltas = '';
  let final = '';
  for await (const event of stream) {
    if (event.type === 'response.output_text.delta') deltas += event.delta;
    if (event.type === 'response.completed') final = event.response.output[0].content[0].text;
  }
  await report({ texts: [queued.status, deltas, final] });
}
main().catch((e) => { console.error(e); process.exit(1); });
