// Chat: POST /conversations/{id}/messages sends, GET .../stream (Server-Sent
// Events) shows the answer as the model writes it ("delta") and the log's
// events ("event") until request.completed or request.failed (or a
// "dead_letter": no worker will answer the request), and notes a
// message another client stored on the conversation's subject ("foreign")
// or one that is not a step of it ("quarantined").

import { get, write, enc, ApiError, eventStream } from './api.js';
import { h, showError, blockText, commandArg } from './dom.js';

const $ = (id) => document.getElementById(id);

let conv = '';
const requests = new Map(); // request ID -> bubble state
const early = new Map(); // request ID -> [[what, data]] seen before the POST answered

export function initChat() {
  conv = document.body.dataset.conversation;
  if (!conv) {
    const input = $('pick-chat-id');
    input.value = 'chat-' + Date.now().toString(36);
    $('pick-chat-form').addEventListener('submit', (e) => {
      e.preventDefault();
      location.href = '/ui/chat/' + enc(input.value.trim());
    });
    return;
  }
  loadTranscript();
  connect();
  $('chat-form').addEventListener('submit', (e) => {
    e.preventDefault();
    send();
  });
  $('chat-input').addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      send();
    }
  });
}

async function loadTranscript() {
  const tr = $('transcript');
  try {
    const turn = await get(`/conversations/${enc(conv)}/turn`);
    const old = (turn.blocks || []).map(blockBubble).filter(Boolean);
    tr.prepend(...old);
  } catch (e) {
    if (e instanceof ApiError && e.status === 404) {
      tr.prepend(h('p', { class: 'muted' }, 'A new conversation: its first message creates it.'));
    } else {
      showError($('chat-error'), 'Could not load the conversation: ' + e.message);
    }
  }
}

function blockBubble(b) {
  switch (b.kind) {
    case 'system':
      return h('details', { class: 'bubble system' }, h('summary', null, 'System prompt'), h('pre', null, b.text));
    case 'user':
      return h('div', { class: 'bubble user' }, h('pre', null, b.text));
    case 'llm_text':
      return h('div', { class: 'bubble assistant done' }, h('pre', { class: 'answer' }, b.text));
    case 'reasoning':
      return h('details', { class: 'bubble reasoning' }, h('summary', null, 'Reasoning'), h('pre', null, blockText(b)));
    case 'tool_call':
    case 'tool_result':
      return h('div', { class: `bubble tool` }, h('code', null, (b.kind === 'tool_call' ? 'tool call ' : 'tool result ') + blockText(b)));
    default:
      return null;
  }
}

function connect() {
  const state = $('stream-state');
  const es = eventStream(`/conversations/${enc(conv)}/stream`);
  es.addEventListener('ready', () => {
    // From here on nothing is missed: sending is safe.
    state.textContent = 'live';
    state.dataset.state = 'ready';
    $('chat-send').disabled = false;
  });
  es.addEventListener('delta', (m) => route(JSON.parse(m.data), 'delta'));
  es.addEventListener('event', (m) => route(JSON.parse(m.data), 'event'));
  es.addEventListener('dead_letter', (m) => {
    const d = JSON.parse(m.data);
    route(d, 'dead_letter');
    // One this page did not send (another client's) is noted all the same;
    // a POST still on its way claims its own first.
    setTimeout(() => {
      if (requests.has(d.request_id)) return;
      notice('dead-letter', { request: d.request_id }, `request ${d.request_id} was not answered: a worker kept it as a dead letter (turnlog status --dead lists it): ${d.reason}`);
    }, 1000);
  });
  es.addEventListener('foreign', (m) => {
    const entry = JSON.parse(m.data);
    notice('foreign muted', { seq: entry.seq }, entry.summary);
  });
  es.addEventListener('quarantined', (m) => {
    const q = JSON.parse(m.data);
    notice('quarantined', { seq: q.seq },
      `quarantined message ${q.seq} (${q.size} bytes), not a step of this conversation: ${JSON.stringify(q.reason)}; ` +
      `requests fail until \`turnlog repair --yes ${commandArg(conv)}\` removes it`);
  });
  es.addEventListener('end', (m) => {
    state.textContent = 'stream ended: ' + JSON.parse(m.data).error;
    state.dataset.state = 'ended';
  });
  es.onerror = () => {
    state.textContent = 'reconnecting…';
    state.dataset.state = 'connecting';
    $('chat-send').disabled = true;
  };
}

/**
 * Notes in the transcript what is not an answer to this page's messages:
 * a message on the conversation's subject that is not one of its steps
 * (one another client stored, a timeline entry of type foreign, ignored by
 * every read; or one turnlog cannot read as a step, quarantined: requests
 * fail until it is repaired), or another client's request a worker kept as
 * a dead letter. None is ever passed over without a word.
 */
function notice(kind, dataset, text) {
  const tr = $('transcript');
  const note = h('p', { class: `notice ${kind}`, role: 'status', dataset }, text);
  tr.append(note);
  note.scrollIntoView({ block: 'end' });
}

/** Sends a delta or event to its request's bubble, or keeps it for later. */
function route(data, what) {
  const id = what === 'event' ? data.cause : data.request_id;
  const r = requests.get(id);
  if (r) {
    apply(r, what, data);
    return;
  }
  if (!early.has(id)) early.set(id, []);
  early.get(id).push([what, data]);
}

async function send() {
  const input = $('chat-input');
  const text = input.value.trim();
  if (!text || $('chat-send').disabled) return;
  showError($('chat-error'), '');
  const body = { text };
  const cwd = $('chat-cwd').value.trim();
  const profile = $('chat-profile').value.trim();
  const model = $('chat-model').value.trim();
  if (cwd) body.data = { cwd };
  if (profile) body.profile = profile;
  if (model) body.model = model;
  $('chat-send').disabled = true;
  try {
    const res = await write('POST', `/conversations/${enc(conv)}/messages`, body);
    input.value = '';
    const r = newBubble(res.request_id, text);
    requests.set(res.request_id, r);
    for (const [what, data] of early.get(res.request_id) || []) apply(r, what, data);
    early.delete(res.request_id);
  } catch (e) {
    showError($('chat-error'), 'Not sent: ' + e.message);
  } finally {
    $('chat-send').disabled = $('stream-state').dataset.state !== 'ready';
  }
}

function newBubble(id, text) {
  const tr = $('transcript');
  const r = {
    id,
    deltas: 0,
    streamed: '',
    logText: [], // llm_text of the request's last model call, from the log
    reasoning: h('pre', { class: 'reasoning-text' }),
    answer: h('pre', { class: 'answer' }),
    tools: h('div', { class: 'tools' }),
    status: h('div', { class: 'status muted', role: 'status' }, 'queued; waiting for a worker…'),
  };
  r.el = h('div', { class: 'bubble assistant streaming', dataset: { request: id, deltas: 0 } }, h('details', { class: 'reasoning' }, h('summary', null, 'Reasoning'), r.reasoning), r.tools, r.answer, r.status);
  tr.append(h('div', { class: 'bubble user', dataset: { request: id } }, h('pre', null, text)), r.el);
  r.el.scrollIntoView({ block: 'end' });
  return r;
}

function apply(r, what, d) {
  if (what === 'dead_letter') {
    // No request.completed or request.failed will follow.
    r.done = true;
    r.status.textContent = 'not answered: a worker kept it as a dead letter (turnlog status --dead lists it): ' + d.reason;
    r.status.classList.add('error');
    r.el.classList.replace('streaming', 'failed');
    return;
  }
  if (what === 'delta') {
    // Deltas travel apart from the log's events and can trail behind the
    // request's end; once the stored text is shown, they change nothing.
    if (r.done) return;
    r.deltas++;
    r.el.dataset.deltas = r.deltas;
    if (d.kind === 'reasoning') r.reasoning.textContent += d.text;
    else if (d.kind === 'llm_text') {
      r.streamed += d.text;
      r.answer.textContent += d.text;
    }
    r.status.textContent = 'writing…';
    return;
  }
  switch (d.type) {
    case 'user.appended':
      r.status.textContent = 'a worker took it';
      break;
    case 'inference.started':
      r.logText = [];
      r.status.textContent = `model call (${d.payload.model || 'model'})…`;
      break;
    case 'tool.called':
      r.tools.append(h('div', { class: 'tool' }, h('code', null, `tool call ${d.payload.name}(${d.payload.arguments || ''})`)));
      break;
    case 'tool.result':
      r.tools.append(h('div', { class: 'tool' }, h('code', null, `tool result ${d.payload.text || ''}`)));
      break;
    case 'llm_text.appended':
      r.logText.push(d.payload.text);
      break;
    case 'request.completed': {
      // The log is the truth: if a delta was lost, show the stored text.
      // Deltas and events travel apart (core NATS and JetStream), so the
      // streamed text is compared once the request is over.
      r.done = true;
      const stored = r.logText.join('\n');
      r.el.dataset.streamedMatches = String(r.streamed === stored);
      if (stored && r.answer.textContent !== stored) r.answer.textContent = stored;
      const n = d.payload.inferences || 0;
      r.status.textContent = `completed (${n} model call${n === 1 ? '' : 's'})`;
      r.el.classList.replace('streaming', 'done');
      break;
    }
    case 'request.failed':
      r.done = true;
      r.status.textContent = 'failed: ' + d.payload.reason;
      r.status.classList.add('error');
      r.el.classList.replace('streaming', 'failed');
      break;
  }
}
