// The header of a run's page: its status and prompt, its facts, its error,
// its prompt and result text, and its actions (export, interrupt, cancel).

import { api, post } from '../lib/api.js';
import { add, h } from '../lib/dom.js';
import { lazyDetails } from '../lib/collapse.js';
import { fmtCost, fmtTokens, oneLine } from '../lib/format.js';
import { md } from '../lib/markdown.js';
import { setTitle } from '../lib/title.js';
import {
  STATUS_LABEL, durEl, errorBox, isRunning, runLink, statusEl, takes, timeEl, tokensTitle,
} from '../lib/widgets.js';

// renderRunHead fills head with run (and its children runs), keeping the
// prompt and result open or closed as the reader left them.
// context is the live count of tokens the last model call sent, when the
// page has seen one since the run record was read (0: the record's).
export function renderRunHead(head, run, children, context = 0) {
  setTitle(`lane · ${STATUS_LABEL[run.status] || run.status} · ${oneLine(run.prompt, 40)}`);
  const wasOpen = (sel, def) => { const d = head.querySelector(sel); return d ? d.open : def; };
  const promptOpen = wasOpen('details.prompt', (run.prompt || '').length < 600);
  const resultOpen = wasOpen('details.result-text', false);
  head.replaceChildren();
  add(head, [
    h('div', { class: 'page-head' },
      h('h1', null, statusEl(run.status), ' ', h('span', { class: 'title' }, oneLine(run.prompt, 90) || '(no prompt)')),
      runActions(run)),
    runFacts(run, children, context),
    runError(run),
    run.prompt ? lazyDetails('prompt', 'Prompt', () => h('pre', { class: 'plain' }, run.prompt), promptOpen) : null,
    run.result_text ? lazyDetails('result-text', 'Result', () => md(run.result_text), resultOpen) : null]);
}

// runLoadError replaces head by what tells the run could not be shown.
export function runLoadError(head, id, err) {
  head.replaceChildren(h('h1', null, 'Run ', h('code', null, id)), errorBox(err),
    h('p', null, h('a', { href: '/' }, 'Back to the runs')));
}

export const fetchRun = (id, signal) => api(`/api/runs/${encodeURIComponent(id)}`, { signal });

// exportMenu: the run as JSON lines (events and the runtime's lines),
// Markdown (for a pull request or a chat) or OTLP JSON (GenAI spans).
function exportMenu(run) {
  const url = (format) => `/api/runs/${encodeURIComponent(run.id)}/export` + (format ? `?format=${format}` : '');
  const item = (format, label, file, title) => h('a', { href: url(format), download: file, title }, label);
  return h('details', { class: 'export-menu' },
    h('summary', { class: 'button' }, 'Export'),
    h('div', { class: 'export-items' },
      item('', 'JSONL', `${run.id}.jsonl`, 'The run and its normalized events, with the runtime\'s own lines'),
      item('markdown', 'Markdown', `${run.id}.md`, 'Prompt, tool calls with folded outputs, result, cost and tokens'),
      item('otlp', 'OTLP JSON', `${run.id}.otlp.json`, 'OpenTelemetry GenAI spans, without prompts or tool contents')));
}

// runActions: Export; while the run runs, Interrupt (stop the
// current turn; the run stays open for a message) and Cancel (end it), as
// far as the run takes them.
function runActions(run) {
  const actions = h('div', { class: 'actions' }, exportMenu(run));
  if (!isRunning(run)) {
    if (run.origin && run.changes?.files > 0) actions.prepend(...applyAction(run, actions));
    return actions;
  }
  const send = (what) => () => post(`/api/runs/${encodeURIComponent(run.id)}/${what}`);
  const note = h('span', { class: 'muted action-note', 'aria-live': 'polite', hidden: true });
  const interrupt = takes(run, 'interrupt') && actionButton(actions, {
    cls: 'interrupt', label: 'Interrupt', busy: 'Interrupting…', act: send('interrupt'),
    title: 'Stop the current turn the runtime\'s own way; the run stays open for a follow-up message',
    // Another turn may need it again: the button comes back.
    done: (btn) => { btn.disabled = false; btn.textContent = 'Interrupt'; note.textContent = 'interrupt sent'; note.hidden = false; },
  });
  const cancel = takes(run, 'cancel')
    ? actionButton(actions, {
      cls: 'danger', label: 'Cancel run', busy: 'Cancelling…', act: send('cancel'),
      ask: () => confirm('Cancel this run?'),
    })
    : h('button', { type: 'button', class: 'danger', disabled: true,
      title: 'Its lane process takes no steering from here: stop it where it runs' }, 'Cancel run');
  actions.prepend(...[note, interrupt, cancel].filter(Boolean));
  return actions;
}

// applyAction is the Apply button of a run made in a copy of a folder
// (lane run --models): it brings the run's changes into the folder, as lane
// apply does; when the folder changed since, it shows the conflicts and
// offers to apply anyway.
export function applyAction(run, actions) {
  const note = h('span', { class: 'muted action-note', 'aria-live': 'polite', hidden: true });
  const apply = (force) => post(`/api/runs/${encodeURIComponent(run.id)}/apply`, { force });
  const btn = actionButton(actions, {
    cls: 'apply', label: 'Apply', busy: 'Applying…',
    act: async () => {
      try { await apply(false); } catch (err) { if (err.status === 409) force.hidden = false; throw err; }
    },
    title: `Bring this run's changes into ${run.origin}`,
    done: (b) => { b.textContent = 'Applied'; note.textContent = `applied into ${run.origin}`; note.hidden = false; },
  });
  const force = actionButton(actions, {
    cls: 'danger apply-force', label: 'Apply anyway', busy: 'Applying…', act: () => apply(true),
    ask: () => confirm(`Write this run's files over the changed ones in ${run.origin}?`),
    done: (b) => { b.textContent = 'Applied'; note.textContent = `applied into ${run.origin}`; note.hidden = false; },
  });
  force.hidden = true; // shown when the folder changed since the copy was made
  return [note, btn, force];
}

// actionButton is a button that posts once per click (after ask(), when
// given, says yes): busy while it posts, then left disabled until the
// header is drawn again unless done(btn) says otherwise; an error shows in
// actions.
function actionButton(actions, { cls, label, busy, title, act, ask, done }) {
  const btn = h('button', { type: 'button', class: cls, title }, label);
  btn.addEventListener('click', async () => {
    if (ask && !ask()) return;
    btn.disabled = true;
    btn.textContent = busy;
    try {
      await act();
      done?.(btn);
    } catch (err) {
      btn.disabled = false;
      btn.textContent = label;
      actions.append(errorBox(err));
    }
  });
  return btn;
}

// runFacts is the run's key/value list.
function runFacts(r, children, context) {
  const kv = (k, ...v) => [h('dt', null, k), h('dd', null, ...v)];
  const u = r.usage || {};
  return h('dl', { class: 'kv' },
    kv('Run', h('code', null, r.id), r.attempt > 1 ? ` (attempt ${r.attempt})` : ''),
    kv('Runtime', `${r.runtime || '–'}${r.runtime_version ? ' ' + r.runtime_version : ''}`),
    kv('Model', r.model || '–'),
    r.worker ? kv('Worker', h('a', { href: '/workers', title: 'the lane worker that ran it' }, r.worker)) : null,
    kv('Folder', h('code', null, r.dir || '–')),
    kv('Session', r.session_id ? h('a', { href: `/?session=${encodeURIComponent(r.session_id)}` }, h('code', null, r.session_id)) : '–'),
    kv('Cost', fmtCost(r.cost_usd, r.cost_estimate), r.cost_estimate ? h('span', { class: 'muted' }, ' (estimated from tokens)') : ''),
    kv('Tokens', h('span', { title: tokensTitle(r.usage) },
      `in ${fmtTokens(u.input_tokens)} · out ${fmtTokens(u.output_tokens)} · cache ${fmtTokens(u.cache_read_tokens)}r/${fmtTokens(u.cache_creation_tokens)}w`)),
    kv('Context', h('span', { class: 'context-fill', dataset: { tokens: String(context || r.context_tokens || 0) }, title: 'what the last model call sent (input, cache reads and writes) against the model\'s window' },
      contextText(context || r.context_tokens, r.context_window))),
    kv('Turns', String(r.turns ?? 0), ' · ', `${r.tool_calls ?? 0} tool calls`),
    r.budget ? kv('Limits', h('span', { class: 'budget', title: 'what lane lets the run use before it stops it (--token-limit, --cost-limit, --max-turns)' }, budgetText(r.budget))) : null,
    kv('Duration', durEl(r)),
    kv('Started', timeEl(r.started_at), r.ended_at ? [' → ', timeEl(r.ended_at)] : ''),
    r.exit_code != null ? kv('Exit code', String(r.exit_code)) : null,
    r.capability?.permission_mode ? kv('Permissions', r.capability.permission_mode) : null,
    r.parent_run_id ? kv('Parent', runLink(r.parent_run_id)) : null,
    children.length ? kv('Children', children.map((c, i) => [i ? ', ' : '', runLink(c.id), ' ', statusEl(c.status)])) : null);
}

// budgetText reads like "400k tokens · $2.00 · 30 turns".
export function budgetText(b) {
  const parts = [];
  if (b.tokens > 0) parts.push(`${fmtTokens(b.tokens)} tokens`);
  if (b.cost_usd > 0) parts.push(fmtCost(b.cost_usd, false));
  if (b.turns > 0) parts.push(`${b.turns} turn${b.turns === 1 ? '' : 's'}`);
  return parts.join(' · ') || '–';
}

// contextText reads like "45k of 200k (23 %)", "45k" when the window is not
// known, "–" before any model call.
export function contextText(tokens, window) {
  if (!(tokens > 0)) return '–';
  if (!(window > 0)) return fmtTokens(tokens);
  return `${fmtTokens(tokens)} of ${fmtTokens(window)} (${Math.round((100 * tokens) / window)} %)`;
}

// runError is the box of what went wrong, if anything did.
function runError(r) {
  if (!(r.error_kind || r.error_message || r.error_hint || r.contradiction)) return null;
  return h('div', { class: 'errorbox' },
    h('strong', null, `Error${r.error_kind ? ` (${r.error_kind})` : ''}`),
    r.error_message ? h('pre', { class: 'plain' }, r.error_message) : null,
    r.error_hint ? h('p', { class: 'hint' }, 'Hint: ', r.error_hint) : null,
    r.contradiction ? h('p', { class: 'hint' }, 'The runtime contradicted itself: ', r.contradiction) : null);
}
