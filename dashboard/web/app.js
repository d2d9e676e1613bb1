// lane dashboard: a single-page app over the JSON API and websocket of
// dashboard/API.md. No framework, no build step, no external resource: ES
// modules, which the server serves under checksummed addresses
// (assets.go). lib/ holds what the views share.
//
// Safety rule: recorded data reaches the DOM as text only (lib/dom.js).

import { aborted, api, post } from './lib/api.js';
import { disclosure, lazyDetails, setDisclosure } from './lib/collapse.js';
import { hbars, legend, niceMax, vbars } from './lib/charts.js';
import { add, h, s } from './lib/dom.js';
import {
  fmtBytes, fmtCost, fmtDur, fmtOffset, fmtPct, fmtTokens, isoDay, oneLine, shortDir, shortID, tsMs, utf8Len,
} from './lib/format.js';
import { lifetime, refresher } from './lib/lifetime.js';
import { live } from './lib/live.js';
import { md } from './lib/markdown.js';
import { navigate, startRouter } from './lib/router.js';
import { datalist, noteRun, seen } from './lib/suggest.js';
import {
  STATUS_LABEL, durEl, errorBox, isRunning, runLink, runPath, statusEl, ticking, timeEl, tokensText, tokensTitle,
} from './lib/widgets.js';

const routes = [
  [/^\/$/, viewRuns, 'runs'],
  [/^\/runs\/([^/]+)\/?$/, viewRun, 'runs'],
  [/^\/sessions\/?$/, viewSessions, 'sessions'],
  [/^\/costs\/?$/, viewCosts, 'costs'],
  [/^\/bench\/?$/, viewBenches, 'bench'],
  [/^\/bench\/([^/]+)\/?$/, viewBenchDetail, 'bench'],
];

// ---------------------------------------------------------------- runs view

const BOOKKEEPING = new Set(['turn.started', 'step_start', 'step_finish']);
const RUN_FILTERS = ['status', 'model', 'dir', 'runtime', 'session', 'since', 'until', 'q'];
const RUN_COLUMNS = ['Status', 'Runtime · model', 'Folder', 'Prompt', 'Cost', 'Tokens in/out/cache', 'Turns', 'Tools', 'Duration', 'Started'];

function runRow(run) {
  noteRun(run);
  const tr = h('tr', {
    class: `run-row${isRunning(run) ? ' is-running' : ''}`,
    dataset: { id: run.id, started: String(tsMs(run.started_at)) },
  },
  h('td', null, statusEl(run.status)),
  h('td', { class: 'nowrap' }, run.runtime || '–', h('span', { class: 'muted' }, ' · '), run.model || '–',
    run.attempt > 1 ? h('span', { class: 'badge', title: 'attempt' }, `#${run.attempt}`) : null),
  h('td', { class: 'dir', title: run.dir || '' }, shortDir(run.dir)),
  h('td', { class: 'prompt' }, runLink(run.id, oneLine(run.prompt, 120) || '(no prompt)')),
  h('td', { class: 'num', title: run.cost_estimate ? 'estimated from tokens' : '' }, fmtCost(run.cost_usd, run.cost_estimate)),
  h('td', { class: 'num nowrap', title: tokensTitle(run.usage) }, tokensText(run.usage)),
  h('td', { class: 'num' }, String(run.turns ?? 0)),
  h('td', { class: 'num' }, String(run.tool_calls ?? 0)),
  h('td', { class: 'num nowrap' }, durEl(run)),
  h('td', { class: 'nowrap' }, timeEl(run.started_at)));
  return tr;
}

function runMatches(run, f) {
  if (f.status && run.status !== f.status) return false;
  if (f.model && run.model !== f.model) return false;
  if (f.dir && run.dir !== f.dir) return false;
  if (f.runtime && run.runtime !== f.runtime) return false;
  if (f.session && run.session_id !== f.session) return false;
  const t = tsMs(run.started_at);
  if (f.since && t < Date.parse(f.since)) return false;
  if (f.until && t > Date.parse(f.until) + (/^\d{4}-\d{2}-\d{2}$/.test(f.until) ? 86400000 : 0)) return false;
  if (f.q) {
    const q = f.q.toLowerCase();
    if (!String(run.prompt || '').toLowerCase().includes(q) && !String(run.result_text || '').toLowerCase().includes(q)) return false;
  }
  return true;
}

function viewRuns(root) {
  document.title = 'lane · runs';
  const life = lifetime();
  const params = new URLSearchParams(location.search);
  const f = Object.fromEntries(RUN_FILTERS.map((k) => [k, params.get(k) || '']));

  const input = (name, attrs) => h('input', { name, value: f[name], ...attrs });
  const form = h('form', { class: 'filters', role: 'search' },
    h('label', null, 'Status ', h('select', { name: 'status' },
      ['', ...Object.keys(STATUS_LABEL)].map((st) => {
        const o = h('option', { value: st }, st ? STATUS_LABEL[st] : 'any');
        if (st === f.status) o.selected = true;
        return o;
      }))),
    h('label', null, 'Model ', input('model', { list: 'dl-models', placeholder: 'any', size: 10 })),
    h('label', null, 'Folder ', input('dir', { list: 'dl-dirs', placeholder: 'any', size: 16 })),
    h('label', null, 'From ', input('since', { type: 'date' })),
    h('label', null, 'To ', input('until', { type: 'date' })),
    h('label', { class: 'grow' }, 'Search ', input('q', { type: 'search', placeholder: 'prompt or result text' })),
    f.runtime ? h('input', { type: 'hidden', name: 'runtime', value: f.runtime }) : null,
    f.session ? h('input', { type: 'hidden', name: 'session', value: f.session }) : null,
    h('button', { type: 'submit' }, 'Filter'),
    RUN_FILTERS.some((k) => f[k]) ? h('a', { href: '/', class: 'button' }, 'Clear') : null,
    datalist('dl-models', seen.models), datalist('dl-dirs', seen.dirs));
  const applyFilters = () => {
    const q = new URLSearchParams();
    for (const [k, v] of new FormData(form)) if (String(v).trim()) q.set(k, String(v).trim());
    const qs = q.toString();
    navigate('/' + (qs ? '?' + qs : ''));
  };
  form.addEventListener('submit', (e) => { e.preventDefault(); applyFilters(); });
  form.querySelector('select').addEventListener('change', applyFilters);

  const tbody = h('tbody');
  const table = h('table', { class: 'runs' }, h('thead', null, h('tr', null, RUN_COLUMNS.map((c) => h('th', null, c)))), tbody);
  const empty = h('p', { class: 'muted empty', hidden: true }, 'No runs here yet. Start one with ', h('code', null, 'lane run'), ' or the New run button.');
  const more = h('button', { type: 'button', class: 'more', hidden: true }, 'More');
  const status = h('div', { class: 'muted' });
  const chips = [];
  if (f.session) chips.push(h('p', { class: 'chip' }, 'session ', h('code', null, f.session)));
  if (f.runtime) chips.push(h('p', { class: 'chip' }, 'runtime ', h('code', null, f.runtime)));
  root.append(h('div', { class: 'page-head' }, h('h1', null, 'Runs'), chips), form,
    h('div', { class: 'table-wrap' }, table), empty, more, status);

  const rows = new Map(); // id → tr
  let next = '';
  let loading = true;
  const pending = []; // run messages that arrived during a page load

  tbody.addEventListener('click', (e) => {
    if (e.target.closest('a, button') || String(getSelection())) return;
    const tr = e.target.closest('tr[data-id]');
    if (tr) navigate(runPath(tr.dataset.id));
  });

  const updateEmpty = () => { empty.hidden = rows.size > 0 || loading; };

  function upsert(run) {
    const old = rows.get(run.id);
    if (old) {
      const tr = runRow(run);
      old.replaceWith(tr);
      rows.set(run.id, tr);
      return;
    }
    if (!runMatches(run, f)) return;
    const t = tsMs(run.started_at);
    let before = null;
    for (const tr of tbody.children) {
      if (Number(tr.dataset.started) < t) { before = tr; break; }
    }
    if (!before && next) return; // older than this page: it will come with "More"
    const tr = runRow(run);
    tr.classList.add('fresh');
    tbody.insertBefore(tr, before);
    rows.set(run.id, tr);
    updateEmpty();
  }

  async function load() {
    loading = true;
    more.disabled = true;
    status.textContent = 'Loading…';
    const q = new URLSearchParams();
    for (const k of RUN_FILTERS) if (f[k]) q.set(k, f[k]);
    q.set('limit', '50');
    if (next) q.set('before', next);
    try {
      const res = await api(`/api/runs?${q}`, { signal: life.signal });
      const frag = document.createDocumentFragment();
      for (const run of res.runs || []) {
        if (rows.has(run.id)) continue;
        const tr = runRow(run);
        rows.set(run.id, tr);
        frag.appendChild(tr);
      }
      tbody.appendChild(frag);
      next = res.next || '';
      status.textContent = '';
    } catch (err) {
      if (aborted(err)) return;
      status.replaceChildren(errorBox(err));
    } finally {
      loading = false;
      more.hidden = !next;
      more.disabled = false;
      updateEmpty();
      for (const run of pending.splice(0)) upsert(run);
      // refresh the suggestions
      form.querySelector('#dl-models')?.replaceWith(datalist('dl-models', seen.models));
      form.querySelector('#dl-dirs')?.replaceWith(datalist('dl-dirs', seen.dirs));
    }
  }

  more.addEventListener('click', load);
  async function resync() {
    const q = new URLSearchParams();
    for (const k of RUN_FILTERS) if (f[k]) q.set(k, f[k]);
    q.set('limit', '50');
    try {
      const res = await api(`/api/runs?${q}`, { signal: life.signal });
      for (const run of res.runs || []) upsert(run);
    } catch { /* the next reconnect tries again */ }
  }

  life.defer(live.on((msg) => {
    if (msg.type === 'resync') { resync(); return; }
    if (msg.type !== 'run') return;
    if (loading) pending.push(msg.run);
    else upsert(msg.run);
  }));
  load();
  return life;
}

// ----------------------------------------------------------------- run view

function viewRun(root, [id]) {
  document.title = `lane · run ${shortID(id)}`;
  const life = lifetime();
  let run = null;
  let children = [];

  const head = h('section', { class: 'run-head' }, h('p', { class: 'muted' }, 'Loading run…'));
  const timeline = h('div', { class: 'timeline', 'aria-live': 'off' });
  const info = h('span', { class: 'muted' });
  const tools = h('div', { class: 'timeline-tools' },
    h('h2', null, 'Trace'), info, h('span', { class: 'spacer' }),
    h('button', { type: 'button', onclick: () => setAll(true) }, 'Expand outputs'),
    h('button', { type: 'button', onclick: () => setAll(false) }, 'Collapse'),
    h('button', { type: 'button', onclick: jumpToEnd }, 'Jump to end'));
  const foot = h('div', { class: 'timeline-foot muted' });
  root.append(head, tools, timeline, foot);

  // Chunks off screen have estimated heights: scroll again once the ones
  // at the end have their real size.
  function jumpToEnd() {
    const end = () => scrollTo(0, document.documentElement.scrollHeight);
    end();
    requestAnimationFrame(() => { end(); requestAnimationFrame(end); });
  }

  function setAll(open) {
    for (const d of timeline.querySelectorAll('details.tool-result')) d.open = open;
    if (!open) for (const b of timeline.querySelectorAll('button.disc-sum[aria-expanded="true"]')) setDisclosure(b, false);
  }

  // --- header
  function renderHead() {
    const r = run;
    document.title = `lane · ${STATUS_LABEL[r.status] || r.status} · ${oneLine(r.prompt, 40)}`;
    const kv = (k, ...v) => [h('dt', null, k), h('dd', null, ...v)];
    const actions = h('div', { class: 'actions' },
      h('a', { href: `/api/runs/${encodeURIComponent(r.id)}/export`, class: 'button', download: `${r.id}.jsonl` }, 'Export JSONL'));
    if (isRunning(r)) {
      const btn = h('button', { type: 'button', class: 'danger' }, 'Cancel run');
      btn.addEventListener('click', async () => {
        if (!confirm('Cancel this run?')) return;
        btn.disabled = true;
        btn.textContent = 'Cancelling…';
        try {
          await post(`/api/runs/${encodeURIComponent(r.id)}/cancel`);
        } catch (err) {
          btn.disabled = false;
          btn.textContent = 'Cancel run';
          actions.append(errorBox(err));
        }
      });
      actions.prepend(btn);
    }
    const dl = h('dl', { class: 'kv' },
      kv('Run', h('code', null, r.id), r.attempt > 1 ? ` (attempt ${r.attempt})` : ''),
      kv('Runtime', `${r.runtime || '–'}${r.runtime_version ? ' ' + r.runtime_version : ''}`),
      kv('Model', r.model || '–'),
      kv('Folder', h('code', null, r.dir || '–')),
      kv('Session', r.session_id ? h('a', { href: `/?session=${encodeURIComponent(r.session_id)}` }, h('code', null, r.session_id)) : '–'),
      kv('Cost', fmtCost(r.cost_usd, r.cost_estimate), r.cost_estimate ? h('span', { class: 'muted' }, ' (estimated from tokens)') : ''),
      kv('Tokens', h('span', { title: tokensTitle(r.usage) }, `in ${fmtTokens(r.usage?.input_tokens)} · out ${fmtTokens(r.usage?.output_tokens)} · cache ${fmtTokens(r.usage?.cache_read_tokens)}r/${fmtTokens(r.usage?.cache_creation_tokens)}w`)),
      kv('Turns', String(r.turns ?? 0), ' · ', `${r.tool_calls ?? 0} tool calls`),
      kv('Duration', durEl(r)),
      kv('Started', timeEl(r.started_at), r.ended_at ? [' → ', timeEl(r.ended_at)] : ''),
      r.exit_code != null ? kv('Exit code', String(r.exit_code)) : null,
      r.capability?.permission_mode ? kv('Permissions', r.capability.permission_mode) : null,
      r.parent_run_id ? kv('Parent', runLink(r.parent_run_id)) : null,
      children.length ? kv('Children', children.map((c, i) => [i ? ', ' : '', runLink(c.id), ' ', statusEl(c.status)])) : null);
    const err = (r.error_kind || r.error_message || r.error_hint || r.contradiction)
      ? h('div', { class: 'errorbox' },
        h('strong', null, `Error${r.error_kind ? ` (${r.error_kind})` : ''}`),
        r.error_message ? h('pre', { class: 'plain' }, r.error_message) : null,
        r.error_hint ? h('p', { class: 'hint' }, 'Hint: ', r.error_hint) : null,
        r.contradiction ? h('p', { class: 'hint' }, 'The runtime contradicted itself: ', r.contradiction) : null)
      : null;
    // keep what the reader opened or closed across updates
    const wasOpen = (sel, def) => { const d = head.querySelector(sel); return d ? d.open : def; };
    const promptOpen = wasOpen('details.prompt', (r.prompt || '').length < 600);
    const resultOpen = wasOpen('details.result-text', false);
    head.replaceChildren();
    add(head, [
      h('div', { class: 'page-head' }, h('h1', null, statusEl(r.status), ' ', h('span', { class: 'title' }, oneLine(r.prompt, 90) || '(no prompt)')), actions),
      dl, err,
      r.prompt ? lazyDetails('prompt', 'Prompt', () => h('pre', { class: 'plain' }, r.prompt), promptOpen) : null,
      r.result_text ? lazyDetails('result-text', 'Result', () => md(r.result_text), resultOpen) : null]);
    if (!isRunning(r)) {
      for (const el of timeline.querySelectorAll('.tool-status .ticking')) {
        el.classList.remove('ticking');
        el.textContent = 'no result';
      }
      for (const el of timeline.querySelectorAll('.tool-status .spinner')) el.remove();
    }
  }

  // --- trace state
  let queuedSeq = 0;       // highest seq fetched or accepted (rendering may lag)
  let count = 0;           // events rendered
  let fetching = false, again = false, loadedOnce = false;
  const queue = [];        // events waiting for the renderer
  let qpos = 0;
  let frame = 0;
  const cards = new Map(); // tool_use_id → card
  let deltaEl = null;      // the streaming preview of partial text
  let startMs = NaN;

  function enqueue(evs) {
    for (const ev of evs) queue.push(ev);
    schedule();
  }

  function schedule() {
    if (!frame) frame = requestAnimationFrame(pump);
  }

  // pump renders queued events in slices of a frame.
  function pump() {
    frame = 0;
    if (!life.alive) return;
    const t0 = performance.now();
    const doc = document.documentElement;
    const follow = run && isRunning(run) && loadedOnce && innerHeight + scrollY >= doc.scrollHeight - 150;
    // A big backlog (a long trace loading) gets longer slices: fewer frames,
    // less work per event; live updates keep to a smooth 12ms.
    const budget = queue.length - qpos > 2000 ? 30 : 12;
    while (qpos < queue.length && performance.now() - t0 < budget) {
      const ev = queue[qpos++];
      try { renderEvent(ev); } catch (err) { console.error('render event', ev, err); }
      count++;
    }
    if (qpos >= queue.length) { queue.length = 0; qpos = 0; }
    info.textContent = `${count.toLocaleString()} events${fetching || queue.length ? ' · loading…' : ''}`;
    if (follow) scrollTo(0, doc.scrollHeight);
    if (queue.length) schedule();
  }

  async function catchUp() {
    if (fetching) { again = true; return; }
    fetching = true;
    try {
      do {
        again = false;
        let limit = loadedOnce ? 5000 : 1000; // a small first page paints sooner
        for (;;) {
          const res = await api(`/api/runs/${encodeURIComponent(run ? run.id : id)}/events?after=${queuedSeq}&limit=${limit}`, { signal: life.signal });
          const evs = (res.events || []).filter((ev) => ev.seq > queuedSeq);
          if (evs.length) { queuedSeq = evs[evs.length - 1].seq; enqueue(evs); }
          if ((res.events || []).length < limit) break;
          limit = 5000;
          // Let the renderer keep up rather than hold 100k events in memory.
          while (queue.length - qpos > 20000 && life.alive) await new Promise((r) => setTimeout(r, 50));
        }
      } while (again && life.alive);
      loadedOnce = true;
      schedule();
    } catch (err) {
      if (!aborted(err)) foot.replaceChildren(errorBox(err));
    } finally {
      fetching = false;
    }
  }

  // --- events → DOM
  function gutter(ev) {
    const t = tsMs(ev.time);
    return h('span', { class: 't', title: ev.time || '' }, fmtOffset(t - startMs));
  }

  function item(ev, cls, ...kids) {
    return h('div', { class: `ev ${cls}`, dataset: { seq: String(ev.seq), kind: ev.kind } }, gutter(ev), h('div', { class: 'body' }, ...kids));
  }

  // place puts a new item under the tool call that started its subagent, or
  // at the top level.
  function place(ev, el) {
    const parentID = ev.parent_tool_use_id;
    if (parentID) {
      const card = cards.get(parentID);
      if (card) {
        if (!card.sub) {
          card.subLabel = h('span');
          card.subBody = h('div', { class: 'sub-body' });
          card.sub = h('details', { class: 'sub', open: true }, h('summary', null, card.subLabel), card.subBody);
          card.body.insertBefore(card.sub, card.resultEl || null);
        }
        card.subCount++;
        card.subLabel.textContent = `subagent · ${card.subCount} event${card.subCount === 1 ? '' : 's'}`;
        card.subBody.appendChild(el);
        return;
      }
      el.classList.add('sub-orphan');
      el.querySelector('.body')?.prepend(h('span', { class: 'tag' }, `subagent of ${shortID(parentID)}`));
    }
    appendTop(el);
  }

  // The timeline is a list of chunks of up to CHUNK items. A chunk that is
  // off screen is skipped by style and layout (content-visibility: auto), so
  // appending to a 20k-event trace costs the same as to a short one.
  const CHUNK = 200;
  let chunk = null, chunkN = 0;
  function appendTop(el) {
    if (!chunk || chunkN >= CHUNK) {
      chunk = h('div', { class: 'chunk' });
      chunkN = 0;
      timeline.appendChild(chunk);
    }
    chunk.appendChild(el);
    chunkN++;
  }

  function toolSummary(name, input) {
    if (!input || typeof input !== 'object') return '';
    const pick = input.command ?? input.file_path ?? input.path ?? input.pattern ?? input.url ?? input.query
      ?? input.description ?? input.prompt ?? input.notebook_path;
    if (pick != null) return oneLine(pick, 160);
    for (const v of Object.values(input)) if (typeof v === 'string') return oneLine(v, 160);
    return '';
  }

  function renderToolCall(ev) {
    const input = ev.input;
    const status = h('span', { class: 'tool-status' });
    const head = h('div', { class: 'tool-head' },
      h('span', { class: 'tool-name' }, ev.tool_name || 'tool'),
      h('code', { class: 'tool-sum' }, toolSummary(ev.tool_name, input)),
      status);
    const pretty = () => h('pre', { class: 'code' }, typeof input === 'string' ? input : JSON.stringify(input, null, 2));
    const inputEl = input !== undefined ? disclosure('tool-input', 'input', pretty) : null;
    const body = h('div', { class: 'body' }, head, inputEl);
    const el = h('div', { class: 'ev tool', dataset: { seq: String(ev.seq), kind: ev.kind, tool: ev.tool_use_id || '' } }, gutter(ev), body);
    const card = { el, body, status, callMs: tsMs(ev.time), resultEl: null, liveOut: null, sub: null, subCount: 0 };
    if (ev.tool_use_id) cards.set(ev.tool_use_id, card);
    if (run && isRunning(run)) status.append(h('span', { class: 'spinner', 'aria-hidden': 'true' }), ticking(card.callMs, 'running '));
    else status.append(h('span', { class: 'muted' }, 'no result'));
    place(ev, el);
  }

  function outputDetails(ev, label) {
    const out = String(ev.output ?? '');
    const first = oneLine((/\S[^\n]*/.exec(out.slice(0, 4000)) || [''])[0], 160);
    const size = ev.output_size ? `${fmtBytes(ev.output_size)}, cut` : fmtBytes(utf8Len(out));
    const d = lazyDetails(`tool-result${ev.is_error ? ' err' : ''}`,
      [h('span', { class: 'label' }, label), h('span', { class: 'muted' }, ` ${size} `), h('code', { class: 'preview' }, first)],
      () => [
        h('pre', { class: 'out' }, out),
        ev.output_size ? h('p', { class: 'muted note' }, `Output cut to ${fmtBytes(out.length)} of ${fmtBytes(ev.output_size)}; the whole output is in Export JSONL.`) : null,
      ], !!ev.is_error && out.length < 4000);
    d.dataset.seq = String(ev.seq);
    d.dataset.kind = ev.kind;
    return d;
  }

  function renderToolResult(ev) {
    const card = ev.tool_use_id && cards.get(ev.tool_use_id);
    if (!card || card.resultEl) {
      place(ev, item(ev, `tool-orphan${ev.is_error ? ' err' : ''}`, h('span', { class: 'tag' }, 'result of ', ev.tool_use_id ? shortID(ev.tool_use_id) : 'unknown call'),
        outputDetails(ev, ev.is_error ? 'error' : 'output')));
      return;
    }
    const took = tsMs(ev.time) - card.callMs;
    card.status.replaceChildren(h('span', { class: ev.is_error ? 'bad' : 'good' }, ev.is_error ? '✗ ' : '✓ '), fmtDur(took));
    card.status.title = `took ${fmtDur(took)}`;
    if (ev.is_error) card.el.classList.add('err');
    card.liveOut?.remove();
    card.liveOut = null;
    card.resultEl = outputDetails(ev, ev.is_error ? 'error' : 'output');
    card.body.appendChild(card.resultEl);
  }

  function renderToolOutput(ev) {
    const card = ev.tool_use_id && cards.get(ev.tool_use_id);
    if (!card || card.resultEl) {
      place(ev, item(ev, 'stderr', h('pre', { class: 'out' }, ev.output || '')));
      return;
    }
    if (!card.liveOut) {
      card.liveOut = h('pre', { class: 'out live-out' });
      card.body.insertBefore(card.liveOut, card.sub || null);
    }
    const node = card.liveOut;
    node.append(ev.output || '');
    if (node.childNodes.length > 200 || node.textContent.length > 200000) {
      const t = node.textContent;
      node.textContent = t.length > 100000 ? '…' + t.slice(-100000) : t;
    }
    node.scrollTop = node.scrollHeight;
  }

  function renderEvent(ev) {
    if (ev.kind === 'delta') {
      if (!deltaEl) {
        deltaEl = item(ev, 'delta', h('pre', { class: 'plain' }));
        place(ev, deltaEl);
      }
      const pre = deltaEl.querySelector('pre');
      pre.append(ev.text || '');
      if (pre.textContent.length > 8000) pre.textContent = '…' + pre.textContent.slice(-6000);
      return;
    }
    if (ev.kind !== 'usage' && deltaEl) { deltaEl.remove(); deltaEl = null; }
    switch (ev.kind) {
      case 'session':
        place(ev, item(ev, 'session', h('span', { class: 'tag' }, 'session'),
          ev.session_id ? h('code', null, ev.session_id) : '', ev.model ? ` · ${ev.model}` : '',
          ev.version ? ` · v${ev.version}` : '', ev.cwd ? [' · ', h('code', null, ev.cwd)] : '',
          ev.tools?.length ? h('span', { class: 'muted', title: ev.tools.join(', ') }, ` · ${ev.tools.length} tools`) : ''));
        break;
      case 'text':
        place(ev, item(ev, 'text', md(ev.text)));
        break;
      case 'thinking':
        place(ev, item(ev, 'thinking', disclosure('', [h('span', { class: 'tag' }, 'thinking'), ' ', h('span', { class: 'muted' }, oneLine(ev.text, 120))], () => md(ev.text))));
        break;
      case 'tool_call':
        renderToolCall(ev);
        break;
      case 'tool_result':
        renderToolResult(ev);
        break;
      case 'tool_output':
        renderToolOutput(ev);
        break;
      case 'usage':
        break; // summed into the run's tokens in the header
      case 'retry': {
        const r = ev.retry || {};
        place(ev, item(ev, 'retry', h('span', { class: 'tag' }, 'retry'),
          ` attempt ${r.attempt ?? '?'}${r.max_retries ? `/${r.max_retries}` : ''}`,
          r.delay_ms ? ` in ${fmtDur(r.delay_ms)}` : '',
          r.error_status ? ` · HTTP ${r.error_status}` : '', r.error ? ` · ${r.error}` : '', ev.text ? ` · ${ev.text}` : ''));
        break;
      }
      case 'compact':
        place(ev, item(ev, 'compact', h('span', { class: 'tag' }, 'context compacted'), ev.subtype ? ` ${ev.subtype}` : '', ev.text ? ` · ${ev.text}` : ''));
        break;
      case 'todo':
        place(ev, item(ev, 'todo', h('span', { class: 'tag' }, 'plan'), h('pre', { class: 'plain' }, ev.text || '')));
        break;
      case 'task':
        // Codex's turn marks and opencode's steps are the runtime's rhythm, not work: kept in the export only.
        if (BOOKKEEPING.has(ev.subtype)) break;
        place(ev, item(ev, 'task', h('span', { class: 'tag' }, `task${ev.subtype ? ' ' + ev.subtype : ''}`), ' ', ev.text || ''));
        break;
      case 'result': {
        const r = ev.result || {};
        const bits = [r.subtype || (r.is_error ? 'error' : 'done'), r.num_turns ? `${r.num_turns} turns` : '',
          r.duration_ms ? fmtDur(r.duration_ms) : '',
          r.run_cost_usd != null ? fmtCost(r.run_cost_usd) : r.total_cost_usd != null ? fmtCost(r.total_cost_usd) : '',
          r.terminal_reason || '', r.api_error_status ? `HTTP ${r.api_error_status}` : ''].filter(Boolean);
        place(ev, item(ev, `result${r.is_error ? ' err' : ''}`, h('div', null, h('span', { class: 'tag' }, 'result'), ' ', bits.join(' · ')),
          r.text ? md(r.text) : null,
          r.errors?.length ? h('ul', null, r.errors.map((e) => h('li', null, e))) : null));
        break;
      }
      case 'error':
        place(ev, item(ev, 'error err', h('span', { class: 'tag' }, `error${ev.error_kind ? ' · ' + ev.error_kind : ''}`), h('pre', { class: 'plain' }, ev.text || '')));
        break;
      case 'stderr':
        place(ev, item(ev, 'stderr', h('pre', { class: 'plain' }, ev.text || '')));
        break;
      case 'raw':
        place(ev, item(ev, 'raw', h('span', { class: 'tag' }, 'unparsed line'), ev.text ? h('pre', { class: 'plain' }, ev.text) : h('span', { class: 'muted' }, ' (kept in Export JSONL)')));
        break;
      case 'transcript':
        place(ev, item(ev, 'transcript', h('span', { class: 'tag' }, 'transcript'), h('span', { class: 'muted' }, ' conversation saved for resume')));
        break;
      default:
        place(ev, item(ev, 'other', h('span', { class: 'tag' }, String(ev.kind || 'event')), ev.text ? ' ' + ev.text : ''));
    }
  }

  // --- load and follow
  life.defer(live.on((msg) => {
    if (msg.type === 'resync') {
      if (!run) return;
      api(`/api/runs/${encodeURIComponent(id)}`, { signal: life.signal }).then((res) => {
        run = res.run;
        children = res.children || [];
        renderHead();
        catchUp();
      }, () => {});
      return;
    }
    if (msg.type === 'run') {
      const r = msg.run;
      if (!run) return; // the first fetch brings it
      if (r.id === run.id) {
        const was = run && run.status;
        run = r;
        renderHead();
        if (was === 'running' && r.status !== 'running') catchUp();
      } else if (run && r.parent_run_id === run.id) {
        const i = children.findIndex((c) => c.id === r.id);
        if (i >= 0) children[i] = r; else children.push(r);
        renderHead();
      }
      return;
    }
    const ev = msg.event;
    if (!run || ev.run_id !== run.id) return;
    if (!fetching && loadedOnce && ev.seq === queuedSeq + 1) {
      queuedSeq = ev.seq;
      enqueue([ev]);
    } else if (ev.seq > queuedSeq) {
      catchUp();
    }
  }));

  (async () => {
    try {
      const res = await api(`/api/runs/${encodeURIComponent(id)}`, { signal: life.signal });
      run = res.run;
      children = res.children || [];
      startMs = tsMs(run.started_at);
      noteRun(run);
      renderHead();
      await catchUp();
    } catch (err) {
      if (aborted(err)) return;
      head.replaceChildren(h('h1', null, 'Run ', h('code', null, id)), errorBox(err), h('p', null, h('a', { href: '/' }, 'Back to the runs')));
    }
  })();

  life.defer(() => { if (frame) cancelAnimationFrame(frame); });
  return life;
}

// ------------------------------------------------------------ sessions view

function viewSessions(root) {
  document.title = 'lane · sessions';
  const life = lifetime();
  const tbody = h('tbody');
  const more = h('button', { type: 'button', class: 'more', hidden: true }, 'More');
  const status = h('div', { class: 'muted' });
  root.append(h('div', { class: 'page-head' }, h('h1', null, 'Sessions')),
    h('div', { class: 'table-wrap' }, h('table', { class: 'sessions' },
      h('thead', null, h('tr', null, ['Last status', 'Session', 'Runtime · model', 'Folder', 'First prompt', 'Runs', 'Cost', 'Tokens in/out/cache', 'Last run'].map((c) => h('th', null, c)))),
      tbody)), more, status);
  let next = '';

  async function load() {
    more.disabled = true;
    status.textContent = 'Loading…';
    const q = new URLSearchParams({ limit: '50' });
    if (next) q.set('before', next);
    try {
      const res = await api(`/api/sessions?${q}`, { signal: life.signal });
      const frag = document.createDocumentFragment();
      for (const se of res.sessions || []) {
        const ids = se.run_ids || [];
        frag.appendChild(h('tr', null,
          h('td', null, statusEl(se.last_status)),
          h('td', { class: 'nowrap' }, h('a', { href: `/?session=${encodeURIComponent(se.id)}`, title: `${se.id}: its runs` }, h('code', null, shortID(se.id)))),
          h('td', { class: 'nowrap' }, se.runtime || '–', h('span', { class: 'muted' }, ' · '), se.model || '–'),
          h('td', { class: 'dir', title: se.dir || '' }, shortDir(se.dir)),
          h('td', { class: 'prompt' }, ids.length ? runLink(ids[0], oneLine(se.first_prompt, 100) || '(no prompt)') : oneLine(se.first_prompt, 100)),
          h('td', { class: 'runlinks' }, ids.map((rid, i) => [i ? ' ' : '', runLink(rid, String(i + 1), 'pill')])),
          h('td', { class: 'num' }, fmtCost(se.cost_usd)),
          h('td', { class: 'num nowrap', title: tokensTitle(se.usage) }, tokensText(se.usage)),
          h('td', { class: 'nowrap', title: `first run ${se.first_started || '?'}` }, timeEl(se.last_started))));
      }
      tbody.appendChild(frag);
      next = res.next || '';
      status.textContent = tbody.children.length ? '' : 'No sessions yet.';
    } catch (err) {
      if (!aborted(err)) status.replaceChildren(errorBox(err));
    } finally {
      more.hidden = !next;
      more.disabled = false;
    }
  }
  more.addEventListener('click', load);
  load();
  return life;
}

// --------------------------------------------------------------- costs view

function viewCosts(root) {
  document.title = 'lane · costs';
  const life = lifetime();
  const params = new URLSearchParams(location.search);
  const today = new Date();
  const monthAgo = new Date(today.getTime() - 29 * 86400000);
  const since = params.has('since') ? params.get('since') : isoDay(monthAgo);
  const until = params.has('until') ? params.get('until') : isoDay(today);

  const form = h('form', { class: 'filters' },
    h('label', null, 'From ', h('input', { type: 'date', name: 'since', value: since })),
    h('label', null, 'To ', h('input', { type: 'date', name: 'until', value: until })),
    h('button', { type: 'submit' }, 'Show'),
    [['7 days', 6], ['30 days', 29], ['90 days', 89], ['All', -1]].map(([label, days]) =>
      h('a', { class: 'button', href: days < 0 ? '/costs?since=&until=' : `/costs?since=${isoDay(new Date(today.getTime() - days * 86400000))}&until=${isoDay(today)}` }, label)));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const fd = new FormData(form);
    navigate(`/costs?since=${encodeURIComponent(fd.get('since') || '')}&until=${encodeURIComponent(fd.get('until') || '')}`);
  });
  const body = h('div', null, h('p', { class: 'muted' }, 'Loading…'));
  root.append(h('div', { class: 'page-head' }, h('h1', null, 'Costs')), form, body);

  (async () => {
    try {
      const q = new URLSearchParams();
      if (since) q.set('since', since);
      if (until) q.set('until', until);
      const st = await api(`/api/stats?${q}`, { signal: life.signal });
      const t = st.totals || {};
      const u = t.usage || {};
      const card = (label, value, title) => h('div', { class: 'card', title }, h('div', { class: 'muted' }, label), h('div', { class: 'big' }, value));
      const days = fillDays(st.by_day || [], since, until);
      body.replaceChildren(
        h('div', { class: 'cards' },
          card('Spend', fmtCost(t.cost_usd)),
          card('Runs', String(t.runs || 0), `${t.succeeded || 0} succeeded, ${t.failed || 0} failed`),
          card('Succeeded / failed', `${t.succeeded || 0} / ${t.failed || 0}`),
          card('Input tokens', fmtTokens(u.input_tokens), String(u.input_tokens || 0)),
          card('Output tokens', fmtTokens(u.output_tokens), String(u.output_tokens || 0)),
          card('Cache read / write', `${fmtTokens(u.cache_read_tokens)} / ${fmtTokens(u.cache_creation_tokens)}`)),
        h('h2', null, 'Spend per day'),
        vbars(days, [{ name: 'cost', cls: 's-cost', get: (b) => b.cost_usd || 0 }], (v) => (v === 0 ? '$0' : v < 10 ? '$' + v.toFixed(2) : '$' + v.toFixed(0))),
        h('h2', null, 'Tokens per day'),
        legend([['input', 's-in'], ['output', 's-out'], ['cache read + write', 's-cache']]),
        vbars(days, [
          { name: 'input', cls: 's-in', get: (b) => b.usage?.input_tokens || 0 },
          { name: 'output', cls: 's-out', get: (b) => b.usage?.output_tokens || 0 },
          { name: 'cache', cls: 's-cache', get: (b) => (b.usage?.cache_read_tokens || 0) + (b.usage?.cache_creation_tokens || 0) },
        ], fmtTokens),
        h('div', { class: 'two' },
          h('div', null, h('h2', null, 'Spend per model'), hbars(st.by_model || [])),
          h('div', null, h('h2', null, 'Spend per folder'), hbars(st.by_dir || []))));
    } catch (err) {
      if (!aborted(err)) body.replaceChildren(errorBox(err));
    }
  })();
  return life;
}

// fillDays adds the days without runs between the range's ends (or the
// data's), so the bars keep a true time axis.
function fillDays(buckets, since, until) {
  const byKey = new Map(buckets.map((b) => [b.key, b]));
  const keys = buckets.map((b) => b.key).sort();
  const isDay = (v) => /^\d{4}-\d{2}-\d{2}$/.test(v || '');
  if (!keys.length && !(isDay(since) && isDay(until))) return buckets;
  const last = isDay(until) ? until : keys[keys.length - 1];
  // start at the range's start, unless that is long before the first data
  let first = isDay(since) ? since : keys[0];
  if (keys.length && (Date.parse(keys[0]) - Date.parse(first)) / 86400000 > 31) first = keys[0];
  const out = [];
  let d = Date.parse(first + 'T00:00:00Z');
  const end = Date.parse(last + 'T00:00:00Z');
  if (!Number.isFinite(d) || !Number.isFinite(end) || (end - d) / 86400000 > 1000) return buckets;
  for (; d <= end; d += 86400000) {
    const key = new Date(d).toISOString().slice(0, 10);
    out.push(byKey.get(key) || { key, runs: 0, cost_usd: 0, usage: {} });
  }
  // keep buckets outside the range too (should not happen)
  for (const b of buckets) if (b.key < first || b.key > last) out.push(b);
  return out.sort((a, b) => (a.key < b.key ? -1 : 1));
}

// --------------------------------------------------------------- bench views

const benchPath = (id) => `/bench/${encodeURIComponent(id)}`;
const MODEL_COLORS = 8; // classes m0…m7 in style.css

function benchDurMs(b) {
  const e = tsMs(b.ended_at), s0 = tsMs(b.started_at);
  return Number.isFinite(e) && Number.isFinite(s0) ? e - s0 : NaN;
}

function benchDurEl(b) {
  if (b.status === 'running') return ticking(tsMs(b.started_at));
  return h('span', { class: 'dur' }, fmtDur(benchDurMs(b)));
}

// progressTitle tells what a bench's attempts add up to.
function progressTitle(p) {
  return `${p.passed || 0} passed, ${p.failed || 0} failed, ${p.running || 0} running, ${p.pending || 0} pending, ${p.skipped || 0} skipped`;
}

function countAttempts(attempts) {
  const p = { total: 0, passed: 0, failed: 0, running: 0, pending: 0, skipped: 0 };
  for (const a of attempts) {
    p.total++;
    if (a.status in p) p[a.status]++;
    else p.pending++;
  }
  return p;
}

function viewBenches(root) {
  document.title = 'lane · bench';
  const life = lifetime();
  const tbody = h('tbody');
  const table = h('table', { class: 'benches' },
    h('thead', null, h('tr', null, [['Status'], ['Bench'], ['Models'], ['Passed / attempts', 'num'], ['Cost', 'num'], ['Duration', 'num'], ['Started']]
      .map(([c, cls]) => h('th', { class: cls }, c)))), tbody);
  const wrap = h('div', { class: 'table-wrap', hidden: true }, table);
  const empty = h('p', { class: 'muted empty', hidden: true }, 'No benches yet — ', h('code', null, 'lane bench SUITE.yaml'), ' will fill this.');
  const status = h('div', { class: 'muted' }, 'Loading…');
  root.append(h('div', { class: 'page-head' }, h('h1', null, 'Bench')), wrap, empty, status);

  tbody.addEventListener('click', (e) => {
    if (e.target.closest('a, button') || String(getSelection())) return;
    const tr = e.target.closest('tr[data-id]');
    if (tr) navigate(benchPath(tr.dataset.id));
  });

  const again = refresher(life, load);
  let seq = 0;
  async function load() {
    const mine = ++seq;
    try {
      const res = await api('/api/benches?limit=200', { signal: life.signal });
      if (mine !== seq) return; // a later load answers
      const benches = res.benches || [];
      tbody.replaceChildren(...benches.map((b) => {
        const p = b.progress || {};
        return h('tr', { class: `bench-row${b.status === 'running' ? ' is-running' : ''}`, dataset: { id: b.id } },
          h('td', null, statusEl(b.status)),
          h('td', { class: 'name' }, h('a', { href: benchPath(b.id) }, b.name || shortID(b.id)),
            ' ', h('code', { class: 'muted', title: b.id }, shortID(b.id))),
          h('td', { class: 'models' }, (b.models || []).join(', ') || '–'),
          h('td', { class: 'num', title: progressTitle(p) }, `${p.passed || 0} / ${p.total || 0}`,
            p.running || p.pending ? h('span', { class: 'muted' }, ` (${(p.running || 0) + (p.pending || 0)} to go)`) : null),
          h('td', { class: 'num' }, fmtCost(b.cost_usd)),
          h('td', { class: 'num nowrap' }, benchDurEl(b)),
          h('td', { class: 'nowrap' }, timeEl(b.started_at)));
      }));
      wrap.hidden = !benches.length;
      empty.hidden = !!benches.length;
      status.textContent = '';
      if (benches.some((b) => b.status === 'running')) again(3000);
    } catch (err) {
      if (!aborted(err)) status.replaceChildren(errorBox(err));
    }
  }
  // a bench's runs start and end: a bench may have started or moved on
  life.defer(live.on((msg) => { if (msg.type === 'resync' || msg.type === 'run') again(1000); }));
  load();
  return life;
}

function viewBenchDetail(root, [id]) {
  document.title = 'lane · bench';
  const life = lifetime();
  const head = h('div', { class: 'run-head' }, h('h1', null, 'Bench ', h('code', null, id)));
  const body = h('div', null, h('p', { class: 'muted' }, 'Loading…'));
  root.append(head, body);
  let last = '';
  let running = false;

  const again = refresher(life, load);
  let seq = 0;
  async function load() {
    const mine = ++seq;
    try {
      const res = await api(`/api/benches/${encodeURIComponent(id)}`, { signal: life.signal });
      if (mine !== seq) return; // a later load answers
      running = res.bench.status === 'running';
      const json = JSON.stringify(res);
      if (json !== last) {
        last = json;
        renderBench(res);
      }
      if (running) again(3000);
    } catch (err) {
      if (aborted(err) || mine !== seq) return;
      if (last && err.status !== 404) { again(5000); return; } // keep what is shown
      head.replaceChildren(h('h1', null, 'Bench ', h('code', null, id)));
      body.replaceChildren(errorBox(err), h('p', null, h('a', { href: '/bench' }, 'Back to the benches')));
    }
  }

  function renderBench(res) {
    const b = res.bench;
    const attempts = res.attempts || [];
    const models = res.models || [];
    const tasks = res.tasks || [];
    document.title = `lane · bench ${b.name || b.id}`;
    const p = countAttempts(attempts);
    const cost = attempts.reduce((a, x) => a + (x.cost_usd || 0), 0);
    const kv = [
      ['ID', h('code', null, b.id)],
      ['Suite', b.suite_path ? h('code', null, b.suite_path) : '–'],
      ['Models', (b.models || []).join(', ') || '–'],
      ['Attempts per task', `${b.repeat || 0} per model, ${b.parallel || 0} at a time`],
      ['Attempts', h('span', { title: progressTitle(p) }, `${p.passed} passed of ${p.total}`,
        p.failed ? `, ${p.failed} failed` : '', p.running ? `, ${p.running} running` : '',
        p.pending ? `, ${p.pending} pending` : '', p.skipped ? `, ${p.skipped} skipped` : '')],
      ['Cost', [fmtCost(cost), b.max_cost_usd ? h('span', { class: 'muted' }, ` of a ${fmtCost(b.max_cost_usd)} budget`) : null]],
      ['Started', timeEl(b.started_at)],
      ['Duration', benchDurEl(b)],
    ];
    head.replaceChildren(
      h('h1', null, statusEl(b.status), h('span', { class: 'title' }, b.name || 'Bench'),
        h('a', { href: '/bench', class: 'button small' }, 'All benches')),
      h('dl', { class: 'kv' }, kv.map(([k, v]) => [h('dt', null, k), h('dd', null, v)])));

    // the <details> a person opened stay open across refreshes
    const open = new Set([...body.querySelectorAll('details[open][data-key]')].map((d) => d.dataset.key));
    const color = new Map(models.map((m, i) => [m.model, `m${i % MODEL_COLORS}`]));
    body.replaceChildren();
    add(body, [
      h('h2', null, 'Models'),
      modelTable(models, color),
      h('h2', null, 'Cost vs pass rate'),
      benchScatter(models, color),
      h('h2', null, 'Tasks'),
      taskGrid(tasks, models, attempts),
      failedAttempts(attempts, open)]);
  }

  life.defer(live.on((msg) => {
    if (msg.type === 'resync') again(0);
    // a run ended: its attempt is being checked; look again soon
    else if (running && msg.type === 'run' && msg.run.status !== 'running') again(1000);
  }));
  load();
  return life;
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

function modelKey(cls) {
  return s('svg', { width: 10, height: 10, class: 'chart-key', 'aria-hidden': 'true' }, s('circle', { cx: 5, cy: 5, r: 5, class: `dotm ${cls}` }));
}

function modelTable(models, color) {
  if (!models.length) return h('p', { class: 'muted' }, 'No models.');
  const cols = [['Model'], ['Pass rate'], ['95% interval', 'num'], ['Passed', 'num'], ['Cost', 'num'], ['Cost / pass', 'num'], ['Median duration', 'num'], ['Tokens in/out/cache', 'num']];
  return h('div', { class: 'table-wrap' }, h('table', { class: 'bench-models' },
    h('thead', null, h('tr', null, cols.map(([c, cls]) => h('th', { class: cls }, c)))),
    h('tbody', null, models.map((m) => {
      const extra = [m.unfinished ? `${m.unfinished} to go` : '', m.skipped ? `${m.skipped} skipped` : ''].filter(Boolean);
      return h('tr', { dataset: { model: m.model } },
        h('td', { class: 'nowrap' }, modelKey(color.get(m.model)), ' ', m.model),
        h('td', { class: 'rate nowrap' }, rateBar(m, color.get(m.model)), ' ', h('span', { class: 'pct' }, fmtPct(m.pass_rate))),
        h('td', { class: 'num' }, m.pass_rate == null ? '–' : `${fmtPct(m.wilson_low, 1)}–${fmtPct(m.wilson_high, 1)}`),
        h('td', { class: 'num', title: `${m.passed} passed, ${m.failed} failed${extra.length ? ', ' + extra.join(', ') : ''}` },
          `${m.passed} / ${m.attempts}`, extra.length ? h('span', { class: 'muted' }, ` (${extra.join(', ')})`) : null),
        h('td', { class: 'num' }, fmtCost(m.cost_usd)),
        h('td', { class: 'num' }, m.cost_per_pass == null ? '–' : fmtCost(m.cost_per_pass)),
        h('td', { class: 'num' }, m.median_duration_ms == null ? '–' : fmtDur(m.median_duration_ms)),
        h('td', { class: 'num nowrap', title: tokensTitle(m.usage) }, tokensText(m.usage)));
    }))));
}

// benchScatter plots each model's cost in this bench against its pass
// rate, the rate's interval as a vertical whisker.
function benchScatter(models, color) {
  const pts = models.filter((m) => m.pass_rate != null);
  const none = models.filter((m) => m.pass_rate == null).map((m) => m.model);
  const note = none.length ? h('p', { class: 'muted note' }, `No finished attempt yet: ${none.join(', ')}.`) : null;
  if (!pts.length) return h('div', null, h('p', { class: 'muted' }, 'No model has a finished attempt yet.'));
  const W = 720, H = 300, L = 56, R = 24, T = 12, B = 42;
  const plotW = W - L - R, plotH = H - T - B;
  const maxCost = niceMax(Math.max(...pts.map((m) => m.cost_usd || 0)));
  const X = (c) => L + (plotW * (c || 0)) / maxCost;
  const Y = (r) => T + plotH - plotH * r;
  const svg = s('svg', { viewBox: `0 0 ${W} ${H}`, class: 'chart scatter', role: 'img', 'aria-label': 'cost vs pass rate per model' });
  for (let i = 0; i <= 4; i++) {
    const y = Y(i / 4), x = L + (plotW * i) / 4;
    svg.append(s('line', { x1: L, x2: W - R, y1: y, y2: y, class: 'grid' }),
      s('text', { x: L - 6, y: y + 4, class: 'axis', 'text-anchor': 'end' }, `${i * 25}%`),
      s('line', { x1: x, x2: x, y1: T, y2: T + plotH, class: 'grid' }),
      s('text', { x, y: T + plotH + 16, class: 'axis', 'text-anchor': 'middle' }, fmtCost((maxCost * i) / 4)));
  }
  svg.append(
    s('text', { x: L + plotW / 2, y: H - 4, class: 'axis', 'text-anchor': 'middle' }, 'cost of the model’s attempts (USD)'),
    s('text', { x: 12, y: T + plotH / 2, class: 'axis', 'text-anchor': 'middle', transform: `rotate(-90 12 ${T + plotH / 2})` }, 'pass rate'));
  for (const m of pts) {
    const cls = color.get(m.model);
    const x = X(m.cost_usd), y = Y(m.pass_rate);
    const right = x > L + plotW * 0.8;
    svg.append(s('g', { class: 'point', 'data-model': m.model },
      s('title', null, `${m.model}: ${fmtPct(m.pass_rate)} passed (${m.passed} of ${m.attempts}, 95% ${fmtPct(m.wilson_low, 1)}–${fmtPct(m.wilson_high, 1)}), ${fmtCost(m.cost_usd)}${m.cost_per_pass != null ? `, ${fmtCost(m.cost_per_pass)} per pass` : ''}`),
      s('line', { x1: x, x2: x, y1: Y(m.wilson_low), y2: Y(m.wilson_high), class: `whisker-v ${cls}` }),
      s('line', { x1: x - 4, x2: x + 4, y1: Y(m.wilson_low), y2: Y(m.wilson_low), class: `whisker-v ${cls}` }),
      s('line', { x1: x - 4, x2: x + 4, y1: Y(m.wilson_high), y2: Y(m.wilson_high), class: `whisker-v ${cls}` }),
      s('circle', { cx: x, cy: y, r: 6, class: `dotm ${cls}` }),
      s('text', { x: right ? x - 10 : x + 10, y: y < T + 16 ? y + 16 : y - 8, class: 'axis label', 'text-anchor': right ? 'end' : 'start' }, m.model)));
  }
  return h('div', null, h('div', { class: 'chart-wrap scatter-wrap' }, svg), note);
}

const ATTEMPT_LABEL = { passed: 'passed', failed: 'failed', running: 'running', pending: 'pending', skipped: 'skipped' };

function attemptTitle(a) {
  const parts = [`#${a.n} ${ATTEMPT_LABEL[a.status] ?? a.status}`];
  if (a.failure_kind) parts.push(a.failure_kind + (a.failure_kind.startsWith('check') ? ` (exit ${a.check_exit_code})` : ''));
  if (a.cost_usd) parts.push(fmtCost(a.cost_usd));
  if (a.duration_ms) parts.push(fmtDur(a.duration_ms));
  return parts.join(' · ');
}

// taskGrid is one row per task, one cell per model: passed/attempts and a
// link to each attempt's run.
function taskGrid(tasks, models, attempts) {
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
      (t.models || []).map((c) => {
        const rest = noRun.get(`${t.task_id}\0${c.model}`) || [];
        const kind = c.attempts === 0 ? 'none' : c.passed === c.attempts ? 'good' : c.passed === 0 ? 'bad' : 'mixed';
        return h('td', { class: `cell c-${kind}`, dataset: { model: c.model } },
          h('span', { class: 'score', title: `${c.passed} of ${c.attempts} finished attempts passed` }, `${c.passed}/${c.attempts}`),
          h('span', { class: 'att' }, (c.run_ids || []).map((rid) => {
            const a = byRun.get(rid) || { n: '?', status: '' };
            return h('a', {
              href: runPath(rid), title: `${attemptTitle(a)} · run ${rid}`,
              class: `pill a-${String(a.status).replace(/[^a-z]/g, '')}${a.failure_kind === 'cancelled' ? ' a-cancelled' : ''}`,
            }, String(a.n));
          }), rest.map((a) => h('span', { class: `pill a-${String(a.status).replace(/[^a-z]/g, '')}`, title: attemptTitle(a) }, String(a.n)))));
      }),
      h('td', { class: 'num' }, `${t.passed}/${t.attempts}`))))));
}

// failedAttempts lists the failed attempts with their check's verdict.
function failedAttempts(attempts, open) {
  const failed = attempts.filter((a) => a.status === 'failed');
  if (!failed.length) return null;
  return [h('h2', null, `Failed attempts (${failed.length})`),
    h('div', { class: 'table-wrap' }, h('table', { class: 'bench-failures' },
      h('thead', null, h('tr', null, ['Task', 'Model', '#', 'Failure', 'Exit', 'Check output', 'Run'].map((c) => h('th', null, c)))),
      h('tbody', null, failed.map((a) => {
        const key = `${a.task_id}\0${a.model}\0${a.n}`;
        const out = String(a.check_output || '');
        let outEl = h('span', { class: 'muted' }, '–');
        if (out) {
          outEl = lazyDetails('check-out', h('span', { class: 'preview' }, oneLine(out, 90)), () => h('pre', { class: 'out' }, out), open.has(key));
          outEl.dataset.key = key;
        }
        return h('tr', null,
          h('td', null, h('code', null, a.task_id)),
          h('td', { class: 'nowrap' }, a.model),
          h('td', { class: 'num' }, String(a.n)),
          h('td', { class: 'nowrap' }, a.failure_kind || 'failed'),
          h('td', { class: 'num' }, a.failure_kind && a.failure_kind.startsWith('check') ? String(a.check_exit_code) : '–'),
          h('td', { class: 'check' }, outEl),
          h('td', { class: 'nowrap' }, a.run_id ? runLink(a.run_id) : '–'));
      }))))];
}

// ------------------------------------------------------------ new run form

function newRunDialog() {
  const msg = h('div');
  const dir = h('input', { name: 'dir', required: true, list: 'dl-new-dirs', placeholder: '/path/to/project', size: 40 });
  const task = h('textarea', { name: 'task', required: true, rows: 6, placeholder: 'What should the agent do?' });
  const model = h('input', { name: 'model', list: 'dl-new-models', value: 'sonnet', size: 16 });
  const submit = h('button', { type: 'submit', class: 'primary' }, 'Start run');
  const close = h('button', { type: 'button' }, 'Close');
  const form = h('form', { class: 'newrun' },
    h('h2', null, 'New run'),
    h('label', null, 'Folder', dir), h('label', null, 'Task', task), h('label', null, 'Model', model),
    datalist('dl-new-dirs', seen.dirs), datalist('dl-new-models', seen.models),
    msg, h('div', { class: 'actions' }, close, submit));
  const dlg = h('dialog', { class: 'dialog' }, form);
  close.addEventListener('click', () => dlg.close());
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    submit.disabled = true;
    msg.replaceChildren(h('p', { class: 'muted' }, 'Starting…'));
    try {
      const res = await post('/api/runs', { dir: dir.value.trim(), task: task.value, model: model.value.trim() });
      dlg.close();
      task.value = '';
      msg.replaceChildren();
      if (res && res.run_id) navigate(runPath(res.run_id));
    } catch (err) {
      msg.replaceChildren(errorBox(err));
    } finally {
      submit.disabled = false;
    }
  });
  document.body.appendChild(dlg);
  return () => {
    form.querySelector('#dl-new-dirs').replaceWith(datalist('dl-new-dirs', seen.dirs));
    form.querySelector('#dl-new-models').replaceWith(datalist('dl-new-models', seen.models));
    if (!dir.value && seen.dirs.size) dir.value = [...seen.dirs][0];
    dlg.showModal();
    (dir.value ? task : dir).focus();
  };
}

const openNewRun = newRunDialog();
document.getElementById('new-run').addEventListener('click', openNewRun);

// --------------------------------------------------------------------- go

// Every run announced feeds the suggestions; registered first, this
// listener sees each run before any view does.
live.on((msg) => { if (msg.type === 'run') noteRun(msg.run); });

live.connect(document.getElementById('conn'));
startRouter(document.getElementById('app'), routes);
