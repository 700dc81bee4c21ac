// The Responses API with store on, as an app that keeps its own history
// but lets the provider hold the model's output writes it with the openai
// SDK (and as the Vercel AI SDK does by default): each earlier answer goes
// back as an item reference, {type: 'item_reference', id}. The third call
// streams; the fourth references the streamed answer.
const OpenAI = require('openai');
const { wireFetch, report } = require('./wire.js');

async function main() {
  const client = new OpenAI({ baseURL: process.env.BASE_URL, apiKey: process.env.API_KEY, fetch: wireFetch, maxRetries: 0 });
  const input = [];
  const texts = [];
  const ask = (text) => input.push({ role: 'user', content: text });
  const keep = (output) => { for (const item of output) input.push({ type: 'item_reference', id: item.id }); };
  for (const q of ['first question', 'second question']) {
    ask(q);
    const res = await client.responses.create({ model: 'm', instructions: 'Be brief.', input });
    texts.push(res.output_text);
    keep(res.output);
  }
  ask('third question');
  const stream = await client.responses.create({ model: 'm', instructions: 'Be brief.', input, stream: true });
  for await (const ev of stream) {
    if (ev.type === 'response.completed') {
      texts.push(ev.response.output[0].content[0].text);
      keep(ev.response.output);
    }
  }
  ask('fourth question');
  const res = await client.responses.create({ model: 'm', instructions: 'Be brief.', input });
  texts.push(res.output_text);
  await report({ texts });
}
main().catch((e) => { console.error(e); process.exit(1); });
