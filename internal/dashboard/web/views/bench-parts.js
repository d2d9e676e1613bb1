// The tables of a bench's page: the models compared, the comparison matrix, where
// the attempts ran, the failed attempts, every attempt with what its run
// changed. changes, where given, maps a run id to its Changes summary
// (GET /api/benches/{id}/changes); null means they could not be read.

import { h, s } from '../lib/dom.js';
import { lazyDetails } from '../lib/collapse.js';
import { fmtCost, fmtDur, fmtPct, oneLine } from '../lib/format.js';
import { changesPath, filesChanged, filesChangedLink } from '../lib/changes.js';
import { runLink, runPath, tokensText, tokensTitle } from '../lib/widgets.js';
import { orderTasks, signed } from './bench-compare.js';

export const MODEL_COLORS = 8; // classes m0…m7 in style.css

const MODEL_COLUMNS = [['Model'], ['Pass rate'], ['95% interval', 'num'], ['Passed', 'num'], ['Cost', 'num'],
  ['Cost / pass', 'num'], ['Median duration', 'num'], ['Tokens in/out/cache', 'num']];

// modelTable compares the models; color maps a model to its class. A bench
// of Harbor tasks adds the verifiers' mean reward; one of several tries
// (the polyglot benchmark's) the pass rate after each try, as Aider
// publishes it.
export function modelTable(models, color) {
  if (!models.length) return h('p', { class: 'muted' }, 'No models.');
  const rewards = models.some((m) => m.mean_reward != null);
  const tries = Math.max(0, ...models.map((m) => m.pass_rate_by_try?.length ?? 0));
  const extra = [...(rewards ? [['Mean reward', 'num reward']] : []),
    ...Array.from({ length: tries }, (_, k) => [`After try ${k + 1}`, 'num try'])];
  const columns = [...MODEL_COLUMNS.slice(0, 4), ...extra, ...MODEL_COLUMNS.slice(4)];
  return h('div', { class: 'table-wrap' }, h('table', { class: 'bench-models' },
    h('thead', null, h('tr', null, columns.map(([c, cls]) => h('th', { class: cls }, c)))),
    h('tbody', null, models.map((m) => modelRow(m, color.get(m.model), rewards, tries)))));
}

// fmtReward is a reward as the verifier wrote it, to three digits at most.
const fmtReward = (v) => String(Number(v.toFixed(3)));

// rewardKeys is "reward 1, style 0.5": each key of a reward.json (or each
// key's mean), in name order; '' when there is no key but "reward".
function rewardKeys(keys) {
  const names = Object.keys(keys ?? {}).sort();
  if (!names.some((k) => k !== 'reward')) return '';
  return names.map((k) => `${k} ${fmtReward(keys[k])}`).join(', ');
}

function modelRow(m, cls, rewards, tries) {
  const extra = [m.unfinished ? `${m.unfinished} to go` : '', m.skipped ? `${m.skipped} skipped` : '',
    m.errored ? `${m.errored} errors of the task` : ''].filter(Boolean);
  const byTry = Array.from({ length: tries }, (_, k) => m.pass_rate_by_try?.[k]);
  return h('tr', { dataset: { model: m.model } },
    h('td', { class: 'nowrap' }, modelKey(cls), ' ', m.model),
    h('td', { class: 'rate nowrap' }, rateBar(m, cls), ' ', h('span', { class: 'pct' }, fmtPct(m.pass_rate))),
    h('td', { class: 'num' }, m.pass_rate == null ? '–' : `${fmtPct(m.wilson_low, 1)}–${fmtPct(m.wilson_high, 1)}`),
    h('td', { class: 'num', title: `${m.passed} passed, ${m.failed} failed${extra.length ? ', ' + extra.join(', ') : ''}` },
      `${m.passed} / ${m.attempts}`, extra.length ? h('span', { class: 'muted' }, ` (${extra.join(', ')})`) : null),
    rewards ? h('td', { class: 'num reward', title: 'the mean of the verifiers\' rewards' },
      m.mean_reward == null ? '–' : fmtReward(m.mean_reward),
      rewardKeys(m.mean_rewards) ? h('span', { class: 'muted reward-keys' }, ` (${rewardKeys(m.mean_rewards)})`) : null) : null,
    byTry.map((v, k) => h('td', { class: 'num try', title: `passed on one of the first ${k + 1} tries` },
      v == null ? '–' : fmtPct(v))),
    h('td', { class: 'num' }, fmtCost(m.cost_usd)),
    h('td', { class: 'num' }, m.cost_per_pass == null ? '–' : fmtCost(m.cost_per_pass)),
    h('td', { class: 'num' }, m.median_duration_ms == null ? '–' : fmtDur(m.median_duration_ms)),
    h('td', { class: 'num nowrap', title: tokensTitle(m.usage) }, tokensText(m.usage)));
}

function modelKey(cls) {
  return s('svg', { width: 10, height: 10, class: 'chart-key', 'aria-hidden': 'true' }, s('circle', { cx: 5, cy: 5, r: 5, class: `dotm ${cls}` }));
}

// rateBar draws a pass rate on a 0–100% scale with its interval as error
// whiskers.
function rateBar(m, cls) {
  const W = 160, H = 18, y = H / 2;
  const svg = s('svg', { viewBox: `0 0 ${W} ${H}`, width: W, height: H, class: 'ratebar', role: 'img' },
    s('title', null, m.pass_rate == null ? 'no finished attempt'
      : `${fmtPct(m.pass_rate)} passed (${m.passed} of ${m.attempts}); 95% interval ${fmtPct(m.wilson_low, 1)}–${fmtPct(m.wilson_high, 1)}`),
    s('rect', { x: 0, y: 2, width: W, height: H - 4, rx: 3, class: 'track' }));
  if (m.pass_rate == null) return svg;
  const x = (v) => Math.max(0, Math.min(W, v * W));
  svg.append(s('rect', { x: 0, y: 3, width: Math.max(1, x(m.pass_rate)), height: H - 6, rx: 2, class: `bar ${cls}` }));
  const lo = x(m.wilson_low), hi = x(m.wilson_high);
  svg.append(s('g', { class: 'whisker' },
    s('line', { x1: lo, x2: hi, y1: y, y2: y }),
    s('line', { x1: lo, x2: lo, y1: y - 5, y2: y + 5 }),
    s('line', { x1: hi, x2: hi, y1: y - 5, y2: y + 5 })));
  return svg;
}

const ATTEMPT_LABEL = { passed: 'passed', failed: 'failed', running: 'running', pending: 'pending', skipped: 'skipped',
  errored: 'an error of the task or its environment' };

// queued tells an attempt of a pool bench (lane bench --workers) that waits
// in the queue for a worker: pending there means enqueued, not yet taken.
const queued = (a, pool) => pool && a.status === 'pending';

function attemptTitle(a, pool, changes) {
  const parts = [`#${a.n} ${queued(a, pool) ? 'queued, waiting for a worker' : ATTEMPT_LABEL[a.status] ?? a.status}`];
  if (a.worker && !queued(a, pool)) parts.push(`on ${a.worker}`);
  if (a.failure_kind) parts.push(a.failure_kind + (a.failure_kind.startsWith('check') ? ` (exit ${a.check_exit_code})` : ''));
  if (a.reward != null) parts.push(`reward ${fmtReward(a.reward)}`);
  if (rewardKeys(a.rewards)) parts.push(rewardKeys(a.rewards));
  if (a.tries > 1) parts.push(`${a.tries} tries`);
  if (a.steps?.length) parts.push(`steps ${a.steps.map((st) => `${st.name} ${st.failure_kind || st.status}`).join(' → ')}`);
  if (a.cost_usd) parts.push(fmtCost(a.cost_usd));
  if (a.duration_ms) parts.push(fmtDur(a.duration_ms));
  if (a.run_id && changes && a.run_id in changes) parts.push(`files changed ${filesChanged(changes[a.run_id]).text}`);
  return parts.join(' · ');
}

const attemptClass = (a, pool) => `pill a-${String(a.status).replace(/[^a-z]/g, '')}${queued(a, pool) ? ' a-queued' : ''}`;

// taskGrid is the comparison matrix: one row per task, one cell per model
// with its score coloured, its cost and median time, a link to each
// attempt's run and, opened, each attempt's run and diff. pool marks a
// bench run by the pool, whose pending attempts are queued; view.cmp is
// the chosen pair, order and filter (bench-compare.js), view.open the keys
// of the cells a reader opened.
export function taskGrid(tasks, models, attempts, pool, changes, view) {
  if (!tasks.length) return h('p', { class: 'muted' }, 'No attempts yet.');
  const cmp = view.cmp;
  const byRun = new Map();
  const byCell = new Map(); // task\0model → attempts, by number
  for (const a of attempts) {
    if (a.run_id) byRun.set(a.run_id, a);
    const k = `${a.task_id}\0${a.model}`;
    if (!byCell.has(k)) byCell.set(k, []);
    byCell.get(k).push(a);
  }
  const rows = orderTasks(tasks, cmp);
  const pair = cmp.a && cmp.b;
  const reward = models.some((m) => m.mean_reward != null);
  return h('div', { class: 'table-wrap' }, h('table', { class: 'bench-grid' },
    h('thead', null, h('tr', null, h('th', null, 'Task'), models.map((m) => h('th', { class: 'cell' }, m.model)),
      pair ? h('th', { class: 'num diff', title: 'the task\u2019s score for A minus B\u2019s, each averaged over its finished attempts' },
        `${cmp.a} \u2212 ${cmp.b}`) : null,
      h('th', { class: 'num' }, 'All models'))),
    h('tbody', null, rows.length ? rows.map(({ t, d }) => h('tr', { dataset: { task: t.task_id } },
      h('th', { scope: 'row', class: 'task' }, h('code', null, t.task_id)),
      (t.models || []).map((c) => gridCell(t.task_id, c, byRun, byCell.get(`${t.task_id}\0${c.model}`) || [], pool, changes, view.open)),
      pair ? h('td', { class: 'num diff' }, d == null ? '\u2013' : signed(d, reward, reward ? 2 : 0)) : null,
      h('td', { class: 'num' }, `${t.passed}/${t.attempts}`)))
      : h('tr', { class: 'none' }, h('td', { colspan: models.length + 3, class: 'muted' }, `No task where ${cmp.a} and ${cmp.b} differ.`)))));
}

// scoreClass colours a cell by its score (the mean of its finished
// attempts' scores): all passed, more than half, half, less, none.
function scoreClass(c) {
  if (c.score == null) return c.errored ? 'c-error' : 'c-none';
  if (c.score >= 1) return 'c-good';
  if (c.score <= 0) return 'c-bad';
  return c.score > 0.5 ? 'c-high' : c.score < 0.5 ? 'c-low' : 'c-mixed';
}

// cellScore is what a cell scored: passes/finished, or the mean reward
// when the verifiers gave one; "error" when every attempt ended in an
// error of the task or its environment.
function cellScore(c) {
  if (!c.attempts && c.errored) return { text: 'error', title: `${c.errored} errors of the task or its environment` };
  if (c.mean_reward != null) return { text: fmtReward(c.mean_reward), title: `mean reward of ${c.attempts} finished attempts, ${c.passed} passed` };
  return { text: `${c.passed}/${c.attempts}`, title: `${c.passed} of ${c.attempts} finished attempts passed` };
}

// gridCell is one task × model: its score, cost and median time, then its
// attempts, a link to the run of each that has one, how many wait in the
// queue, and the attempts opened with each run's trace and diff.
function gridCell(task, c, byRun, all, pool, changes, open) {
  const withRun = (c.run_ids || []).map((rid) => byRun.get(rid) || { n: '?', status: '', run_id: rid });
  const runless = all.filter((a) => !a.run_id);
  const waiting = [...withRun, ...runless].filter((a) => queued(a, pool)).length;
  const pill = (tag, a, props) => h(tag, { ...props, class: attemptClass(a, pool) + (props.class || ''), dataset: a.worker ? { worker: a.worker } : null }, String(a.n));
  const score = cellScore(c);
  const key = `cell\0${task}\0${c.model}`;
  let more = null;
  if (all.length) {
    more = lazyDetails('cell-attempts', 'attempts', () => cellAttempts(all, pool, changes), open.has(key));
    more.dataset.key = key;
  }
  return h('td', { class: `cell ${scoreClass(c)}`, dataset: { model: c.model, score: c.score == null ? '' : String(c.score) } },
    h('span', { class: 'score', title: score.title }, score.text),
    c.attempts || c.errored ? h('span', { class: 'cell-meta', title: 'the attempts\u2019 cost \u00b7 the median time of their agent runs' },
      `${fmtCost(c.cost_usd)} \u00b7 ${c.median_duration_ms == null ? '\u2013' : fmtDur(c.median_duration_ms)}`) : null,
    h('span', { class: 'att' },
      withRun.map((a) => pill('a', a, {
        href: runPath(a.run_id), title: `${attemptTitle(a, pool, changes)} · run ${a.run_id}`,
        class: a.failure_kind === 'cancelled' ? ' a-cancelled' : '',
      })),
      runless.map((a) => pill('span', a, { title: attemptTitle(a, pool) }))),
    waiting ? h('span', { class: 'queued', title: 'attempts waiting in the queue for a worker' }, `${waiting} queued`) : null,
    more);
}

// cellAttempts lists a cell's attempts: how each ended, what it cost and
// took, its run's trace and what the run changed (its diff).
function cellAttempts(attempts, pool, changes) {
  return h('ul', { class: 'cell-attempts-list' }, [...attempts].sort((x, y) => x.n - y.n).map((a) =>
    h('li', { dataset: { n: String(a.n) } },
      h('span', { class: attemptClass(a, pool), title: attemptTitle(a, pool, changes) }, `#${a.n}`), ' ',
      a.failure_kind || (queued(a, pool) ? 'queued' : ATTEMPT_LABEL[a.status] ?? a.status),
      a.cost_usd ? ` \u00b7 ${fmtCost(a.cost_usd)}` : '', a.duration_ms ? ` \u00b7 ${fmtDur(a.duration_ms)}` : '',
      a.run_id ? [' \u00b7 ', h('a', { class: 'trace', href: runPath(a.run_id), title: `run ${a.run_id}` }, 'trace'),
        ' \u00b7 diff ', changes ? filesChangedLink(a.run_id, changes[a.run_id] ?? null)
          : h('a', { class: 'files-changed muted', href: changesPath(a.run_id), title: 'could not be read' }, '?')]
        : h('span', { class: 'muted' }, ' \u00b7 no run'))));
}

const WORKER_COLUMNS = [['Worker'], ['Passed', 'num'], ['Failed', 'num'], ['Running', 'num'], ['Cost', 'num'], ['Tokens in/out/cache', 'num']];

// workerTable is where the attempts ran: one row per worker that took one
// (lane bench --workers), null when none did.
export function workerTable(attempts) {
  const by = new Map();
  for (const a of attempts) {
    if (!a.worker || a.status === 'pending') continue; // a pending one's worker, if any, lost it
    if (!by.has(a.worker)) by.set(a.worker, { passed: 0, failed: 0, running: 0, cost: 0, usage: {} });
    const w = by.get(a.worker);
    if (a.status in w) w[a.status]++;
    w.cost += a.cost_usd || 0;
    for (const [k, v] of Object.entries(a.usage || {})) w.usage[k] = (w.usage[k] || 0) + (v || 0);
  }
  if (!by.size) return null;
  return h('div', { class: 'table-wrap' }, h('table', { class: 'bench-workers' },
    h('thead', null, h('tr', null, WORKER_COLUMNS.map(([c, cls]) => h('th', { class: cls }, c)))),
    h('tbody', null, [...by.keys()].sort().map((name) => {
      const w = by.get(name);
      return h('tr', { dataset: { worker: name } },
        h('td', { class: 'nowrap' }, h('a', { href: '/workers', title: 'the pool of workers' }, name)),
        h('td', { class: 'num' }, String(w.passed)),
        h('td', { class: 'num' }, String(w.failed)),
        h('td', { class: 'num' }, String(w.running)),
        h('td', { class: 'num' }, fmtCost(w.cost)),
        h('td', { class: 'num nowrap', title: tokensTitle(w.usage) }, tokensText(w.usage)));
    }))));
}

const FAILURE_COLUMNS = ['Task', 'Model', '#', 'Failure', 'Exit', 'Check output', 'Run'];

// failedAttempts lists the failed attempts with their check's verdict, and
// the worker of each when the pool ran any; open holds the keys of the
// check outputs the reader had open.
export function failedAttempts(attempts, open, changes) {
  const failed = attempts.filter((a) => a.status === 'failed');
  if (!failed.length) return null;
  const workers = failed.some((a) => a.worker);
  const columns = [...FAILURE_COLUMNS.slice(0, -1), ...(workers ? ['Worker'] : []), 'Files changed', 'Run'];
  return [h('h2', null, `Failed attempts (${failed.length})`),
    h('div', { class: 'table-wrap' }, h('table', { class: 'bench-failures' },
      h('thead', null, h('tr', null, columns.map((c) => h('th', null, c)))),
      h('tbody', null, failed.map((a) => failureRow(a, open, workers, changes)))))];
}

function failureRow(a, open, workers, changes) {
  const key = `${a.task_id}\0${a.model}\0${a.n}`;
  const out = String(a.check_output || '');
  let outEl = h('span', { class: 'muted' }, '–');
  if (out) {
    outEl = lazyDetails('check-out', h('span', { class: 'preview' }, oneLine(out, 90)), () => h('pre', { class: 'out' }, out), open.has(key));
    outEl.dataset.key = key;
  }
  const checked = a.failure_kind && a.failure_kind.startsWith('check');
  return h('tr', null,
    h('td', null, h('code', null, a.task_id)),
    h('td', { class: 'nowrap' }, a.model),
    h('td', { class: 'num' }, String(a.n)),
    h('td', { class: 'nowrap' }, a.failure_kind || 'failed'),
    h('td', { class: 'num' }, checked ? String(a.check_exit_code) : '–'),
    h('td', { class: 'check' }, outEl),
    workers ? h('td', { class: 'nowrap worker' }, a.worker || '–') : null,
    h('td', { class: 'num' }, changesCell(a, changes)),
    h('td', { class: 'nowrap' }, a.run_id ? runLink(a.run_id) : '–'));
}

// changesCell is what an attempt's run changed, a link to its Changes view.
function changesCell(a, changes) {
  if (!a.run_id) return '–';
  if (!changes) return h('span', { class: 'muted', title: 'could not be read' }, '?');
  return filesChangedLink(a.run_id, changes[a.run_id] ?? null);
}

const ATTEMPT_COLUMNS = [['Task'], ['Model'], ['#', 'num'], ['Status'], ['Files changed', 'num'], ['Run']];

// allAttempts lists every attempt with what its run changed in its folder,
// collapsed (open keeps it open across refreshes).
export function allAttempts(attempts, open, changes) {
  if (!attempts.length) return null;
  const key = 'all-attempts';
  const d = lazyDetails('all-attempts', h('h2', { class: 'inline' }, `All attempts (${attempts.length})`), () =>
    h('div', { class: 'table-wrap' }, h('table', { class: 'bench-attempts' },
      h('thead', null, h('tr', null, ATTEMPT_COLUMNS.map(([c, cls]) => h('th', { class: cls }, c)))),
      h('tbody', null, attempts.map((a) => h('tr', { dataset: { run: a.run_id || '' } },
        h('td', null, h('code', null, a.task_id)),
        h('td', { class: 'nowrap' }, a.model),
        h('td', { class: 'num' }, String(a.n)),
        h('td', { class: 'nowrap' }, h('span', { class: attemptClass(a, false) }, ATTEMPT_LABEL[a.status] ?? a.status)),
        h('td', { class: 'num' }, changesCell(a, changes)),
        h('td', { class: 'nowrap' }, a.run_id ? runLink(a.run_id) : '–')))))), open.has(key));
  d.dataset.key = key;
  return d;
}

// stepTitle tells one step of a multi-step attempt: how it ended, why, its
// rewards and what its agent's run cost.
function stepTitle(st) {
  const parts = [`step ${st.name}: ${ATTEMPT_LABEL[st.status] ?? st.status}`];
  if (st.failure_kind) parts.push(st.failure_kind);
  if (rewardKeys(st.rewards)) parts.push(rewardKeys(st.rewards));
  if (st.cost_usd) parts.push(fmtCost(st.cost_usd));
  if (st.duration_ms) parts.push(fmtDur(st.duration_ms));
  if (st.error) parts.push(oneLine(st.error, 200));
  return parts.join(' · ');
}

// stepPill is one step: its name and reward, a link to its agent's run
// when it has one (the oracle's steps and a step stopped before its agent
// have none).
function stepPill(st) {
  const label = st.reward != null ? `${st.name} ${fmtReward(st.reward)}` : st.name;
  const props = { class: `pill step a-${String(st.status).replace(/[^a-z]/g, '')}`, title: stepTitle(st), dataset: { step: st.name } };
  return st.run_id ? h('a', { ...props, href: runPath(st.run_id) }, label) : h('span', props, label);
}

// stepAttempts lists the attempts of multi-step tasks (Harbor's [[steps]])
// with their steps in order: each step's status, reward and run; null when
// the bench has none.
export function stepAttempts(attempts) {
  const multi = attempts.filter((a) => a.steps?.length);
  if (!multi.length) return null;
  return [h('h2', null, `Steps of multi-step attempts (${multi.length})`),
    h('div', { class: 'table-wrap' }, h('table', { class: 'bench-steps' },
      h('thead', null, h('tr', null, ['Task', 'Model', '#', 'Status', 'Reward', 'Steps'].map((c) => h('th', null, c)))),
      h('tbody', null, multi.map((a) => h('tr', { dataset: { task: a.task_id, model: a.model, n: String(a.n) } },
        h('td', null, h('code', null, a.task_id)),
        h('td', { class: 'nowrap' }, a.model),
        h('td', { class: 'num' }, String(a.n)),
        h('td', { class: 'nowrap' }, h('span', { class: attemptClass(a, false) }, a.failure_kind || (ATTEMPT_LABEL[a.status] ?? a.status))),
        h('td', { class: 'num' }, a.reward != null ? fmtReward(a.reward) : '–'),
        h('td', { class: 'steps' }, a.steps.map((st, i) => [i ? h('span', { class: 'muted' }, ' → ') : null, stepPill(st)])))))))];
}
