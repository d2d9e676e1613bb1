// How each kind of event (trace.Event, API.md) shows in the timeline.
// A view is view(ev, t): it builds with t.item and puts the result in
// place with t.place (see trace-render.js).

import { h } from '../lib/dom.js';
import { disclosure } from '../lib/collapse.js';
import { fmtCost, fmtDur, oneLine } from '../lib/format.js';
import { md } from '../lib/markdown.js';
import { toolCall, toolOutput, toolResult } from './trace-tools.js';

// Codex's turn marks and opencode's steps are the runtime's rhythm, not
// work: kept in the export only.
const BOOKKEEPING = new Set(['turn.started', 'step_start', 'step_finish']);

const tag = (text) => h('span', { class: 'tag' }, text);

export const EVENT_VIEWS = {
  session(ev, t) {
    t.place(ev, t.item(ev, 'session', tag('session'),
      ev.session_id ? h('code', null, ev.session_id) : '', ev.model ? ` · ${ev.model}` : '',
      ev.version ? ` · v${ev.version}` : '', ev.cwd ? [' · ', h('code', null, ev.cwd)] : '',
      ev.tools?.length ? h('span', { class: 'muted', title: ev.tools.join(', ') }, ` · ${ev.tools.length} tools`) : ''));
  },
  text(ev, t) {
    t.place(ev, t.item(ev, 'text', md(ev.text)));
  },
  thinking(ev, t) {
    t.place(ev, t.item(ev, 'thinking',
      disclosure('', [tag('thinking'), ' ', h('span', { class: 'muted' }, oneLine(ev.text, 120))], () => md(ev.text))));
  },
  tool_call: toolCall,
  tool_result: toolResult,
  tool_output: toolOutput,
  usage() {}, // summed into the run's tokens in the header
  retry(ev, t) {
    const r = ev.retry || {};
    t.place(ev, t.item(ev, 'retry', tag('retry'),
      ` attempt ${r.attempt ?? '?'}${r.max_retries ? `/${r.max_retries}` : ''}`,
      r.delay_ms ? ` in ${fmtDur(r.delay_ms)}` : '',
      r.error_status ? ` · HTTP ${r.error_status}` : '', r.error ? ` · ${r.error}` : '', ev.text ? ` · ${ev.text}` : ''));
  },
  compact(ev, t) {
    t.place(ev, t.item(ev, 'compact', tag('context compacted'), ev.subtype ? ` ${ev.subtype}` : '', ev.text ? ` · ${ev.text}` : ''));
  },
  todo(ev, t) {
    t.place(ev, t.item(ev, 'todo', tag('plan'), h('pre', { class: 'plain' }, ev.text || '')));
  },
  task(ev, t) {
    if (BOOKKEEPING.has(ev.subtype)) return;
    t.place(ev, t.item(ev, 'task', tag(`task${ev.subtype ? ' ' + ev.subtype : ''}`), ' ', ev.text || ''));
  },
  result(ev, t) {
    const r = ev.result || {};
    const bits = [r.subtype || (r.is_error ? 'error' : 'done'), r.num_turns ? `${r.num_turns} turns` : '',
      r.duration_ms ? fmtDur(r.duration_ms) : '',
      r.run_cost_usd != null ? fmtCost(r.run_cost_usd) : r.total_cost_usd != null ? fmtCost(r.total_cost_usd) : '',
      r.terminal_reason || '', r.api_error_status ? `HTTP ${r.api_error_status}` : ''].filter(Boolean);
    t.place(ev, t.item(ev, `result${r.is_error ? ' err' : ''}`, h('div', null, tag('result'), ' ', bits.join(' · ')),
      r.text ? md(r.text) : null,
      r.errors?.length ? h('ul', null, r.errors.map((e) => h('li', null, e))) : null));
  },
  error(ev, t) {
    t.place(ev, t.item(ev, 'error err', tag(`error${ev.error_kind ? ' · ' + ev.error_kind : ''}`), h('pre', { class: 'plain' }, ev.text || '')));
  },
  stderr(ev, t) {
    t.place(ev, t.item(ev, 'stderr', h('pre', { class: 'plain' }, ev.text || '')));
  },
  raw(ev, t) {
    t.place(ev, t.item(ev, 'raw', tag('unparsed line'),
      ev.text ? h('pre', { class: 'plain' }, ev.text) : h('span', { class: 'muted' }, ' (kept in Export JSONL)')));
  },
  transcript(ev, t) {
    t.place(ev, t.item(ev, 'transcript', tag('transcript'), h('span', { class: 'muted' }, ' conversation saved for resume')));
  },
};

// otherEvent shows a kind this page does not know by its name and text.
export function otherEvent(ev, t) {
  t.place(ev, t.item(ev, 'other', tag(String(ev.kind || 'event')), ev.text ? ' ' + ev.text : ''));
}
