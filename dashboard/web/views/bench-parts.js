// The tables of a bench's page: the models compared, the task grid, the
// failed attempts.

import { h, s } from '../lib/dom.js';
import { lazyDetails } from '../lib/collapse.js';
import { fmtCost, fmtDur, fmtPct, oneLine } from '../lib/format.js';
import { runLink, runPath, tokensText, tokensTitle } from '../lib/widgets.js';

export const MODEL_COLORS = 8; // classes m0…m7 in style.css

const MODEL_COLUMNS = [['Model'], ['Pass rate'], ['95% interval', 'num'], ['Passed', 'num'], ['Cost', 'num'],
  ['Cost / pass', 'num'], ['Median duration', 'num'], ['Tokens in/out/cache', 'num']];

// modelTable compares the models; color maps a model to its class.
export function modelTable(models, color) {
  if (!models.length) return h('p', { class: 'muted' }, 'No models.');
  return h('div', { class: 'table-wrap' }, h('table', { class: 'bench-models' },
    h('thead', null, h('tr', null, MODEL_COLUMNS.map(([c, cls]) => h('th', { class: cls }, c)))),
    h('tbody', null, models.map((m) => modelRow(m, color.get(m.model))))));
}

function modelRow(m, cls) {
  const extra = [m.unfinished ? `${m.unfinished} to go` : '', m.skipped ? `${m.skipped} skipped` : ''].filter(Boolean);
  return h('tr', { dataset: { model: m.model } },
    h('td', { class: 'nowrap' }, modelKey(cls), ' ', m.model),
    h('td', { class: 'rate nowrap' }, rateBar(m, cls), ' ', h('span', { class: 'pct' }, fmtPct(m.pass_rate))),
    h('td', { class: 'num' }, m.pass_rate == null ? '–' : `${fmtPct(m.wilson_low, 1)}–${fmtPct(m.wilson_high, 1)}`),
    h('td', { class: 'num', title: `${m.passed} passed, ${m.failed} failed${extra.length ? ', ' + extra.join(', ') : ''}` },
      `${m.passed} / ${m.attempts}`, extra.length ? h('span', { class: 'muted' }, ` (${extra.join(', ')})`) : null),
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

const ATTEMPT_LABEL = { passed: 'passed', failed: 'failed', running: 'running', pending: 'pending', skipped: 'skipped' };

function attemptTitle(a) {
  const parts = [`#${a.n} ${ATTEMPT_LABEL[a.status] ?? a.status}`];
  if (a.failure_kind) parts.push(a.failure_kind + (a.failure_kind.startsWith('check') ? ` (exit ${a.check_exit_code})` : ''));
  if (a.cost_usd) parts.push(fmtCost(a.cost_usd));
  if (a.duration_ms) parts.push(fmtDur(a.duration_ms));
  return parts.join(' · ');
}

const attemptClass = (a) => `pill a-${String(a.status).replace(/[^a-z]/g, '')}`;

// taskGrid is one row per task, one cell per model: passed/attempts and a
// link to each attempt's run.
export function taskGrid(tasks, models, attempts) {
  if (!tasks.length) return h('p', { class: 'muted' }, 'No attempts yet.');
  const byRun = new Map();
  const noRun = new Map(); // task\0model → attempts without a run
  for (const a of attempts) {
    if (a.run_id) byRun.set(a.run_id, a);
    else {
      const k = `${a.task_id}\0${a.model}`;
      if (!noRun.has(k)) noRun.set(k, []);
      noRun.get(k).push(a);
    }
  }
  return h('div', { class: 'table-wrap' }, h('table', { class: 'bench-grid' },
    h('thead', null, h('tr', null, h('th', null, 'Task'), models.map((m) => h('th', { class: 'cell' }, m.model)), h('th', { class: 'num' }, 'All models'))),
    h('tbody', null, tasks.map((t) => h('tr', { dataset: { task: t.task_id } },
      h('th', { scope: 'row', class: 'task' }, h('code', null, t.task_id)),
      (t.models || []).map((c) => gridCell(c, byRun, noRun.get(`${t.task_id}\0${c.model}`) || [])),
      h('td', { class: 'num' }, `${t.passed}/${t.attempts}`))))));
}

// gridCell is one task × model: its score, then its attempts, a link to
// the run of each that has one.
function gridCell(c, byRun, runless) {
  const kind = c.attempts === 0 ? 'none' : c.passed === c.attempts ? 'good' : c.passed === 0 ? 'bad' : 'mixed';
  return h('td', { class: `cell c-${kind}`, dataset: { model: c.model } },
    h('span', { class: 'score', title: `${c.passed} of ${c.attempts} finished attempts passed` }, `${c.passed}/${c.attempts}`),
    h('span', { class: 'att' }, (c.run_ids || []).map((rid) => {
      const a = byRun.get(rid) || { n: '?', status: '' };
      return h('a', {
        href: runPath(rid), title: `${attemptTitle(a)} · run ${rid}`,
        class: `${attemptClass(a)}${a.failure_kind === 'cancelled' ? ' a-cancelled' : ''}`,
      }, String(a.n));
    }), runless.map((a) => h('span', { class: attemptClass(a), title: attemptTitle(a) }, String(a.n)))));
}

const FAILURE_COLUMNS = ['Task', 'Model', '#', 'Failure', 'Exit', 'Check output', 'Run'];

// failedAttempts lists the failed attempts with their check's verdict;
// open holds the keys of the check outputs the reader had open.
export function failedAttempts(attempts, open) {
  const failed = attempts.filter((a) => a.status === 'failed');
  if (!failed.length) return null;
  return [h('h2', null, `Failed attempts (${failed.length})`),
    h('div', { class: 'table-wrap' }, h('table', { class: 'bench-failures' },
      h('thead', null, h('tr', null, FAILURE_COLUMNS.map((c) => h('th', null, c)))),
      h('tbody', null, failed.map((a) => failureRow(a, open)))))];
}

function failureRow(a, open) {
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
    h('td', { class: 'nowrap' }, a.run_id ? runLink(a.run_id) : '–'));
}
