// The Responses API, stateless, with the history compacted by the provider
// when it grows (client.responses.compact), as the openai SDK writes it:
// the app goes on from the compacted items.
const OpenAI = require('openai');
const { wireFetch, report } = require('./wire.js');

async function main() {
  const client = new OpenAI({ baseURL: process.env.BASE_URL, apiKey: process.env.API_KEY, fetch: wireFetch, maxRetries: 0 });
  let input = [];
  const texts = [];
  for (const q of ['one', 'two']) {
    input.push({ role: 'user', content: q });
    const res = await client.responses.create({ model: 'm', instructions: 'Be brief.', input, store: false });
    texts.push(res.output_text);
    input.push(...res.output);
  }
  const compacted = await client.responses.compact({ model: 'm', instructions: 'Be brief.', input });
  input = [...compacted.output, { role: 'user', content: 'three' }];
  const res = await client.responses.create({ model: 'm', instructions: 'Be brief.', input, store: false });
  texts.push(res.output_text);
  await report({ texts });
}
main().catch((e) => { console.error(e); process.exit(1); });
