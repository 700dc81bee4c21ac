// A chat as an app on the Vercel AI SDK writes it when it chains its
// turns by previous_response_id (providerOptions.openai.previousResponseId,
// the Responses API) and gives the model a tool: generateText runs the
// tool loop (stopWhen), each of its steps naming the turn's
// previous_response_id, the second step sending the first's items again
// with the tool's output.
const { generateText, tool, stepCountIs } = require('ai');
const { createOpenAI } = require('@ai-sdk/openai');
const { z } = require('zod');
const { wireFetch, report } = require('./wire.js');

async function main() {
  const openai = createOpenAI({ baseURL: process.env.BASE_URL, apiKey: process.env.API_KEY, fetch: wireFetch });
  const model = openai('gpt-4.1-mini');
  const tools = {
    weather: tool({ description: 'weather', inputSchema: z.object({ city: z.string() }), execute: async ({ city }) => `sunny in ${city}` }),
  };
  const texts = [];
  let previousResponseId;
  for (const q of ['hello', 'what is the weather?', 'thanks']) {
    const r = await generateText({
      model, system: 'Be brief.', messages: [{ role: 'user', content: q }], tools, stopWhen: stepCountIs(5), maxRetries: 0,
      providerOptions: { openai: previousResponseId ? { previousResponseId } : {} },
    });
    previousResponseId = r.providerMetadata.openai.responseId;
    texts.push(r.text);
  }
  await report({ texts });
}
main().catch((e) => { console.error(e); process.exit(1); });
