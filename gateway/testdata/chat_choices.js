// An app that asks the openai SDK for two answers ("n": 2), then streams
// two more; it reports every choice's text as the SDK gave it.
const OpenAI = require('openai');
const { wireFetch, report } = require('./wire.js');

async function main() {
  const client = new OpenAI({ baseURL: process.env.BASE_URL, apiKey: process.env.API_KEY, fetch: wireFetch, maxRetries: 0 });
  const texts = [];
  const done = await client.chat.completions.create({ model: 'gpt-test', n: 2, messages: [{ role: 'user', content: 'Name a colour.' }] });
  for (const c of done.choices) texts.push(c.message.content);
  const stream = await client.chat.completions.create({ model: 'gpt-test', n: 2, stream: true, messages: [{ role: 'user', content: 'Name a fruit.' }] });
  const streamed = [];
  for await (const chunk of stream) {
    for (const c of chunk.choices) streamed[c.index] = (streamed[c.index] ?? '') + (c.delta.content ?? '');
  }
  texts.push(...streamed);
  await report({ texts });
}
main().catch((e) => { console.error(e); process.exit(1); });
