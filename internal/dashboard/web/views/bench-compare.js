// Two models of a bench compared on the same tasks (API.md, Benches:
// paired): the controls that pick them and order the matrix, and the panel
// of their paired difference, each task's attempts averaged and the error
// clustered by task, as `lane bench report` gives it (docs/comparing.md).
// Every figure is the API's; this only says them.

import { h } from '../lib/dom.js';
import { fmtPct } from '../lib/format.js';

// The orders of the matrix: the suite's, or by A − B.
export const SORTS = ['suite', 'diff', '-diff'];

// comparable are the models a pair can be made of: those with an attempt,
// the oracle (the tasks' own solutions) aside, as package stats does.
export function comparable(models) {
  return models.filter((m) => m.model !== 'oracle' &&
    (m.attempts || 0) + (m.unfinished || 0) + (m.skipped || 0) + (m.errored || 0) > 0).map((m) => m.model);
}

// choosePair keeps cmp's pair when both are still comparable, else takes
// the first two; it says whether cmp changed.
export function choosePair(cmp, models) {
  const names = comparable(models);
  const before = `${cmp.a}\0${cmp.b}`;
  if (names.length < 2) {
    cmp.a = cmp.b = '';
  } else if (!names.includes(cmp.a) || !names.includes(cmp.b) || cmp.a === cmp.b) {
    cmp.a = names.includes(cmp.a) ? cmp.a : names.find((n) => n !== cmp.b) ?? names[0];
    cmp.b = names.includes(cmp.b) && cmp.b !== cmp.a ? cmp.b : names.find((n) => n !== cmp.a);
  }
  return before !== `${cmp.a}\0${cmp.b}`;
}

const MINUS = '\u2212';

// signed is a difference of scores: points for passes, a number for
// rewards, with a real minus sign.
export function signed(v, reward, digits) {
  if (Math.abs(v) < TIE) return '0';
  const body = reward ? Math.abs(v).toFixed(digits ?? 3) : `${(Math.abs(v) * 100).toFixed(digits ?? 1)} pts`;
  return (v < 0 ? MINUS : '+') + body;
}

const unsigned = (v, reward) => signed(v, reward).replace(/^[+\u2212]/, '');
const pValue = (p) => (p < 0.001 ? '<0.001' : p.toFixed(3));

// compareControls picks A and B, the order of the matrix and whether it
// shows only the tasks where they differ; change(patch) applies a choice.
export function compareControls(models, cmp, change) {
  const names = comparable(models);
  const pick = (cls, key) => h('select', { class: cls, 'aria-label': `model ${key.toUpperCase()}`,
    onchange: (ev) => change({ [key]: ev.target.value }) },
  names.map((n) => h('option', { value: n, selected: n === cmp[key] }, n)));
  const sortLabels = { suite: 'the suite\u2019s order', diff: `${cmp.a} ${MINUS} ${cmp.b}, largest first`, '-diff': `${cmp.a} ${MINUS} ${cmp.b}, smallest first` };
  return h('div', { class: 'compare-controls' },
    h('label', null, 'A ', pick('pick-a', 'a')), ' ',
    h('label', null, 'B ', pick('pick-b', 'b')), ' ',
    h('label', null, 'Tasks in ', h('select', { class: 'sort-tasks', onchange: (ev) => change({ sort: ev.target.value }) },
      SORTS.map((s) => h('option', { value: s, selected: s === cmp.sort }, sortLabels[s])))), ' ',
    h('label', null, h('input', { type: 'checkbox', class: 'differ', checked: cmp.differ,
      onchange: (ev) => change({ differ: ev.target.checked }) }), ' only the tasks where they differ'));
}

// pairedPanel is the paired difference A − B: its figures, the tasks
// left out, and each model's own score beside its Wilson interval.
export function pairedPanel(res, cmp) {
  const paired = res.paired;
  const reward = paired?.score === 'reward';
  const mine = (paired?.pairs || []).filter((p) => p.a === cmp.a && p.b === cmp.b);
  const main = mine.find((p) => !p.key);
  const title = h('h3', null, `${cmp.a} ${MINUS} ${cmp.b}`,
    h('span', { class: 'muted' }, reward ? ' on the verifiers\u2019 reward' : ' on passes (pass = 1, fail = 0)'));
  if (!main) {
    return h('section', { class: 'paired-panel' }, title,
      h('p', { class: 'paired-none' }, 'No comparison yet: both models need attempts.'));
  }
  return h('section', { class: 'paired-panel', dataset: { a: cmp.a, b: cmp.b } }, title,
    main.difference ? pairFigures(main, reward) : h('p', { class: 'paired-none' },
      `${cmp.a} and ${cmp.b} both finished ${main.tasks} task${main.tasks === 1 ? '' : 's'}: fewer than 2, no figures.`),
    apart(main),
    keyTable(mine.filter((p) => p.key)),
    modelScores(res.models || [], [cmp.a, cmp.b], reward));
}

// pairFigures are a pair's figures, each in a <dd data-field>.
function pairFigures(p, reward) {
  const d = p.difference;
  const dist = d.dist === 't' ? `Student\u2019s t, ${d.df} df` : 'normal';
  const rows = [
    ['diff', `Difference (${p.a} ${MINUS} ${p.b})`, signed(d.mean, reward),
      `the mean over the ${p.tasks} tasks both finished of ${p.a}'s score ${MINUS} ${p.b}'s, each task's attempts averaged`],
    ['ci', '95% interval', [`${signed(d.ci_low, reward)} to ${signed(d.ci_high, reward)}`, h('span', { class: 'muted dist' }, ` (${dist})`)],
      `mean \u00b1 q \u00b7 SE, SE = ${unsigned(d.se, reward)}: the standard error clustered by task`],
    ['p', 'p (paired t-test)', pValue(d.p), 'two-sided'],
    ['exact', 'Exact p (sign test)', d.exact_p == null ? h('span', { class: 'muted' }, '\u2013 (not every task\u2019s score is 0 or 1)') : pValue(d.exact_p),
      'McNemar\u2019s exact test: the two-sided sign test over the tasks where they differ'],
    ['wlt', 'Wins / losses / ties', `${p.a} better on ${p.wins}, ${p.b} on ${p.losses}, tied on ${p.ties}`, 'tasks'],
    ['mde', 'Detectable difference', `${unsigned(d.mde, reward)}; ${d.tasks_to_halve_mde} tasks would halve it`,
      'the smallest difference these tasks detect at 80% power, \u03b1 = 0.05, two-sided'],
  ];
  return h('dl', { class: 'kv paired-figures' }, rows.map(([field, dt, dd, title]) =>
    [h('dt', null, dt), h('dd', { dataset: { field }, title }, dd)]));
}

// apart lists the tasks left out of a pair, never mixed in.
function apart(p) {
  const lines = [
    ['only-a', `Only ${p.a} finished`, p.only_a],
    ['only-b', `Only ${p.b} finished`, p.only_b],
    ['errored', 'Left out for errors of the task or its environment', p.errored],
  ].filter(([, , tasks]) => tasks?.length);
  if (!lines.length) return null;
  return h('ul', { class: 'paired-apart' }, lines.map(([kind, what, tasks]) =>
    h('li', { dataset: { apart: kind } }, `${what}: `, tasks.map((t, i) => [i ? ', ' : '', h('code', null, t)]))));
}

// keyTable compares the pair on each reward key apart.
function keyTable(pairs) {
  if (!pairs.length) return null;
  return h('div', { class: 'table-wrap' }, h('table', { class: 'paired-keys' },
    h('thead', null, h('tr', null, ['Reward key', 'Tasks', 'Difference', '95% interval', 'p', 'Wins / losses / ties'].map((c) => h('th', null, c)))),
    h('tbody', null, pairs.map((p) => {
      const d = p.difference;
      return h('tr', { dataset: { key: p.key } },
        h('td', null, h('code', null, p.key)), h('td', { class: 'num' }, String(p.tasks)),
        h('td', { class: 'num' }, d ? signed(d.mean, true) : '\u2013'),
        h('td', { class: 'num' }, d ? `${signed(d.ci_low, true)} to ${signed(d.ci_high, true)}` : '\u2013'),
        h('td', { class: 'num' }, d ? pValue(d.p) : '\u2013'),
        h('td', { class: 'num' }, `${p.wins} / ${p.losses} / ${p.ties}`));
    }))));
}

// modelScores is each model's mean per-task score with its standard error
// clustered by task, beside the pass rate with Wilson's interval over the
// attempts, saying which is which.
function modelScores(models, names, reward) {
  const rows = names.map((n) => models.find((m) => m.model === n)).filter(Boolean);
  const mean = (s) => {
    if (s?.mean == null) return '\u2013';
    const m = reward ? s.mean.toFixed(2) : fmtPct(s.mean, 0);
    if (s.se == null) return `${m} (one task: no SE)`;
    return reward ? `${m} \u00b1 ${s.se.toFixed(2)}` : `${m} \u00b1 ${(s.se * 100).toFixed(0)} pts`;
  };
  return [h('div', { class: 'table-wrap' }, h('table', { class: 'paired-models' },
    h('thead', null, h('tr', null, h('th', null, 'Model'), h('th', { class: 'num' }, 'Task mean \u00b1 SE'),
      h('th', { class: 'num' }, 'Tasks'), h('th', { class: 'num' }, 'Pass rate, 95% Wilson'))),
    h('tbody', null, rows.map((m) => h('tr', { dataset: { model: m.model } },
      h('td', null, m.model),
      h('td', { class: 'num task-mean' }, mean(m.score)),
      h('td', { class: 'num' }, String(m.score?.tasks ?? 0)),
      h('td', { class: 'num wilson' }, m.pass_rate == null ? '\u2013'
        : `${fmtPct(m.pass_rate, 1)}, ${fmtPct(m.wilson_low, 1)}\u2013${fmtPct(m.wilson_high, 1)}`)))))),
  h('p', { class: 'muted legend' }, 'Task mean \u00b1 SE: the mean of the per-task scores (each task\u2019s finished attempts averaged) ',
    'and its standard error clustered by task, which does not count a task\u2019s repeats as independent. ',
    'Pass rate, 95% Wilson: over the attempts, as if each were independent; it overstates the precision when tasks are repeated.')];
}

// taskDiff is a task's A − B, null unless both finished it.
export function taskDiff(t, cmp) {
  const ca = (t.models || []).find((c) => c.model === cmp.a);
  const cb = (t.models || []).find((c) => c.model === cmp.b);
  return ca?.score == null || cb?.score == null ? null : ca.score - cb.score;
}

// The same scores averaged in another order differ in their last bits.
const TIE = 1e-9;

// orderTasks orders and filters the matrix's tasks as cmp says: by A − B
// (the tasks without one last, in the suite's order), only those where A
// and B differ.
export function orderTasks(tasks, cmp) {
  let rows = tasks.map((t, i) => ({ t, i, d: cmp.a && cmp.b ? taskDiff(t, cmp) : null }));
  if (cmp.differ && cmp.a && cmp.b) rows = rows.filter((r) => r.d != null && Math.abs(r.d) > TIE);
  if (cmp.sort !== 'suite' && cmp.a && cmp.b) {
    const sign = cmp.sort === 'diff' ? -1 : 1;
    rows.sort((x, y) => (x.d == null) - (y.d == null) || (x.d == null ? 0 : sign * (x.d - y.d)) || x.i - y.i);
  }
  return rows;
}
