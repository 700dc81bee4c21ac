// The conversations list (GET /conversations?q=&findings=), newest first,
// with a search by ID, a filter for conversations with findings (the rules
// of turnlog replay --check) and a form to start a new chat.

import { get, enc } from './api.js';
import { h, when, debounce, count } from './dom.js';

const $ = (id) => document.getElementById(id);

let seq = 0;

export function initConversations() {
  const search = $('search');
  const params = new URLSearchParams(location.search);
  search.value = params.get('q') || '';
  $('with-findings').checked = params.get('findings') === 'true';
  const reload = debounce(load, 200);
  search.addEventListener('input', reload);
  $('with-findings').addEventListener('change', load);
  $('search-form').addEventListener('submit', (e) => {
    e.preventDefault();
    load();
  });
  $('new-chat-id').value = 'chat-' + Date.now().toString(36);
  $('new-chat-form').addEventListener('submit', (e) => {
    e.preventDefault();
    location.href = '/ui/chat/' + enc($('new-chat-id').value.trim());
  });
  load();
}

async function load() {
  const q = $('search').value.trim();
  const onlyFindings = $('with-findings').checked;
  const url = new URL(location.href);
  if (q) url.searchParams.set('q', q);
  else url.searchParams.delete('q');
  if (onlyFindings) url.searchParams.set('findings', 'true');
  else url.searchParams.delete('findings');
  history.replaceState(null, '', url);
  const mine = ++seq;
  const status = $('list-status');
  const query = new URLSearchParams();
  if (q) query.set('q', q);
  if (onlyFindings) query.set('findings', 'true');
  if (onlyFindings) status.textContent = 'Checking conversations for findings…';
  try {
    // Each row's counts cost a read of its conversation (as in turnlog ls):
    // the newest 100 are shown, the search finds the others.
    query.set('limit', '100');
    const body = await get(`/conversations?${query}`);
    if (mine !== seq) return;
    const rows = body.conversations.map((c) =>
      h(
        'tr',
        { dataset: { id: c.id } },
        h('td', null, h('a', { href: `/ui/conversations/${enc(c.id)}` }, c.id)),
        h(
          'td',
          { class: 'first-message', title: c.first_message || null },
          (c.first_message || '').slice(0, 80),
          c.forked_from ? h('span', { class: 'quiet' }, ` (fork of ${c.forked_from})`) : '',
        ),
        h('td', { class: 'num' }, c.events),
        h('td', { class: 'num' }, c.model_calls),
        h('td', { class: 'time' }, when(c.updated_at)),
        h(
          'td',
          { class: 'num findings' },
          c.findings
            ? h('a', { href: `/ui/conversations/${enc(c.id)}/calls`, class: 'badge finding', title: 'The rules its model inputs broke (turnlog replay --check): see its model calls' }, String(c.findings))
            : '',
        ),
        h('td', null, h('a', { href: `/ui/chat/${enc(c.id)}`, class: 'quiet' }, 'chat')),
      ),
    );
    $('conversation-list').tBodies[0].replaceChildren(...rows);
    const shown = body.conversations.length;
    status.textContent =
      body.total === 0
        ? onlyFindings
          ? q
            ? `No conversation whose ID contains “${q}” has findings.`
            : 'No conversation has findings.'
          : q
            ? `No conversation ID contains “${q}”.`
            : 'No conversations yet: start a chat.'
        : (shown < body.total ? `${shown} of ${count(body.total, 'conversation')}` : count(body.total, 'conversation')) + (onlyFindings ? ' with findings' : '') + ', newest first.';
    $('conversation-list').dataset.ready = 'true';
  } catch (e) {
    if (mine !== seq) return;
    status.textContent = '';
    status.append(h('span', { class: 'error' }, e.message));
  }
}
