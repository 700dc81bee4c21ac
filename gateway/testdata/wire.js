// A fetch for the SDKs that notes the SHA-256 of every request body the
// SDK sends and of every response body it receives (streams included, as
// they arrive), and the Turnlog-Conversation header of each response.
const crypto = require('crypto');

const sent = [], received = [], conversations = [], pending = [];

function sha(buf) { return crypto.createHash('sha256').update(buf).digest('hex'); }

async function wireFetch(url, init) {
  sent.push(sha(Buffer.from(init.body ?? '')));
  const res = await fetch(url, init);
  conversations.push(res.headers.get('turnlog-conversation'));
  const [a, b] = res.body.tee();
  const i = received.length;
  received.push(null);
  pending.push((async () => {
    const chunks = [];
    const reader = b.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(Buffer.from(value));
    }
    received[i] = sha(Buffer.concat(chunks));
  })());
  return new Response(a, { status: res.status, statusText: res.statusText, headers: res.headers });
}

async function report(extra) {
  await Promise.all(pending);
  process.stdout.write(JSON.stringify({ sent, received, conversations, ...extra }) + '\n');
}

module.exports = { wireFetch, report };
