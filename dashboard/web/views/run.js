// One run (/runs/{id}): the requests that wait for a person's approval,
// its header, the message box while it runs, then its trace, followed live
// while it runs. The pieces: asks.js (the requests), run-head.js (the
// header), steer.js (the message box), trace-feed.js (bringing the events),
// trace-render.js with trace-events.js and trace-tools.js (showing them).

import { h } from '../lib/dom.js';
import { setDisclosure } from '../lib/collapse.js';
import { aborted } from '../lib/api.js';
import { approvals } from '../lib/approvals.js';
import { shortID, tsMs } from '../lib/format.js';
import { lifetime } from '../lib/lifetime.js';
import { live } from '../lib/live.js';
import { noteRun } from '../lib/suggest.js';
import { setTitle } from '../lib/title.js';
import { errorBox, isRunning } from '../lib/widgets.js';
import { asksPanel } from './asks.js';
import { fetchRun, renderRunHead, runLoadError } from './run-head.js';
import { steerPanel } from './steer.js';
import { traceFeed } from './trace-feed.js';
import { traceRenderer } from './trace-render.js';

export function viewRun(root, [id]) {
  setTitle(`lane · run ${shortID(id)}`);
  const life = lifetime();
  const page = runPage(root);
  let run = null;     // as last fetched or announced
  let children = [];  // the runs it started
  let trace = null;   // { feed, renderer }, once run is known

  const isLive = () => !!run && isRunning(run);
  const showHead = () => {
    renderRunHead(page.head, run, children);
    page.steer.show(run);
    showAsks();
    if (!isRunning(run)) trace.renderer.settle();
  };
  const showAsks = () => { if (run) page.asks.update(isRunning(run) ? approvals.forRun(run.id) : []); };
  life.defer(approvals.on(showAsks));
  const tick = setInterval(page.asks.tick, 1000);
  life.defer(() => clearInterval(tick));
  const took = (res) => { run = res.run; children = res.children || []; };

  life.defer(live.on((msg) => {
    if (!run) return; // the first fetch brings it
    if (msg.type === 'resync') {
      fetchRun(id, life.signal).then((res) => { took(res); showHead(); trace.feed.catchUp(); }, () => {});
    } else if (msg.type === 'run') {
      onRun(msg.run);
    } else if (msg.event.run_id === run.id) {
      trace.feed.accept(msg.event);
    }
  }));

  // onRun follows changes of the run and of its children.
  function onRun(r) {
    if (r.id === run.id) {
      const was = run.status;
      run = r;
      showHead();
      // the events of its last moments may not have come live
      if (was === 'running' && r.status !== 'running') trace.feed.catchUp();
    } else if (r.parent_run_id === run.id) {
      const i = children.findIndex((c) => c.id === r.id);
      if (i >= 0) children[i] = r; else children.push(r);
      showHead();
    }
  }

  (async () => {
    try {
      took(await fetchRun(id, life.signal));
      noteRun(run);
      const renderer = traceRenderer(page.timeline, { startMs: tsMs(run.started_at), isLive });
      const feed = traceFeed({
        runID: run.id, life, render: renderer.render, isLive, info: page.info,
        onError: (err) => page.foot.replaceChildren(errorBox(err)),
      });
      trace = { feed, renderer };
      showHead();
      await feed.catchUp();
    } catch (err) {
      if (!aborted(err)) runLoadError(page.head, id, err);
    }
  })();
  return life;
}

// runPage lays out the page: the requests waiting for approval, the
// header, the message box, the trace's toolbar, the timeline and a footer
// for errors.
function runPage(root) {
  const asks = asksPanel();
  const steer = steerPanel();
  const head = h('section', { class: 'run-head' }, h('p', { class: 'muted' }, 'Loading run…'));
  const timeline = h('div', { class: 'timeline', 'aria-live': 'off' });
  const info = h('span', { class: 'muted' });
  const setAll = (open) => {
    for (const d of timeline.querySelectorAll('details.tool-result')) d.open = open;
    if (!open) for (const b of timeline.querySelectorAll('button.disc-sum[aria-expanded="true"]')) setDisclosure(b, false);
  };
  const tools = h('div', { class: 'timeline-tools' },
    h('h2', null, 'Trace'), info, h('span', { class: 'spacer' }),
    h('button', { type: 'button', onclick: () => setAll(true) }, 'Expand outputs'),
    h('button', { type: 'button', onclick: () => setAll(false) }, 'Collapse'),
    h('button', { type: 'button', onclick: jumpToEnd }, 'Jump to end'));
  const foot = h('div', { class: 'timeline-foot muted' });
  root.append(asks.el, head, steer.el, tools, timeline, foot);
  return { asks, steer, head, timeline, info, foot };
}

// jumpToEnd scrolls to the end of the trace. Chunks off screen have
// estimated heights: scroll again once the ones at the end have their real
// size.
function jumpToEnd() {
  const end = () => scrollTo(0, document.documentElement.scrollHeight);
  end();
  requestAnimationFrame(() => { end(); requestAnimationFrame(end); });
}
