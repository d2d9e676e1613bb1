// One bench (/bench/{id}): how the models compare, two of them paired on the
// same tasks over the comparison matrix, task by task, with the
// attempts that failed and, for a bench run by the pool of workers, where
// each ran and how many wait in the queue; what each attempt's run changed
// in its folder; refreshed while it runs.

import { api, aborted } from '../lib/api.js';
import { add, h } from '../lib/dom.js';
import { fmtCost } from '../lib/format.js';
import { lifetime, refresher } from '../lib/lifetime.js';
import { resetText } from '../lib/limits.js';
import { live } from '../lib/live.js';
import { setTitle } from '../lib/title.js';
import { errorBox, runLink, runPath, statusEl, timeEl } from '../lib/widgets.js';
import { changesPanel } from './changes.js';
import { applyAction } from './run-head.js';
import { benchDurEl, progressTitle } from './bench-common.js';
import { MODEL_COLORS, allAttempts, failedAttempts, modelTable, stepAttempts, taskGrid, workerTable } from './bench-parts.js';
import { artifactsSection } from './bench-artifacts.js';
import { benchScatter } from './bench-scatter.js';
import { SORTS, choosePair, compareControls, pairedPanel } from './bench-compare.js';

export function viewBenchDetail(root, [id]) {
  setTitle('lane · bench');
  const life = lifetime();
  const head = h('div', { class: 'run-head' }, h('h1', null, 'Bench ', h('code', null, id)));
  const body = h('div', null, h('p', { class: 'muted' }, 'Loading…'));
  root.append(head, body);
  let last = ''; // the answer shown, as JSON: an unchanged one is not drawn again
  let shown = null; // that answer
  let side = ''; // its changes side by side, drawn once per answer
  let running = false;
  // The pair of models compared, the matrix's order and filter: kept
  // across refreshes, as the reader chose them, and in the page's address,
  // so that a link or a reload shows the same.
  const cmp = compareFromAddress();
  let shownB = ''; // the B that answer was asked against ('' for every two)
  const change = (patch) => {
    if (patch.a && patch.a === cmp.b) patch.b = cmp.a; // A and B trade places
    if (patch.b && patch.b === cmp.a) patch.a = cmp.b;
    Object.assign(cmp, patch);
    compareToAddress(cmp);
    if (!shown) return;
    if (shownB !== cmp.b) { load(); return; } // the pairs against B, A − B among them
    renderBenchBody(body, shown, cmp, change);
    if (side) body.append(side);
  };

  const again = refresher(life, load);
  let seq = 0;
  async function load() {
    const mine = ++seq;
    try {
      const path = `/api/benches/${encodeURIComponent(id)}`;
      // Every other model against B, so that A − B is the API's own.
      const asked = cmp.b;
      // what the runs changed, and what the attempts collected, are
      // extra: the bench shows without them
      const extra = (p) => api(p, { signal: life.signal }).catch((err) => { if (aborted(err)) throw err; return null; });
      const [res, ch, arts] = await Promise.all([api(asked ? `${path}?baseline=${encodeURIComponent(asked)}` : path, { signal: life.signal }),
        extra(`${path}/changes`), extra(`${path}/artifacts`)]);
      if (mine !== seq) return; // a later load answers
      res.changes = ch ? ch.runs || {} : null;
      res.artifacts = arts ? arts.attempts : null;
      running = res.bench.status === 'running';
      // A new model, or B gone: the pair chosen anew, and its pairs asked
      // for unless the every-two answer (no B asked) has it.
      if (choosePair(cmp, res.models || []) && asked && cmp.b !== asked) { load(); return; }
      const json = JSON.stringify(res);
      if (json !== last) {
        last = json;
        shown = res;
        shownB = asked;
        renderBenchHead(head, res);
        renderBenchBody(body, res, cmp, change);
        side = running ? '' : sideBySide(res, life);
        if (side) body.append(side);
      }
      if (running) again(3000);
    } catch (err) {
      if (aborted(err) || mine !== seq) return;
      if (last && err.status !== 404) { again(5000); return; } // keep what is shown
      head.replaceChildren(h('h1', null, 'Bench ', h('code', null, id)));
      body.replaceChildren(errorBox(err), h('p', null, h('a', { href: '/bench' }, 'Back to the benches')));
    }
  }

  life.defer(live.on((msg) => {
    if (msg.type === 'resync') again(0);
    // a run ended: its attempt is being checked; look again soon
    else if (running && msg.type === 'run' && msg.run.status !== 'running') again(1000);
  }));
  load();
  return life;
}

function renderBenchHead(head, res) {
  const b = res.bench;
  const attempts = res.attempts || [];
  setTitle(`lane · bench ${b.name || b.id}`);
  const p = countAttempts(attempts);
  const cost = attempts.reduce((a, x) => a + (x.cost_usd || 0), 0);
  // A pool bench's pending attempts are in the queue; each worker runs its
  // own --parallel, so the bench's is not what runs at once.
  const pool = !!b.workers;
  const kv = [
    ['ID', h('code', null, b.id)],
    ['Suite', b.suite_path ? h('code', null, b.suite_path) : '–'],
    ['Models', (b.models || []).join(', ') || '–'],
    ['Attempts per task', pool ? `${b.repeat || 0} per model` : `${b.repeat || 0} per model, ${b.parallel || 0} at a time`],
    ['Attempts', h('span', { title: progressTitle(p) }, `${p.passed} passed of ${p.total}`,
      p.failed ? `, ${p.failed} failed` : '', p.running ? `, ${p.running} running` : '',
      p.pending && !pool ? `, ${p.pending} pending` : '', p.skipped ? `, ${p.skipped} skipped` : '',
      p.errored ? `, ${p.errored} errors of the task` : '')],
    pool ? ['Runs on', [h('a', { href: '/workers' }, 'the pool of workers'), ': ',
      h('span', { class: `queue-count${p.pending ? ' has-queued' : ''}` },
        p.pending ? `${p.pending} attempt${p.pending === 1 ? '' : 's'} waiting in the queue` : 'none waiting in the queue')]] : null,
    b.status === 'running' && b.waiting
      ? ['Waiting', h('a', { class: 'bench-waiting', href: '/limits' }, `for ${b.waiting} until ${resetText(b.waiting_until)}: a usage limit refuses the account`)]
      : null,
    ['Cost', [fmtCost(cost), b.max_cost_usd ? h('span', { class: 'muted' }, ` of a ${fmtCost(b.max_cost_usd)} budget`) : null]],
    ['Started', timeEl(b.started_at)],
    ['Duration', benchDurEl(b)],
  ];
  head.replaceChildren(
    h('h1', null, statusEl(b.status), h('span', { class: 'title' }, b.name || 'Bench'),
      h('a', { href: '/bench', class: 'button small' }, 'All benches')),
    h('dl', { class: 'kv' }, kv.filter(Boolean).map(([k, v]) => [h('dt', null, k), h('dd', null, v)])));
}

function renderBenchBody(body, res, cmp, change) {
  const attempts = res.attempts || [];
  const models = res.models || [];
  // the <details> a person opened stay open across refreshes
  const open = new Set([...body.querySelectorAll('details[open][data-key]')].map((d) => d.dataset.key));
  const color = new Map(models.map((m, i) => [m.model, `m${i % MODEL_COLORS}`]));
  const workers = workerTable(attempts);
  body.replaceChildren();
  add(body, [
    h('h2', null, 'Models'),
    modelTable(models, color),
    h('h2', null, 'Cost vs pass rate'),
    benchScatter(models, color),
    h('h2', null, 'Tasks'),
    cmp.a && cmp.b ? [compareControls(models, cmp, change), pairedPanel(res, cmp)]
      : h('p', { class: 'muted' }, 'Fewer than two models to compare, the oracle aside.'),
    taskGrid(res.tasks || [], models, attempts, !!res.bench.workers, res.changes, { cmp, open }),
    workers ? [h('h2', null, 'Where the attempts ran'), workers] : null,
    stepAttempts(attempts),
    artifactsSection(res.bench.id, res.artifacts),
    failedAttempts(attempts, open, res.changes),
    allAttempts(attempts, open, res.changes)]);
}

// sideBySide is a finished comparison (one task, several models: lane run
// --models) as columns, each attempt's diff under its model, with an Apply
// button where the run worked in a copy of a folder.
function sideBySide(res, life) {
  const tasks = new Set((res.attempts || []).map((a) => a.task_id));
  const runs = (res.attempts || []).filter((a) => a.run_id);
  if (tasks.size !== 1 || runs.length < 2) return '';
  const cols = runs.map((a) => {
    const actions = h('div', { class: 'actions' });
    const head = h('div', { class: 'cmp-head' }, h('strong', null, a.model), ' ', statusEl(a.status), ' ', runLink(a.run_id), actions);
    const panel = changesPanel(a.run_id, life, (seq) => { location.assign(`${runPath(a.run_id)}#event-${seq}`); });
    panel.load();
    api(`/api/runs/${encodeURIComponent(a.run_id)}/changes`, { signal: life.signal }).then((ch) => {
      const run = { id: a.run_id, origin: ch.origin, changes: ch.changes };
      if (run.origin && run.changes?.files > 0) actions.append(...applyAction(run, actions));
    }).catch(() => {});
    return h('div', { class: 'cmp-col', dataset: { model: a.model } }, head, panel.el);
  });
  return h('section', { class: 'side-by-side' }, h('h2', null, 'Changes side by side'), h('div', { class: 'cmp-cols' }, cols));
}

function countAttempts(attempts) {
  const p = { total: 0, passed: 0, failed: 0, running: 0, pending: 0, skipped: 0, errored: 0 };
  for (const a of attempts) {
    p.total++;
    if (a.status in p) p[a.status]++;
    else p.pending++;
  }
  return p;
}

// compareFromAddress is the comparison the page's address asks for
// (?a=&b=&sort=&differ=1); what it leaves out is the default.
function compareFromAddress() {
  const q = new URLSearchParams(location.search);
  const sort = q.get('sort');
  return { a: q.get('a') || '', b: q.get('b') || '', sort: SORTS.includes(sort) ? sort : 'suite', differ: q.get('differ') === '1' };
}

// compareToAddress puts the reader's comparison in the page's address, in
// place (a choice is no page of the history of its own).
function compareToAddress(cmp) {
  const q = new URLSearchParams(location.search);
  const set = { a: cmp.a, b: cmp.b, sort: cmp.sort === 'suite' ? '' : cmp.sort, differ: cmp.differ ? '1' : '' };
  for (const [k, v] of Object.entries(set)) {
    if (v) q.set(k, v);
    else q.delete(k);
  }
  const query = q.toString();
  history.replaceState(history.state, '', location.pathname + (query ? `?${query}` : '') + location.hash);
}
