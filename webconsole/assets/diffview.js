// Renders GET /diff (replay.Result, what `turnlog diff-turns -o json`
// prints) side by side over the two Turns (GET /conversations/{id}/turn):
// moves, changes, additions and removals on the blocks they concern, and
// each side's duplicates and adjacency violations highlighted.

import { get, enc } from './api.js';
import { h, blockText, count } from './dom.js';

/** Splits "conv@n" into its conversation and position (null: latest). */
export function parsePoint(p) {
  const i = p.lastIndexOf('@');
  if (i < 0) return { conv: p, at: null };
  return { conv: p.slice(0, i), at: p.slice(i + 1) };
}

function turnOf(point) {
  const { conv, at } = parsePoint(point);
  return get(`/conversations/${enc(conv)}/turn` + (at === null ? '' : `?at=${enc(at)}`));
}

/** Loads and renders the diff of points a and b into el. */
export async function showDiff(el, a, b) {
  el.hidden = false;
  el.replaceChildren(h('p', { class: 'muted', role: 'status' }, `Comparing ${a} and ${b}…`));
  try {
    const [result, ta, tb] = await Promise.all([get(`/diff?a=${enc(a)}&b=${enc(b)}`), turnOf(a), turnOf(b)]);
    el.replaceChildren(...render(result, ta, tb, a, b));
    el.dataset.ready = 'true';
  } catch (e) {
    el.replaceChildren(h('p', { class: 'error', role: 'alert' }, 'Diff failed: ' + e.message));
  }
}

const opText = { moved: 'moved', changed: 'changed', added: 'added', removed: 'removed' };

/**
 * The diff of r (replay.Result) over Turns ta and tb (either may be null:
 * only the list of changes is shown), as elements; a and b name the two
 * sides. Findings (check.Finding: rule, detail, blocks by ID) are marked
 * on the blocks they name, on both sides.
 */
export function renderDiff(r, ta, tb, a, b, findings = []) {
  return render(r, ta, tb, a, b, findings);
}

function render(r, ta, tb, a, b, findings = []) {
  const marks = { A: new Map(), B: new Map() }; // index -> [{cls, label}]
  const mark = (side, i, cls, label, rule) => {
    if (i < 0) return;
    const m = marks[side];
    if (!m.has(i)) m.set(i, []);
    m.get(i).push({ cls, label, rule });
  };
  for (const f of findings) {
    for (const id of f.blocks || []) {
      for (const [side, t] of [['A', ta], ['B', tb]]) {
        const i = t ? (t.blocks || []).findIndex((x) => x.id === id) : -1;
        mark(side, i, 'finding', `finding: ${f.rule}`, f.rule);
      }
    }
  }
  const diffs = new Map(); // B index -> text diff
  for (const c of r.changes) {
    switch (c.op) {
      case 'moved':
        mark('A', c.from_index, 'op-moved', `moved to B[${c.to_index}]`);
        mark('B', c.to_index, 'op-moved', `moved from A[${c.from_index}]`);
        break;
      case 'changed':
        mark('A', c.from_index, 'op-changed', `changed (${(c.fields || []).join(', ')}) in B[${c.to_index}]`);
        mark('B', c.to_index, 'op-changed', `changed (${(c.fields || []).join(', ')}) from A[${c.from_index}]`);
        break;
      case 'added':
        mark('B', c.to_index, 'op-added', 'added');
        break;
      case 'removed':
        mark('A', c.from_index, 'op-removed', 'removed');
        break;
    }
    if (c.op === 'moved' && c.fields && c.fields.length) {
      mark('B', c.to_index, 'op-changed', `and changed (${c.fields.join(', ')})`);
    }
    if (c.text_diff) diffs.set(c.to_index, c.text_diff);
  }
  for (const d of r.duplicates) {
    for (const i of d.indexes) {
      const others = d.indexes.filter((j) => j !== i).map((j) => `${d.side}[${j}]`);
      mark(d.side, i, 'duplicate', `duplicate (same ${d.by}) of ${others.join(', ')}`);
    }
  }
  for (const v of r.violations) mark(v.side, v.index, 'violation', `${v.rule}: ${v.message}`);

  const counts = {};
  for (const c of r.changes) counts[c.op] = (counts[c.op] || 0) + 1;
  const equal = r.changes.length === 0 && !r.system_prompt && r.data.length === 0;
  const summary = equal
    ? 'The Turns are equal.'
    : Object.entries(counts)
        .map(([op, n]) => `${n} ${opText[op] || op}`)
        .join(', ') || 'The blocks are the same.';
  const out = [
    h('header', { class: 'diff-head' }, h('h2', null, 'Diff ', h('code', null, a), ' → ', h('code', null, b)), h('p', { class: 'diff-summary', dataset: { equal } }, summary)),
  ];
  if (r.matched_by_content) {
    out.push(h('p', { class: 'muted' }, `${r.matched_by_content} block(s) paired by content (their IDs differ).`));
  }
  if (r.system_prompt) {
    const sp = r.system_prompt;
    out.push(
      h(
        'div',
        { class: 'system-prompt-change', role: 'note' },
        h('strong', null, 'Active system prompt: '),
        sp.fields.join(', '),
        ` (A[${sp.from_index}] ${sp.from_id || '—'} → B[${sp.to_index}] ${sp.to_id || '—'})`,
        sp.text_diff ? textDiff(sp.text_diff) : null,
      ),
    );
  }
  if (r.changes.length) {
    out.push(
      h(
        'ol',
        { class: 'changes', 'aria-label': 'Changes' },
        r.changes.map((c) =>
          h(
            'li',
            { class: `change op-${c.op}` },
            h('span', { class: 'op' }, c.op),
            ` ${c.kind} `,
            h('code', null, c.id || '(no id)'),
            c.from_id ? [' (was ', h('code', null, c.from_id), ')'] : null,
            ` ${c.from_index >= 0 ? `A[${c.from_index}]` : '—'} → ${c.to_index >= 0 ? `B[${c.to_index}]` : '—'}`,
            c.fields && c.fields.length ? ` (${c.fields.join(', ')})` : null,
          ),
        ),
      ),
    );
  }
  if (ta && tb) {
    out.push(
      h(
        'div',
        { class: 'sides' },
        side('A', a, ta, marks.A, null),
        side('B', b, tb, marks.B, diffs),
      ),
    );
  }
  if (r.data.length) {
    out.push(
      h(
        'table',
        { class: 'kv data-changes' },
        h('caption', null, 'Data'),
        h('tbody', null, r.data.map((k) => h('tr', { class: `op-${k.op}` }, h('th', null, k.key), h('td', null, k.op), h('td', null, k.from || ''), h('td', null, k.to || '')))),
      ),
    );
  }
  return out;
}

function side(name, point, turn, marks, diffs) {
  const blocks = turn.blocks || [];
  return h(
    'section',
    { class: `side side-${name.toLowerCase()}`, 'aria-label': `Side ${name}` },
    h('h3', null, `${name}: `, h('code', null, point), h('span', { class: 'muted' }, ` ${count(blocks.length, 'block')}, ${count(turn.events, 'event')}`)),
    blocks.length === 0 ? h('p', { class: 'muted' }, 'No blocks.') : null,
    blocks.map((b, i) => {
      const ms = marks.get(i) || [];
      return h(
        'div',
        { class: ['block', `kind-${b.kind}`, ...ms.map((m) => m.cls)].join(' '), dataset: { index: i, id: b.id, rules: ms.filter((m) => m.rule).map((m) => m.rule).join(' ') } },
        h(
          'div',
          { class: 'block-head' },
          h('span', { class: 'idx' }, `${name}[${i}]`),
          h('span', { class: 'kind' }, b.kind),
          h('code', { class: 'id' }, b.id),
          b.trust ? h('span', { class: 'badge' }, b.trust) : null,
          ms.map((m) => h('span', { class: `badge ${m.cls}` }, m.label)),
        ),
        h('pre', { class: 'block-text' }, blockText(b)),
        diffs && diffs.has(i) ? textDiff(diffs.get(i)) : null,
      );
    }),
  );
}

function textDiff(d) {
  return h(
    'pre',
    { class: 'textdiff' },
    d.split('\n').map((line) => {
      const cls = line.startsWith('+') && !line.startsWith('+++') ? 'add' : line.startsWith('-') && !line.startsWith('---') ? 'del' : line.startsWith('@@') ? 'hunk' : '';
      return h('span', { class: cls }, line + '\n');
    }),
  );
}
