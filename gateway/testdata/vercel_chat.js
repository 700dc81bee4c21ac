// A chat as an app on the Vercel AI SDK writes it (ai with @ai-sdk/openai,
// whose default is the Responses API with store on): each call sends the
// history back as the SDK keeps it, the model's earlier answers as item
// references; the fourth call streams (streamText).
const { generateText, streamText } = require('ai');
const { createOpenAI } = require('@ai-sdk/openai');
const { wireFetch, report } = require('./wire.js');

async function main() {
  const openai = createOpenAI({ baseURL: process.env.BASE_URL, apiKey: process.env.API_KEY, fetch: wireFetch });
  const model = openai('gpt-4.1-mini');
  const messages = [];
  const texts = [];
  for (const q of ['first question', 'second question', 'third question']) {
    messages.push({ role: 'user', content: q });
    const r = await generateText({ model, system: 'Be brief.', messages, maxRetries: 0 });
    texts.push(r.text);
    messages.push(...r.response.messages);
  }
  messages.push({ role: 'user', content: 'fourth question' });
  const s = streamText({ model, system: 'Be brief.', messages, maxRetries: 0 });
  let streamed = '';
  for await (const d of s.textStream) streamed += d;
  texts.push(streamed);
  await report({ texts });
}
main().catch((e) => { console.error(e); process.exit(1); });
