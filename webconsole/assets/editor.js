// The system prompt template editor: a full-page modal over any page.
// GET/PUT /system-prompt load and save, GET /system-prompt/variables gives
// the variable buttons, POST /system-prompt/render the live preview.

import { get, write, tokenRequired, hasToken, askToken } from './api.js';
import { h, showError, debounce } from './dom.js';

const $ = (id) => document.getElementById(id);

let loaded = false;
let saved = ''; // the template as last loaded or saved
let pendingDynamic = null; // the dynamic variable waiting for its name
let previewSeq = 0;

export function initEditor() {
  const modal = $('template-modal');
  $('open-template').addEventListener('click', openEditor);
  $('template-close').addEventListener('click', () => modal.close());
  $('template-save').addEventListener('click', save);
  const source = $('template-source');
  const schedule = debounce(preview, 300);
  source.addEventListener('input', () => {
    showState();
    schedule();
  });
  for (const id of ['preview-cwd', 'preview-model', 'preview-conversation']) {
    $(id).addEventListener('input', schedule);
  }
  $('file-path-form').addEventListener('submit', (e) => {
    e.preventDefault();
    insertDynamic();
  });
  $('file-path-cancel').addEventListener('click', hideDynamic);
  if (document.body.dataset.page === 'template') openEditor();
}

async function openEditor() {
  const modal = $('template-modal');
  if (!modal.open) modal.showModal();
  if (!loaded) {
    loaded = true;
    await Promise.all([loadTemplate(), loadVariables()]);
  }
  // The preview renders on the server (it reads files, so it is a write):
  // with a token configured, ask for it once, now.
  if (tokenRequired() && !hasToken()) {
    try {
      await askToken();
    } catch (e) {
      showError($('preview-error'), 'The preview and saving need the API token: ' + e.message);
      return;
    }
  }
  preview();
}

async function loadTemplate() {
  try {
    const body = await get('/system-prompt');
    saved = body.template;
    $('template-source').value = body.template;
    $('template-source').dataset.default = body.default ? 'true' : 'false';
    if (body.unavailable) {
      // A template outage: the server answered the default without knowing
      // whether another template is set; saving would fail (503).
      showError($('template-error'), 'The template store is unavailable: ' + body.unavailable);
      showState('the built-in default (the stored template could not be read)');
    } else {
      showState(body.default ? 'the built-in default (no template set yet)' : '');
    }
  } catch (e) {
    showError($('template-error'), 'Could not load the template: ' + e.message);
  }
}

async function loadVariables() {
  const bar = $('variable-buttons');
  try {
    const body = await get('/system-prompt/variables');
    bar.replaceChildren(
      ...body.variables.map((v) =>
        h('button', { type: 'button', class: 'var', title: v.description, dataset: { ref: v.name }, onclick: () => insertVariable(v) }, v.name),
      ),
    );
  } catch (e) {
    showError($('template-error'), 'Could not load the variables: ' + e.message);
  }
}

/** Inserts [ref] at the cursor; a dynamic variable asks for its name first. */
function insertVariable(v) {
  if (!v.dynamic) {
    insertAtCursor(`[${v.name}]`);
    return;
  }
  // "file:<path>": the part in angle brackets is chosen by the user.
  const m = /^([a-z]+):<(.+)>$/.exec(v.name);
  pendingDynamic = m ? { type: m[1], what: m[2] } : { type: v.name.split(':')[0], what: 'name' };
  $('file-path-label').textContent = `${pendingDynamic.type}: ${pendingDynamic.what}`;
  const form = $('file-path-form');
  form.hidden = false;
  $('file-path-input').value = '';
  $('file-path-input').focus();
}

function insertDynamic() {
  const name = $('file-path-input').value.trim();
  if (!pendingDynamic) return;
  if (!name || /[\]\n]/.test(name)) {
    $('file-path-input').setCustomValidity("Give a name without ']' or line breaks.");
    $('file-path-input').reportValidity();
    return;
  }
  $('file-path-input').setCustomValidity('');
  const ref = `[${pendingDynamic.type}:${name}]`;
  hideDynamic();
  insertAtCursor(ref);
}

function hideDynamic() {
  pendingDynamic = null;
  $('file-path-form').hidden = true;
}

function insertAtCursor(text) {
  const ta = $('template-source');
  const start = ta.selectionStart ?? ta.value.length;
  const end = ta.selectionEnd ?? start;
  ta.setRangeText(text, start, end, 'end');
  ta.focus();
  ta.dispatchEvent(new Event('input', { bubbles: true }));
}

function showState(note) {
  const changed = $('template-source').value !== saved;
  $('template-state').textContent = changed ? 'unsaved changes' : note || '';
}

async function preview() {
  if (!$('template-modal').open) return;
  if (tokenRequired() && !hasToken()) return; // asked on open; no dialog per keystroke
  const seq = ++previewSeq;
  const body = { template: $('template-source').value };
  const cwd = $('preview-cwd').value.trim();
  const model = $('preview-model').value.trim();
  const conv = $('preview-conversation').value.trim();
  if (cwd) body.cwd = cwd;
  if (model) body.model = model;
  if (conv) body.conversation_id = conv;
  try {
    const res = await write('POST', '/system-prompt/render', body);
    if (seq !== previewSeq) return; // a newer preview is on its way
    showError($('preview-error'), '');
    const out = $('preview-output');
    out.textContent = res.prompt;
    out.classList.toggle('empty', res.prompt === '');
    out.dataset.empty = res.prompt === '' ? 'no system prompt' : '';
    const rows = Object.keys(res.variables)
      .sort()
      .map((k) => h('tr', null, h('th', null, k), h('td', null, h('pre', null, res.variables[k]))));
    $('preview-variables').tBodies[0].replaceChildren(...rows);
    showWarnings(res.warnings);
  } catch (e) {
    if (seq !== previewSeq) return;
    showError($('preview-error'), 'Preview failed: ' + e.message);
  }
}

async function save() {
  const button = $('template-save');
  const status = $('template-status');
  const text = $('template-source').value;
  showError($('template-error'), '');
  status.textContent = 'Saving…';
  button.disabled = true;
  try {
    const res = await write('PUT', '/system-prompt', { template: text });
    saved = res.template;
    showWarnings(res.warnings);
    status.textContent = `Saved at ${new Date().toLocaleTimeString()}` + (res.template === '' ? ' (no system prompt for new conversations)' : '');
    showState();
  } catch (e) {
    status.textContent = '';
    showError($('template-error'), 'Not saved: ' + e.message);
  } finally {
    button.disabled = false;
  }
}

/**
 * Lists the template's warnings (template.Lint, as PUT /system-prompt and
 * the preview answer them): "line L, column C: message", each selecting
 * its construct in the source when clicked.
 */
function showWarnings(warnings) {
  const list = warnings || [];
  const items = list.map((w) =>
    h(
      'li',
      { dataset: { code: w.code, line: String(w.line), col: String(w.col) } },
      h('button', { type: 'button', class: 'quiet', onclick: () => selectWarning(w) }, `line ${w.line}, column ${w.col}`),
      ' ' + w.message,
    ),
  );
  $('template-warning-list').replaceChildren(...items);
  $('template-warnings').hidden = items.length === 0;
}

/** Selects a warning's construct in the textarea: line and column count characters. */
function selectWarning(w) {
  const ta = $('template-source');
  const lines = ta.value.split('\n');
  if (w.line > lines.length) return;
  let start = 0;
  for (let i = 0; i < w.line - 1; i++) start += lines[i].length + 1;
  // Columns count characters (code points); JavaScript indexes UTF-16 units.
  start += Array.from(lines[w.line - 1]).slice(0, w.col - 1).join('').length;
  const length = (w.text || '').length;
  ta.focus();
  ta.setSelectionRange(start, start + length);
}
