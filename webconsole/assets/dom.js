// Small DOM helpers. Text always goes in as text (never as HTML), so
// whatever a conversation holds cannot run in the page.

/**
 * h('tr', {class: 'x', dataset: {n: 3}, onclick: f}, child, 'text', ...)
 * builds an element; null and false children are skipped.
 */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (v === true) el.setAttribute(k, '');
    else el.setAttribute(k, String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : String(c));
  }
}

/** Shows msg in an error element, or hides it for an empty msg. */
export function showError(el, msg) {
  el.textContent = msg || '';
  el.hidden = !msg;
}

/** Local date and time of an RFC 3339 string, to the second. */
export function when(t) {
  const d = new Date(t);
  if (Number.isNaN(d.getTime())) return t;
  const p = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

/**
 * n and the noun, plural unless n is 1: count(1, 'model call') is
 * "1 model call", count(2, 'event') "2 events" (every noun the console
 * counts takes an s, as internal/plural writes them on the Go side).
 */
export function count(n, noun) {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}

/** The first n characters of a hash, enough to compare by eye. */
// commandArg is conversation ID id as the last argument of a turnlog
// command shown to be run: after "--" when it begins with '-', which the
// command would otherwise read as flags (events.CommandArg).
export function commandArg(id) {
  return id.startsWith('-') ? '-- ' + id : id;
}

export function short(hash, n = 12) {
  return hash && hash.length > n ? hash.slice(0, n) + '…' : hash || '';
}

/** Calls fn once no call came for ms milliseconds. */
export function debounce(fn, ms) {
  let t;
  return (...args) => {
    clearTimeout(t);
    t = setTimeout(() => fn(...args), ms);
  };
}

/** The text of a block for display: text, or tool name and arguments. */
export function blockText(b) {
  if (b.kind === 'tool_call') return `${b.tool || ''}(${b.arguments || ''})`;
  if (b.text) return b.text;
  if (b.encrypted) return '(encrypted reasoning)';
  return '';
}

/** The kind class of an event type: its first dotted part, grouped. */
export function eventKind(type) {
  const head = type.split('.')[0];
  switch (head) {
    case 'tool_call':
    case 'tool_result':
      return 'tool';
    case 'block':
    case 'blocks':
    case 'turn':
      return 'blocks';
    default:
      return head;
  }
}

let pinned = 0; // modals open that pin the page
let pinnedAt = 0;

/**
 * Opens dialog as a modal and pins the page under it until it closes. The
 * overlay (::backdrop) is fixed to the viewport: a page that scrolled, or
 * ran below the fold, would show uncovered under it. Pinned, the page keeps
 * its place on screen and is no taller than the viewport; on close it is
 * put back where it was.
 */
export function showModal(dialog) {
  if (dialog.open) return;
  if (pinned++ === 0) {
    pinnedAt = window.scrollY;
    document.body.style.top = `-${pinnedAt}px`;
    document.body.classList.add('modal-open');
  }
  dialog.addEventListener(
    'close',
    () => {
      if (--pinned > 0) return;
      document.body.classList.remove('modal-open');
      document.body.style.top = '';
      window.scrollTo(0, pinnedAt);
    },
    { once: true },
  );
  dialog.showModal();
}
