// Chat Completions asking for logprobs (logprobs: true, top_logprobs: 2),
// as the openai SDK writes it, not streamed and streamed: reports the
// tokens' logprobs the SDK got (texts: the two lists as JSON).
const OpenAI = require('openai');
const { wireFetch, report } = require('./wire.js');

async function main() {
  const client = new OpenAI({ baseURL: process.env.BASE_URL, apiKey: process.env.API_KEY, fetch: wireFetch, maxRetries: 0 });
  const messages = [{ role: 'user', content: 'Is this spam? Answer yes or no.' }];
  const res = await client.chat.completions.create({ model: 'm', messages, logprobs: true, top_logprobs: 2 });
  const texts = [JSON.stringify(res.choices[0].logprobs.content)];
  const stream = await client.chat.completions.create({ model: 'm', messages, logprobs: true, top_logprobs: 2, stream: true });
  const streamed = [];
  for await (const chunk of stream) {
    const lp = chunk.choices[0] && chunk.choices[0].logprobs;
    if (lp && lp.content) streamed.push(...lp.content);
  }
  texts.push(JSON.stringify(streamed));
  await report({ texts });
}
main().catch((e) => { console.error(e); process.exit(1); });
