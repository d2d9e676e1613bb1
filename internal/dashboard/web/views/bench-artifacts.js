// The artifacts a bench's container tasks collected (API.md, Benches:
// artifacts): for each attempt, each set (the attempt's own, then each
// step's), its files as download links and what could not be collected.

import { h } from '../lib/dom.js';
import { fmtBytes } from '../lib/format.js';

// artifactsSection lists the attempts of bench id that collected
// anything; null when none did.
export function artifactsSection(id, list) {
  const attempts = (list || []).filter((a) => a.sets?.some((s) => s.files?.length || s.artifacts?.some((e) => e.status !== 'ok')));
  if (!attempts.length) return null;
  return [h('h2', null, `Artifacts of the attempts (${attempts.length})`),
    h('div', { class: 'table-wrap' }, h('table', { class: 'bench-artifacts' },
      h('thead', null, h('tr', null, ['Task', 'Model', '#', 'Step', 'Files'].map((c) => h('th', null, c)))),
      h('tbody', null, attempts.flatMap((a) => a.sets.map((set) => h('tr', { dataset: { task: a.task, model: a.model, n: String(a.n), step: set.step || '' } },
        h('td', null, h('code', null, a.task)),
        h('td', { class: 'nowrap' }, a.model),
        h('td', { class: 'num' }, String(a.n)),
        h('td', null, set.step ? h('code', null, set.step) : h('span', { class: 'muted' }, 'the attempt')),
        h('td', null, setFiles(id, a, set))))))))];
}

// setFiles are a set's files, each a link that downloads it, then the
// declared artifacts that were not collected, with why.
function setFiles(id, a, set) {
  const files = (set.files || []).map((f) => {
    const q = new URLSearchParams({ task: a.task, model: a.model, n: String(a.n), step: set.step || '', path: f.path });
    return h('li', null, h('a', { class: 'artifact-file', href: `/api/benches/${encodeURIComponent(id)}/artifacts/file?${q}`, download: '' }, f.path),
      h('span', { class: 'muted' }, ` ${fmtBytes(f.size)}`));
  });
  const missed = (set.artifacts || []).filter((e) => e.status !== 'ok').map((e) =>
    h('li', { class: 'artifact-missed muted' }, `${e.source}${e.service && e.service !== 'main' ? ` (${e.service})` : ''}: ${e.status}${e.error ? ` (${e.error})` : ''}`));
  return h('ul', { class: 'artifact-files' }, files, missed);
}
