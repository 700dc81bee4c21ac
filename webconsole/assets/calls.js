// A conversation's model calls (GET /conversations/{id}/calls), as they
// arrive (the conversation's stream): number, time, model, tokens,
// latency, status and findings. A call opens the exact request it sent
// (GET /conversations/{id}/calls/{call}/wire), its output, and what changed
// in its input since the previous call, findings marked at their blocks.

import { get, enc, eventStream } from './api.js';
import { h, when, short, blockText, debounce, count, commandArg } from './dom.js';
import { renderDiff } from './diffview.js';
import { jsonView } from './jsonview.js';

const $ = (id) => document.getElementById(id);
const pageSize = 100;
const maxFindingLinks = 20; // calls with findings named above the list; the rest are counted
const maxFrom = 2 ** 30; // the API's largest "from"

let conv = '';
// The calls loaded, in call order: one run of consecutive calls from
// call number first (a page, and the pages loaded before or after it),
// so that call n is calls[n - first].
let calls = [];
let first = 1;
let total = 0;
let findingsTotal = 0; // over the whole conversation, not only the calls loaded
let findingCalls = []; // the numbers of the calls with findings, loaded or not
let opened = 0; // the call shown, 0 none
let shown = 0; // counts renders of the call view, so a stale load is dropped

export function initCalls() {
  conv = document.body.dataset.conversation;
  $('calls-more').addEventListener('click', more);
  $('calls-earlier').addEventListener('click', earlier);
  const n = Number(new URLSearchParams(location.search).get('call'));
  const want = Number.isInteger(n) && n > 0 ? n : 0;
  load(want).then(() => {
    if (want && callAt(want)) open(want);
  });
  follow();
}

/** The loaded call numbered n, or undefined. */
function callAt(n) {
  return n >= first ? calls[n - first] : undefined;
}

/** The number of the last call loaded (first - 1 when none is). */
function last() {
  return first + calls.length - 1;
}

/**
 * The first call of the page that holds call n: pages start at calls 1,
 * 101, 201, … as "More calls" loads them.
 */
function pageOf(n) {
  return Math.min(Math.floor((n - 1) / pageSize) * pageSize + 1, maxFrom);
}

function fetchPage(from, limit = pageSize) {
  return get(`/conversations/${enc(conv)}/calls?from=${from}&limit=${limit}`);
}

/**
 * Loads the page of calls that holds call want (a link's ?call=), the
 * first page without one, or when want is past the last call (saying so).
 */
async function load(want) {
  const status = $('calls-status');
  try {
    let page = await fetchPage(want ? pageOf(want) : 1);
    if (want > page.total) {
      notice(`There is no model call #${want}: the conversation has ${count(page.total, 'model call')}.`);
      if (!page.calls.length && page.total) page = await fetchPage(1);
    }
    calls = [];
    merge(page);
  } catch (e) {
    status.textContent = '';
    status.append(h('span', { class: 'error' }, e.message));
  }
}

function notice(text) {
  $('calls-notice').textContent = text;
  $('calls-notice').hidden = !text;
}

async function more() {
  if (last() >= total) return;
  merge(await fetchPage(last() + 1));
}

async function earlier() {
  if (first <= 1) return;
  const from = Math.max(1, first - pageSize);
  merge(await fetchPage(from, first - from));
}

/** Opens call n, loading the page that holds it first if it is not loaded. */
async function show(n) {
  if (!callAt(n)) {
    try {
      merge(await fetchPage(pageOf(n)));
    } catch (e) {
      notice(e.message);
      return;
    }
  }
  open(n);
}

/**
 * Asks again for what may have changed: the first call still open, or the
 * calls after the last one loaded when every later call is loaded. With
 * later calls not loaded (they stay behind "More calls"), the last call
 * loaded is asked for again, for the totals: how many calls, and the
 * findings of all of them.
 */
async function refresh() {
  const openCall = calls.find((c) => c.status === 'open');
  try {
    if (openCall) merge(await fetchPage(openCall.call));
    else if (last() < total) merge(await fetchPage(last(), 1));
    else merge(await fetchPage(last() + 1));
  } catch {
    // the next event tries again
  }
}

/**
 * Takes a page's calls and totals. Calls next to or among those loaded
 * join them; others replace them, so that the list stays one run of
 * consecutive calls.
 */
function merge(page) {
  total = page.total;
  findingsTotal = page.findings_total || 0;
  findingCalls = page.finding_calls || [];
  const got = page.calls;
  if (got.length) {
    const lo = got[0].call;
    const hi = got[got.length - 1].call;
    const byCall = new Map(!calls.length || hi < first - 1 || lo > last() + 1 ? [] : calls.map((c) => [c.call, c]));
    for (const c of got) byCall.set(c.call, c);
    calls = [...byCall.values()].sort((a, b) => a.call - b.call);
    first = calls[0].call;
  }
  render();
  const cur = opened && callAt(opened);
  // A call that was open when shown has ended: show how.
  if (cur && $('call-view').dataset.status === 'open' && cur.status !== 'open') open(opened);
}

/** Follows the conversation's stream: each model call's events refresh the list. */
function follow() {
  const live = $('live-state');
  const again = debounce(refresh, 200);
  const es = eventStream(`/conversations/${enc(conv)}/stream`);
  let reconnect = false;
  es.addEventListener('ready', () => {
    live.textContent = 'live';
    if (reconnect) again();
    reconnect = true;
  });
  es.addEventListener('event', (m) => {
    let type = '';
    try {
      type = JSON.parse(m.data).type || '';
    } catch {
      return;
    }
    if (type.startsWith('inference.') || type.startsWith('request.')) again();
  });
  es.addEventListener('end', () => (live.textContent = 'not live'));
  es.onerror = () => (live.textContent = 'reconnecting…');
}

function render() {
  // The findings are the whole conversation's: those of calls not loaded
  // are counted apart, not left out (a summary that counts only the calls
  // loaded says "no findings" of a conversation whose finding is further on).
  const loaded = calls.reduce((n, c) => n + (c.findings || []).length, 0);
  const notShown = findingsTotal - loaded;
  const all = calls.length === total;
  $('calls-status').textContent =
    total === 0
      ? 'No model calls yet.'
      : count(total, 'model call') +
        (all ? '' : calls.length ? `, calls ${first}–${last()} shown` : ', none shown') +
        (findingsTotal ? `, ${count(findingsTotal, 'finding')}${notShown > 0 ? ` (${notShown} in calls not shown yet)` : ''}.` : '.');
  findingLinks();
  $('calls-earlier').hidden = !calls.length || first <= 1;
  $('calls-more').hidden = last() >= total;
  $('calls').tBodies[0].replaceChildren(...calls.map(row));
  $('calls').dataset.ready = 'true';
  $('calls').dataset.total = total;
}

/** Names the calls with findings, each a link that opens it, loaded or not. */
function findingLinks() {
  const el = $('calls-findings');
  el.hidden = !findingCalls.length;
  if (!findingCalls.length) return;
  const named = findingCalls.slice(0, maxFindingLinks);
  const link = (n) =>
    h(
      'a',
      {
        class: callAt(n) ? 'finding-call' : 'finding-call not-loaded',
        href: `?call=${n}`,
        dataset: { call: n },
        title: callAt(n) ? 'Open this call' : 'Load the calls around this one and open it',
        onclick: (ev) => {
          ev.preventDefault();
          show(n);
        },
      },
      `#${n}`,
    );
  el.replaceChildren(
    findingCalls.length === 1 ? 'Findings at model call ' : 'Findings at model calls ',
    ...named.flatMap((n, i) => (i ? [', ', link(n)] : [link(n)])),
    findingCalls.length > named.length ? ` and ${findingCalls.length - named.length} more` : '',
    '.',
  );
}

function row(c) {
  const fs = c.findings || [];
  const tr = h(
    'tr',
    {
      class: ['call', `status-${c.status}`, fs.length ? 'has-findings' : '', c.call === opened ? 'selected' : ''].join(' ').trim(),
      dataset: { call: c.call, n: c.n, status: c.status },
      tabindex: 0,
      title: 'Open the request this call sent, its output and what changed since the previous call',
    },
    h('td', { class: 'num' }, c.call),
    h('td', { class: 'time' }, when(c.time)),
    h('td', { class: 'model' }, c.model || '—', c.purpose ? h('span', { class: 'badge' }, c.purpose) : null),
    h('td', { class: 'num tokens' }, c.usage ? `${c.usage.input_tokens} / ${c.usage.output_tokens}` : '—'),
    h('td', { class: 'num latency' }, latency(c.latency_ms)),
    h('td', null, h('span', { class: `badge status ${c.status}`, title: c.error || null }, c.status)),
    h('td', { class: 'findings' }, fs.length ? fs.map((f) => h('span', { class: 'badge finding', dataset: { rule: f.rule }, title: f.detail }, f.rule)) : ''),
    h('td', { class: 'since' }, since(c)),
  );
  tr.addEventListener('click', () => open(c.call));
  tr.addEventListener('keydown', (ev) => {
    if (ev.key === 'Enter') open(c.call);
  });
  return tr;
}

function latency(ms) {
  if (ms === null || ms === undefined) return '—';
  if (ms < 1) return `${Math.round(ms * 1000)} µs`;
  if (ms < 1000) return `${ms.toFixed(1)} ms`;
  return `${(ms / 1000).toFixed(2)} s`;
}

/** One line on what changed since the previous call. */
function since(c) {
  const r = c.since_previous;
  if (!r) return h('span', { class: 'muted' }, c.previous ? 'input not in the log' : 'first call');
  const counts = {};
  for (const x of r.changes) counts[x.op] = (counts[x.op] || 0) + 1;
  const parts = Object.entries(counts).map(([op, n]) => `${n} ${op}`);
  return [
    r.system_prompt ? h('span', { class: 'badge prompt-changed' }, 'system prompt changed') : null,
    ' ',
    parts.length ? parts.join(', ') : r.system_prompt ? '' : 'no change',
  ];
}

async function open(n) {
  const c = callAt(n);
  if (!c) return;
  opened = n;
  const mine = ++shown;
  for (const tr of $('calls').tBodies[0].rows) tr.classList.toggle('selected', Number(tr.dataset.call) === n);
  const url = new URL(location.href);
  url.searchParams.set('call', n);
  history.replaceState(null, '', url);

  const view = $('call-view');
  view.hidden = false;
  view.dataset.call = n;
  view.dataset.status = c.status;
  delete view.dataset.ready;
  const wire = h('section', { id: 'call-wire', class: 'call-part', 'aria-label': 'Request sent' }, h('h3', null, 'Request sent'), h('p', { class: 'muted' }, 'Rendering the request again from the log…'));
  const diff = h('section', { id: 'call-diff', class: 'call-part', 'aria-label': 'Since the previous call' }, h('h3', null, c.previous ? `Since model call #${c.previous}` : 'Since the previous call'));
  const parts = [
    h(
      'header',
      { class: 'call-head' },
      h('h2', null, `Model call #${c.call}`),
      h('button', { type: 'button', class: 'quiet', id: 'call-close', onclick: close }, 'Close'),
    ),
    h(
      'p',
      { class: 'muted call-meta' },
      `event ${c.n} · ${when(c.time)} · model ${c.model || '—'}`,
      c.provider ? ` · ${c.provider}` : '',
      c.threading ? ` · threading ${c.threading}` : '',
      ` · input ${short(c.input_hash, 18)} `,
      c.unparsed
        ? h('span', { class: 'badge unparsed', title: `the gateway could not read the request: ${c.unparsed}` }, 'request not read: only its bytes\' hash')
        : h('span', { class: `badge ${c.verified ? 'verified' : 'unverified'}` }, c.verified ? 'input verified' : 'input not verified'),
      c.wire_sha256 ? ` · wire sha256 ${short(c.wire_sha256, 16)}` : '',
      ' · ',
      h('code', null, `turnlog replay --inference ${c.call} ${commandArg(conv)}`),
    ),
    c.status === 'failed' ? h('p', { class: 'error' }, `Failed: ${c.error || 'no reason recorded'}`) : null,
    c.status === 'open' ? h('p', { class: 'muted' }, 'No event closed this call yet: it is running, or what made it stopped.') : null,
    findingsList(c.findings || []),
    h('div', { class: 'call-parts' }, wire, output(c), otherChoices(c), logprobs(c)),
    diff,
  ];
  view.replaceChildren(...parts.filter(Boolean));
  view.scrollIntoView({ block: 'start' });
  // The blocks the findings name, by ID, from the Turn the call was made
  // on: their texts are marked where the request carries them.
  const input = (c.findings || []).length ? get(`/conversations/${enc(conv)}/turn?at=${c.n - 1}`).catch(() => null) : Promise.resolve(null);
  await Promise.all([showWire(wire, c, mine, input), showDiffOf(diff, c, mine)]);
  if (mine === shown) view.dataset.ready = 'true';
}

function close() {
  opened = 0;
  $('call-view').hidden = true;
  for (const tr of $('calls').tBodies[0].rows) tr.classList.remove('selected');
  const url = new URL(location.href);
  url.searchParams.delete('call');
  history.replaceState(null, '', url);
}

function findingsList(fs) {
  if (!fs.length) return null;
  return h(
    'section',
    { class: 'call-findings', 'aria-label': 'Findings' },
    h('h3', null, `${count(fs.length, 'finding')} (replay --check)`),
    h(
      'ul',
      null,
      fs.map((f) => h('li', { class: 'finding', dataset: { rule: f.rule } }, h('strong', null, f.rule), ': ', f.detail, (f.blocks || []).length ? [' (blocks ', f.blocks.map((b, i) => [i ? ', ' : '', h('code', { class: 'block-id' }, b)]), ')'] : null)),
    ),
  );
}

/** The answers a call asked for besides the first ("n"), as kept. */
function otherChoices(c) {
  const others = Array.isArray(c.other_choices) ? c.other_choices : [];
  if (!others.length) return null;
  return h(
    'section',
    { id: 'call-other-choices', class: 'call-part', 'aria-label': 'Other choices' },
    h('h3', null, `${count(others.length, 'other choice')} (the conversation went on with the first)`),
    h(
      'ol',
      { class: 'turn-blocks' },
      others.map((o) => {
        // A choice the gateway left out, the outcome being too large to
        // store with it, keeps its index and size alone
        // ({"index", "omitted_bytes", "keys"}: calls.TrimOtherChoices).
        if (o && !o.message && typeof o.omitted_bytes === 'number') {
          return h(
            'li',
            { class: 'block kind-llm_text', dataset: { choice: String(o.index), omitted: 'true' } },
            h('div', { class: 'block-head' }, h('span', { class: 'kind' }, `choice ${o.index}`), h('span', { class: 'muted' }, `: left out of the record (too large to store: ${o.omitted_bytes.toLocaleString('en-US')} bytes)`)),
          );
        }
        const m = (o && o.message) || {};
        const calls = (m.tool_calls || []).map((t) => `${(t.function || {}).name || '?'}(${(t.function || {}).arguments || ''})`);
        if (m.function_call) calls.push(`${m.function_call.name || '?'}(${m.function_call.arguments || ''})`);
        return h(
          'li',
          { class: 'block kind-llm_text', dataset: { choice: String(o && o.index) } },
          h('div', { class: 'block-head' }, h('span', { class: 'kind' }, `choice ${o && o.index}`), o && o.finish_reason ? h('span', { class: 'muted' }, ` ${o.finish_reason}`) : null),
          h('pre', { class: 'block-text' }, [typeof m.content === 'string' ? m.content : '', ...calls].filter(Boolean).join('\n')),
        );
      }),
    ),
  );
}

/** The first choice's token log probabilities, when the call asked for them. */
function logprobs(c) {
  if (c.logprobs_omitted) {
    return h(
      'section',
      { id: 'call-logprobs', class: 'call-part', 'aria-label': 'Log probabilities' },
      h('h3', null, 'Log probabilities'),
      h('p', { class: 'muted' }, `Not kept: ${c.logprobs_omitted} bytes, over the record's limit.`),
    );
  }
  const tokens = (c.logprobs && Array.isArray(c.logprobs.content) && c.logprobs.content) || [];
  if (!tokens.length) return null;
  const pct = (lp) => (typeof lp === 'number' ? `${(100 * Math.exp(lp)).toFixed(1)}%` : '?');
  return h(
    'section',
    { id: 'call-logprobs', class: 'call-part', 'aria-label': 'Log probabilities' },
    h('h3', null, `Log probabilities of ${count(tokens.length, 'token')}`),
    h(
      'table',
      { class: 'logprobs' },
      h('thead', null, h('tr', null, h('th', null, 'token'), h('th', null, 'probability'), h('th', null, 'alternatives'))),
      h(
        'tbody',
        null,
        tokens.map((t) =>
          h(
            'tr',
            null,
            h('td', null, h('code', null, JSON.stringify(String((t && t.token) ?? '')))),
            h('td', { title: `logprob ${t && t.logprob}` }, pct(t && t.logprob)),
            h('td', null, ((t && t.top_logprobs) || []).filter((a) => a && a.token !== t.token).map((a) => `${JSON.stringify(String(a.token ?? ''))} ${pct(a.logprob)}`).join(', ')),
          ),
        ),
      ),
    ),
  );
}

function output(c) {
  const blocks = c.output || [];
  const partial = c.partial || [];
  return h(
    'section',
    { id: 'call-output', class: 'call-part', 'aria-label': 'Output' },
    h('h3', null, 'Output'),
    blocks.length === 0
      ? h('p', { class: 'muted' }, c.status === 'finished' ? 'The model produced nothing.' : 'No output: the call did not finish.')
      : blockList(blocks),
    // What a failed call delivered before it failed: the client received
    // it, the conversation did not go on from it.
    partial.length === 0
      ? null
      : h(
          'div',
          { id: 'call-partial', class: 'partial' },
          h('h4', null, 'Partial output (received by the client before the call failed; not sent on: not in the conversation)'),
          blockList(partial),
        ),
  );
}

function blockList(blocks) {
  return h(
    'ol',
    { class: 'turn-blocks' },
    blocks.map((b) =>
      h(
        'li',
        { class: `block kind-${b.kind}`, dataset: { id: b.id } },
        h('div', { class: 'block-head' }, h('span', { class: 'kind' }, b.kind), h('code', { class: 'id' }, b.id), b.call_id ? h('span', { class: 'muted' }, ` call ${b.call_id}`) : null),
        h('pre', { class: 'block-text' }, blockText(b)),
        b.encrypted ? h('p', { class: 'opaque' }, `‹opaque encrypted reasoning, ${b.encrypted.length} characters›`) : null,
        sourcesOf(b),
      ),
    ),
  );
}

/**
 * The sources a model that searched cites, where the record keeps them
 * on block b: a streamed answer's (gateway.streamed: Chat Completions'
 * annotations, a Messages text block's citations) or the answer's JSON
 * kept whole (gateway.item: a Chat message's annotations, the citations
 * of a Messages answer's text blocks, a Responses message's output_text
 * annotations). The model wrote the links: only http and https ones are
 * made links, the others shown as text.
 */
function sourcesOf(b) {
  const meta = b.meta || {};
  const parse = (s) => {
    try {
      return JSON.parse(s || 'null');
    } catch {
      return null;
    }
  };
  const found = new Map(); // url or cited text -> source
  const take = (list) => {
    for (const a of Array.isArray(list) ? list : []) {
      const c = a && typeof a.url_citation === 'object' ? a.url_citation : a;
      if (!c || typeof c !== 'object') continue;
      const url = typeof c.url === 'string' ? c.url : '';
      const title = [c.title, c.document_title].find((t) => typeof t === 'string' && t) || '';
      const cited = typeof c.cited_text === 'string' ? c.cited_text : '';
      const key = url || cited;
      if (key && !found.has(key)) found.set(key, { url, title, cited });
    }
  };
  const streamed = parse(meta['gateway.streamed']);
  if (streamed) {
    take(streamed.annotations);
    take(streamed.citations);
  }
  const item = parse(meta['gateway.item']);
  if (item) {
    take(item.annotations);
    for (const p of Array.isArray(item.content) ? item.content : []) {
      if (p) {
        take(p.citations);
        take(p.annotations);
      }
    }
  }
  if (found.size === 0) return null;
  const web = (u) => {
    try {
      return ['http:', 'https:'].includes(new URL(u).protocol);
    } catch {
      return false;
    }
  };
  return h(
    'div',
    { class: 'sources' },
    h('h5', null, `Sources cited (${found.size})`),
    h(
      'ul',
      null,
      [...found.values()].map((s) =>
        h(
          'li',
          null,
          web(s.url) ? h('a', { href: s.url, rel: 'noopener noreferrer nofollow', target: '_blank' }, s.title || s.url) : h('span', null, s.title || s.url),
          s.url && !web(s.url) ? h('code', { class: 'muted' }, ` ${s.url}`) : null,
          s.cited ? h('q', null, s.cited) : null,
        ),
      ),
    ),
  );
}

async function showWire(el, c, mine, input) {
  let w;
  let marks;
  try {
    [w, marks] = await Promise.all([get(`/conversations/${enc(conv)}/calls/${c.call}/wire`), input.then((turn) => findingMarks(c.findings || [], turn))]);
  } catch (e) {
    if (mine !== shown) return;
    el.replaceChildren(h('h3', null, 'Request sent'), h('p', { class: 'muted wire-missing' }, e.message));
    return;
  }
  if (mine !== shown) return;
  let pretty;
  try {
    pretty = jsonView(JSON.parse(w.body), marks);
  } catch {
    pretty = h('pre', { class: 'json' }, w.body);
  }
  const marked = pretty.querySelectorAll('mark.finding').length;
  const parts = [
    h('h3', null, 'Request sent'),
    h(
      'p',
      { class: 'muted' },
      `${w.description} · rendering ${w.rendering} · sha256 ${short(w.sha256, 16)} `,
      h('span', { class: `badge ${w.verified ? 'verified' : 'unverified'}` }, w.verified ? 'matches the record' : 'does NOT match the record'),
    ),
    marks.size
      ? h(
          'p',
          { class: marked ? 'finding-legend' : 'muted finding-legend' },
          marked ? 'Highlighted: the text of the blocks the findings name, where the request carries it.' : 'The request does not carry the text of the blocks the findings name as it is in the Turn.',
        )
      : null,
    (w.notes || []).length ? h('ul', { class: 'wire-notes' }, w.notes.map((n) => h('li', null, `block ${n.index} (`, h('code', null, n.id), `): ${n.note}`))) : null,
    pretty,
    h('details', { class: 'exact' }, h('summary', null, `Exact bytes (${w.body.length} characters)`), h('pre', { class: 'raw' }, w.body)),
  ];
  el.replaceChildren(...parts.filter(Boolean));
}

/**
 * What jsonView marks for findings fs: the text of each block they name
 * (found in turn, the Turn the call was made on) with the rules and blocks.
 */
function findingMarks(fs, turn) {
  const marks = new Map();
  if (!turn) return marks;
  const byID = new Map((turn.blocks || []).map((b) => [b.id, b]));
  for (const f of fs) {
    for (const id of f.blocks || []) {
      const b = byID.get(id);
      if (!b || !b.text) continue;
      const m = marks.get(b.text) || { rules: [], blocks: [] };
      if (!m.rules.includes(f.rule)) m.rules.push(f.rule);
      if (!m.blocks.includes(id)) m.blocks.push(id);
      marks.set(b.text, m);
    }
  }
  return marks;
}

async function showDiffOf(el, c, mine) {
  const r = c.since_previous;
  if (!r) {
    el.append(h('p', { class: 'muted' }, c.previous ? `The input of this call or of call #${c.previous} cannot be rebuilt from the log.` : 'This is the first model call: nothing came before it.'));
    return;
  }
  const prev = callAt(c.previous);
  let ta = null;
  let tb = null;
  if (!c.purpose && prev) {
    // A call on the conversation's Turn received the Turn before its
    // inference.started.
    try {
      [ta, tb] = await Promise.all([get(`/conversations/${enc(conv)}/turn?at=${prev.n - 1}`), get(`/conversations/${enc(conv)}/turn?at=${c.n - 1}`)]);
    } catch {
      ta = tb = null;
    }
    // A call whose input was part of the Turn (a gateway call that
    // continued a response on the provider's side) is shown by its
    // changes only.
    if (ta && tb && ((ta.blocks || []).length !== prev.input_blocks || (tb.blocks || []).length !== c.input_blocks)) ta = tb = null;
  }
  if (mine !== shown) return;
  const a = prev ? `call #${prev.call} (${conv}@${prev.n - 1})` : `call #${c.previous}`;
  const b = `call #${c.call} (${conv}@${c.n - 1})`;
  el.append(h('div', { class: 'diff' }, ...renderDiff(r, ta, tb, a, b, c.findings || [])));
}
