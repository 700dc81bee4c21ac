// The conversations list (GET /conversations?q=), newest first, with a
// search by ID and a form to start a new chat.

import { get, enc } from './api.js';
import { h, when, debounce, count } from './dom.js';

const $ = (id) => document.getElementById(id);

let seq = 0;

export function initConversations() {
  const search = $('search');
  search.value = new URLSearchParams(location.search).get('q') || '';
  const reload = debounce(load, 200);
  search.addEventListener('input', reload);
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
  const url = new URL(location.href);
  if (q) url.searchParams.set('q', q);
  else url.searchParams.delete('q');
  history.replaceState(null, '', url);
  const mine = ++seq;
  const status = $('list-status');
  try {
    // Each row's counts cost a read of its conversation (as in turnlog ls):
    // the newest 100 are shown, the search finds the others.
    const body = await get('/conversations?limit=100' + (q ? `&q=${enc(q)}` : ''));
    if (mine !== seq) return;
    const rows = body.conversations.map((c) =>
      h(
        'tr',
        { dataset: { id: c.id } },
        h('td', null, h('a', { href: `/ui/conversations/${enc(c.id)}` }, c.id)),
        h('td', { class: 'num' }, c.events),
        h('td', { class: 'num' }, c.model_calls),
        h('td', { class: 'time' }, when(c.updated_at)),
        h('td', null, h('a', { href: `/ui/chat/${enc(c.id)}`, class: 'quiet' }, 'chat')),
      ),
    );
    $('conversation-list').tBodies[0].replaceChildren(...rows);
    const shown = body.conversations.length;
    status.textContent =
      body.total === 0 ? (q ? `No conversation ID contains “${q}”.` : 'No conversations yet: start a chat.') : shown < body.total ? `${shown} of ${count(body.total, 'conversation')}, newest first.` : `${count(body.total, 'conversation')}, newest first.`;
    $('conversation-list').dataset.ready = 'true';
  } catch (e) {
    if (mine !== seq) return;
    status.textContent = '';
    status.append(h('span', { class: 'error' }, e.message));
  }
}
