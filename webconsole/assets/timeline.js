// One conversation: its timeline (GET /conversations/{id}/timeline), a row
// per event coloured by kind, the active system prompt at every model call,
// the input Turn of a model call on click, and the diff of two picked
// points. It reloads when the stream brings an event, a quarantined or a
// foreign message.

import { get, enc, eventStream } from './api.js';
import { h, when, short, blockText, eventKind, debounce, count, showModal } from './dom.js';
import { showDiff } from './diffview.js';

const $ = (id) => document.getElementById(id);

let conv = '';
let picked = []; // positions, in the order picked; at most two

export function initConversation() {
  conv = document.body.dataset.conversation;
  $('diff-button').addEventListener('click', () => {
    const [x, y] = [...picked].sort((p, q) => p - q);
    showDiff($('diff-view'), `${conv}@${x}`, `${conv}@${y}`);
  });
  $('diff-clear').addEventListener('click', () => {
    picked = [];
    for (const box of document.querySelectorAll('#timeline input.pick')) box.checked = false;
    showPicked();
    $('diff-view').hidden = true;
  });
  $('turn-close').addEventListener('click', () => $('turn-dialog').close());
  load();
  follow();
}

async function load() {
  const status = $('timeline-status');
  try {
    const tl = await get(`/conversations/${enc(conv)}/timeline`);
    render(tl);
    const findings = tl.events.reduce((n, e) => n + (e.inference && e.inference.findings ? e.inference.findings.length : 0), 0);
    status.textContent = `${count(tl.events.length, 'event')}, ${count(tl.inferences, 'model call')}${findings ? `, ${count(findings, 'finding')} (replay --check)` : ''}.`;
    $('timeline').dataset.ready = 'true';
  } catch (e) {
    status.textContent = '';
    status.append(h('span', { class: 'error' }, e.message));
  }
}

/** Reloads the timeline as new events arrive on the stream. */
function follow() {
  const live = $('live-state');
  const reload = debounce(load, 300);
  const es = eventStream(`/conversations/${enc(conv)}/stream`);
  let reconnect = false;
  es.addEventListener('ready', () => {
    live.textContent = 'live';
    if (reconnect) reload(); // events may have landed while disconnected
    reconnect = true;
  });
  es.addEventListener('event', reload);
  // A message that is not a step (quarantined) or that turnlog did not
  // write (foreign) lands in the log too: the timeline shows it as a row.
  es.addEventListener('quarantined', reload);
  es.addEventListener('foreign', reload);
  es.addEventListener('end', () => (live.textContent = 'not live'));
  es.onerror = () => (live.textContent = 'reconnecting…');
}

function render(tl) {
  const rows = tl.events.map((e) => {
    const kind = eventKind(e.type);
    const failed = e.type.endsWith('.failed');
    const inf = e.inference;
    // A message that is not a step (quarantined, foreign) has no position
    // to diff from.
    const notStep = e.type === 'quarantined' || e.type === 'foreign';
    const box = notStep ? null : h('input', {
      type: 'checkbox',
      class: 'pick',
      'aria-label': `Pick ${conv}@${e.n} for the diff`,
      dataset: { n: e.n },
      onclick: (ev) => {
        ev.stopPropagation();
        pick(e.n, ev.target.checked);
      },
    });
    if (box && picked.includes(e.n)) box.checked = true;
    const row = h(
      'tr',
      {
        class: ['ev', `kind-${kind}`, failed ? 'failed' : '', inf ? 'model-call' : '', inf && inf.findings ? 'has-findings' : ''].join(' ').trim(),
        dataset: { n: e.n, type: e.type },
        title: inf ? 'Click to see the exact input Turn of this model call' : null,
        tabindex: inf ? 0 : null,
      },
      h('td', null, box),
      h('td', { class: 'num' }, notStep ? '–' : e.n),
      h('td', { class: 'time' }, notStep && e.time.startsWith('0001-') ? '' : when(e.time)),
      h('td', { class: 'type' }, e.type),
      h('td', { class: 'actor' }, e.actor),
      h('td', { class: 'summary' }, e.summary, inf ? findingsOf(inf) : null, inf ? activePrompt(inf) : null),
    );
    if (inf) {
      row.addEventListener('click', () => showTurn(inf));
      row.addEventListener('keydown', (ev) => {
        if (ev.key === 'Enter') showTurn(inf);
      });
    }
    return row;
  });
  $('timeline').tBodies[0].replaceChildren(...rows);
}

/**
 * The rules a model call's input broke (replay --check), each with the
 * blocks concerned; null when it kept them all.
 */
function findingsOf(inf) {
  if (!inf.findings || !inf.findings.length) return null;
  return h(
    'ul',
    { class: 'findings', 'aria-label': `Findings of model call #${inf.index}` },
    inf.findings.map((f) =>
      h(
        'li',
        { class: 'finding', dataset: { rule: f.rule } },
        h('span', { class: 'badge finding' }, f.rule),
        ' ',
        f.detail,
        f.blocks && f.blocks.length ? [' — blocks ', f.blocks.map((id, i) => [i ? ', ' : '', h('code', { class: 'block-id' }, id)])] : null,
      ),
    ),
  );
}

/** The active system prompt of a model call, as the timeline proves it. */
function activePrompt(inf) {
  const sp = inf.system_prompt;
  const unparsed = inf.gateway && inf.gateway.unparsed;
  const verified = unparsed
    ? h('span', { class: 'badge unparsed', title: `the gateway could not read the request: ${unparsed}` }, 'request not read: only its bytes\' hash')
    : h(
        'span',
        { class: `badge ${inf.verified ? 'verified' : 'unverified'}`, title: `input hash ${inf.input_hash}` },
        inf.verified ? 'input verified' : 'input hash does not match the log',
      );
  if (!sp) {
    return h('div', { class: 'active-prompt none' }, h('span', { class: 'badge prompt' }, `model call #${inf.index}`), ' no system prompt ', verified);
  }
  const origin = [];
  if (sp.source) origin.push(`source ${sp.source}`);
  if (sp.template_hash) origin.push(`template ${short(sp.template_hash)}`);
  if (sp.set_at) origin.push(`set at n=${sp.set_at}${sp.set_by ? ` by ${sp.set_by}` : ''}`);
  if (sp.replaced_at) origin.push(`replaced at n=${sp.replaced_at}`);
  if (sp.locked) origin.push('locked');
  if (sp.untrusted && sp.untrusted.length) origin.push('highlighted text came from variables: untrusted');
  return h(
    'div',
    { class: 'active-prompt', dataset: { promptId: sp.id, promptHash: sp.hash } },
    h('span', { class: 'badge prompt' }, `model call #${inf.index}: system prompt`),
    ' ',
    h('code', null, sp.id),
    ` at index ${sp.index}, hash ${short(sp.hash)}`,
    origin.length ? ` (${origin.join(', ')})` : '',
    ' ',
    verified,
    promptText(sp.text, sp.untrusted || []),
  );
}

/**
 * The prompt's text with what variables filled in (spans of UTF-8 byte
 * offsets, see events.Span) marked, so an auditor sees which words the
 * operator wrote: each value is a <mark class="untrusted"> naming its
 * variable; the rest is the operator's template text.
 */
function promptText(text, spans) {
  const bytes = new TextEncoder().encode(text);
  const dec = new TextDecoder();
  const parts = [];
  let at = 0;
  for (const s of spans) {
    if (s.start < at || s.end > bytes.length || s.end <= s.start) continue;
    parts.push(dec.decode(bytes.subarray(at, s.start)));
    parts.push(
      h(
        'mark',
        { class: 'untrusted', title: `from ${s.var || 'a variable'}: untrusted, not the operator's words`, dataset: { var: s.var || '' } },
        dec.decode(bytes.subarray(s.start, s.end)),
      ),
    );
    at = s.end;
  }
  parts.push(dec.decode(bytes.subarray(at)));
  return h('pre', { class: 'prompt-text' }, ...parts);
}

function pick(n, on) {
  picked = picked.filter((p) => p !== n);
  if (on) picked.push(n);
  while (picked.length > 2) {
    const old = picked.shift();
    const box = document.querySelector(`#timeline input.pick[data-n="${old}"]`);
    if (box) box.checked = false;
  }
  showPicked();
}

function showPicked() {
  const sorted = [...picked].sort((p, q) => p - q);
  $('diff-picked').textContent = sorted.length ? sorted.map((n) => `${conv}@${n}`).join(' and ') : 'none picked';
  $('diff-button').disabled = sorted.length !== 2;
}

function showTurn(inf) {
  const view = $('turn-view');
  $('turn-title').textContent = `Input of model call #${inf.index} (event ${inf.n}, model ${inf.model})`;
  if (!inf.turn) {
    view.replaceChildren(h('p', { class: 'muted' }, 'The timeline did not include this Turn.'));
  } else {
    const t = inf.turn;
    const flagged = new Map(); // block ID -> the rules that name it
    for (const f of inf.findings || []) for (const id of f.blocks || []) flagged.set(id, [...(flagged.get(id) || []), f.rule]);
    const parts = [
      findingsOf(inf),
      h('p', { class: 'muted' }, `${conv}@${inf.n - 1}: ${count(t.blocks ? t.blocks.length : 0, 'block')}; input hash ${short(inf.input_hash)} `, inf.verified ? '(verified against the log)' : '(does NOT match the log)'),
      h(
        'ol',
        { class: 'turn-blocks', start: 0 },
        (t.blocks || []).map((b) =>
          h(
            'li',
            { class: `block kind-${b.kind}${flagged.has(b.id) ? ' flagged' : ''}`, dataset: { id: b.id } },
            h('div', { class: 'block-head' }, h('span', { class: 'kind' }, b.kind), h('code', { class: 'id' }, b.id), b.trust ? h('span', { class: 'badge' }, b.trust) : null, b.call_id ? h('span', { class: 'muted' }, ` call ${b.call_id}`) : null, (flagged.get(b.id) || []).map((r) => h('span', { class: 'badge finding' }, r))),
            h('pre', { class: 'block-text' }, blockText(b)),
          ),
        ),
      ),
      t.data && Object.keys(t.data).length
        ? h('table', { class: 'kv' }, h('caption', null, 'Data'), h('tbody', null, Object.keys(t.data).sort().map((k) => h('tr', null, h('th', null, k), h('td', null, t.data[k])))))
        : null,
    ];
    view.replaceChildren(...parts.filter(Boolean));
  }
  showModal($('turn-dialog'));
}
