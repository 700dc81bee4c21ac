// The diff page: any two points, from the URL (?a=&b=) or the form.

import { showDiff } from './diffview.js';

const $ = (id) => document.getElementById(id);

export function initDiffPage() {
  const params = new URLSearchParams(location.search);
  const a = params.get('a') || '';
  const b = params.get('b') || '';
  $('diff-a').value = a;
  $('diff-b').value = b;
  $('diff-form').addEventListener('submit', (e) => {
    e.preventDefault();
    const url = new URL(location.href);
    url.searchParams.set('a', $('diff-a').value.trim());
    url.searchParams.set('b', $('diff-b').value.trim());
    history.replaceState(null, '', url);
    showDiff($('diff-view'), $('diff-a').value.trim(), $('diff-b').value.trim());
  });
  if (a && b) showDiff($('diff-view'), a, b);
}
