// The Responses API with the history kept on OpenAI's side (the
// Conversations API), as an app writes it with the openai SDK: a
// conversation is created with a developer message in it, and each call
// sends its new input only, naming the conversation (as an ID, as {id},
// and streamed); a note is added to the conversation between two calls.
const OpenAI = require('openai');
const { wireFetch, report } = require('./wire.js');

async function main() {
  const client = new OpenAI({ baseURL: process.env.BASE_URL, apiKey: process.env.API_KEY, fetch: wireFetch, maxRetries: 0 });
  const conv = await client.conversations.create({ items: [{ type: 'message', role: 'developer', content: 'Be terse.' }] });
  const texts = [];
  let res = await client.responses.create({ model: 'm', conversation: conv.id, input: 'first question' });
  texts.push(res.output_text);
  await client.conversations.items.create(conv.id, { items: [{ type: 'message', role: 'user', content: 'a note' }] });
  res = await client.responses.create({ model: 'm', conversation: { id: conv.id }, input: [{ role: 'user', content: 'second question' }] });
  texts.push(res.output_text);
  const stream = await client.responses.create({ model: 'm', conversation: conv.id, input: 'third question', stream: true });
  for await (const ev of stream) {
    if (ev.type === 'response.completed') texts.push(ev.response.output[0].content[0].text);
  }
  await report({ texts, conversation: conv.id });
}
main().catch((e) => { console.error(e); process.exit(1); });
