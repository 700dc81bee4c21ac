// Pretty-prints a provider request (JSON) as elements, for people: keys,
// strings and numbers told apart, and what a person cannot read and must
// not edit (reasoning content, encrypted reasoning, signatures) shown as
// opaque: its size, not its bytes. The exact bytes are shown apart.

import { h } from './dom.js';

// Keys whose values are opaque wherever they are.
const opaqueKeys = new Set(['signature', 'encrypted_content', 'reasoning_content', 'redacted_content']);
// Items that are the model's reasoning (Responses "reasoning", Anthropic
// "thinking" and "redacted_thinking", the scripted engine's blocks of kind
// "reasoning"): every member but these is opaque.
const reasoningTypes = new Set(['reasoning', 'thinking', 'redacted_thinking']);
const plainKeys = new Set(['type', 'kind', 'id', 'status']);

/**
 * A <pre> with value pretty-printed, two spaces an indent. marks maps a
 * string to what to mark it with ({rules, blocks}): the texts of the blocks
 * a finding names, highlighted wherever the request carries them.
 */
export function jsonView(value, marks = new Map()) {
  return h('pre', { class: 'json' }, node(value, 0, marks));
}

function node(v, depth, marks) {
  const pad = '  '.repeat(depth);
  if (Array.isArray(v)) {
    if (v.length === 0) return '[]';
    return ['[\n', v.map((x, i) => [pad, '  ', node(x, depth + 1, marks), i < v.length - 1 ? ',' : '', '\n']), pad, ']'];
  }
  if (v !== null && typeof v === 'object') {
    const keys = Object.keys(v);
    if (keys.length === 0) return '{}';
    const reasoning = reasoningTypes.has(v.type) || v.kind === 'reasoning';
    return [
      '{\n',
      keys.map((k, i) => [
        pad,
        '  ',
        h('span', { class: 'key' }, JSON.stringify(k)),
        ': ',
        opaqueKeys.has(k) || (reasoning && !plainKeys.has(k)) ? opaque(k, v[k]) : node(v[k], depth + 1, marks),
        i < keys.length - 1 ? ',' : '',
        '\n',
      ]),
      pad,
      '}',
    ];
  }
  if (typeof v === 'string') {
    const m = marks.get(v);
    if (m) {
      return h(
        'mark',
        { class: 'str finding', dataset: { rules: m.rules.join(' '), blocks: m.blocks.join(' ') }, title: `finding: ${m.rules.join(', ')} (block ${m.blocks.join(', ')})` },
        JSON.stringify(v),
      );
    }
    return h('span', { class: 'str' }, JSON.stringify(v));
  }
  if (typeof v === 'number') return h('span', { class: 'num' }, String(v));
  return h('span', { class: 'lit' }, String(v));
}

function opaque(key, v) {
  const text = typeof v === 'string' ? v : JSON.stringify(v);
  return h(
    'span',
    { class: 'opaque', dataset: { key }, title: 'Reasoning content or a signature: sent back to the provider exactly as it came, not for reading' },
    `‹opaque ${key}, ${text.length} characters›`,
  );
}
