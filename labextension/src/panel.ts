/**
 * The jaxviz sidebar panel, bound to the current notebook's kernel: Functions,
 * Recompiles, Stale captures, Devices.
 *
 * Protocol (kernel side: `jaxviz/bridge.py`): the panel opens a "jaxviz" comm and
 * asks for a snapshot; the kernel then pushes events on it as they happen. A kernel
 * without jaxviz closes the comm at once (the panel says how to load it); when
 * jaxviz is loaded later, the kernel opens a "jaxviz" comm itself, which the panel
 * adopts. Nothing is ever executed in the user's kernel, and there is no polling.
 */

import { ISessionContext } from '@jupyterlab/apputils';
import { NotebookPanel } from '@jupyterlab/notebook';
import { Kernel, KernelMessage } from '@jupyterlab/services';
import { LabIcon } from '@jupyterlab/ui-components';
import { JSONObject } from '@lumino/coreutils';
import { Panel, Widget } from '@lumino/widgets';

import { codeSpans, formatBytes, formatSeconds, shortValue } from './format';
import {
  COMM_TARGET,
  CompileEvent,
  DiffMessage,
  EventMessage,
  EventsMessage,
  GraphMessage,
  ShippedPayload,
  SnapshotMessage,
  StaleEvent
} from './model';
import { FunctionEntry, PanelStore, isWarning, noGraphReason } from './store';

/** Shows a function's graph where there is room to read it (a main-area tab). */
export type GraphOpener = (name: string, payload: ShippedPayload) => void;
/** Shows what a recompile changed in the program (the kernel's answer to a diff request). */
export type DiffOpener = (diff: DiffMessage) => void;

export type LinkState = 'no-notebook' | 'no-kernel' | 'connecting' | 'not-loaded' | 'restarting' | 'connected';

const PAGE = 100; // entries shown per "show more"
const RENDER_DELAY_MS = 60; // events arriving within this are rendered together

const ICON_SVG = `<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16" viewBox="0 0 16 16">
<g class="jp-icon3" fill="#616161">
<rect x="1" y="1" width="5" height="4" rx="1"/><rect x="10" y="1" width="5" height="4" rx="1"/>
<rect x="5.5" y="11" width="5" height="4" rx="1"/>
<path d="M3.2 5h1v2.2l3.3 3.3V11h1v-.5l3.3-3.3V5h1v2.6L9 11.2V11H7v.2L3.2 7.6z"/>
</g></svg>`;

export const jaxvizIcon = new LabIcon({ name: 'jaxviz:icon', svgstr: ICON_SVG });

function el<K extends keyof HTMLElementTagNameMap>(tag: K, className = '', text?: string): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (className) {
    e.className = className;
  }
  if (text !== undefined) {
    e.textContent = text;
  }
  return e;
}

class Section {
  readonly node: HTMLDetailsElement;
  readonly body: HTMLDivElement;
  private readonly countEl: HTMLSpanElement;

  constructor(readonly name: string, title: string) {
    this.node = el('details', `jp-jaxviz-section jp-jaxviz-section-${name}`);
    this.node.open = true;
    const summary = el('summary', 'jp-jaxviz-section-title');
    summary.append(el('span', '', title));
    this.countEl = el('span', 'jp-jaxviz-count');
    summary.append(this.countEl);
    this.body = el('div', 'jp-jaxviz-section-body');
    this.node.append(summary, this.body);
  }

  setCount(n: number | string): void {
    this.countEl.textContent = n === 0 || n === '' ? '' : String(n);
  }
}

export class JaxvizPanel extends Panel {
  readonly store = new PanelStore();
  private notebook: NotebookPanel | null = null;
  private kernel: Kernel.IKernelConnection | null = null;
  private comm: Kernel.IComm | null = null;
  private state: LinkState = 'no-notebook';
  private restarting = false;
  private renderTimer = 0;
  private compileLimit = PAGE;
  private selectedFunction: string | null = null;

  private readonly top = new Widget();
  private readonly bottom = new Widget();
  private readonly openGraph: GraphOpener;
  private readonly openDiff: DiffOpener;
  /** Why the last requested graph could not be shown, by function. */
  private graphProblems = new Map<string, string>();
  private readonly statusEl: HTMLDivElement;
  private readonly whereEl: HTMLDivElement;
  private readonly functions = new Section('functions', 'Functions');
  private readonly compiles = new Section('recompiles', 'Recompiles');
  private readonly stale = new Section('stale', 'Stale captures');
  private readonly devices = new Section('devices', 'Devices');

  constructor(openGraph: GraphOpener, openDiff: DiffOpener) {
    super();
    this.openGraph = openGraph;
    this.openDiff = openDiff;
    this.id = 'jaxviz-panel';
    this.addClass('jp-jaxviz-panel');
    this.title.icon = jaxvizIcon;
    this.title.caption = 'jaxviz';
    this.title.label = '';

    const head = el('div', 'jp-jaxviz-panel-head');
    head.append(el('span', 'jp-jaxviz-panel-title', 'jaxviz'));
    const refresh = el('button', 'jp-jaxviz-button jp-jaxviz-refresh', 'Refresh');
    refresh.title = 'Ask the kernel for everything again';
    refresh.addEventListener('click', () => this.reconnect());
    head.append(refresh);
    this.whereEl = el('div', 'jp-jaxviz-where');
    this.statusEl = el('div', 'jp-jaxviz-link-status');
    this.top.node.append(head, this.whereEl, this.statusEl, this.functions.node);
    this.top.addClass('jp-jaxviz-panel-top');
    this.bottom.node.append(this.compiles.node, this.stale.node, this.devices.node);
    this.bottom.addClass('jp-jaxviz-panel-bottom');
    this.addWidget(this.top);
    this.addWidget(this.bottom);
    this.setState('no-notebook');
    this.renderAll();
  }

  get linkState(): LinkState {
    return this.state;
  }

  // ------------------------------------------------------------------ binding

  /** Follow a notebook (the current one), or none. */
  setNotebook(nb: NotebookPanel | null): void {
    if (nb === this.notebook) {
      return;
    }
    if (this.notebook) {
      const ctx = this.notebook.sessionContext;
      ctx.kernelChanged.disconnect(this.onKernelChanged, this);
      ctx.statusChanged.disconnect(this.onStatusChanged, this);
      this.notebook.disposed.disconnect(this.onNotebookDisposed, this);
    }
    this.notebook = nb;
    if (nb) {
      const ctx = nb.sessionContext;
      ctx.kernelChanged.connect(this.onKernelChanged, this);
      ctx.statusChanged.connect(this.onStatusChanged, this);
      nb.disposed.connect(this.onNotebookDisposed, this);
      this.setKernel(ctx.session?.kernel ?? null);
    } else {
      this.setKernel(null);
    }
    this.renderWhere();
  }

  private onNotebookDisposed(): void {
    this.setNotebook(null);
  }

  private onKernelChanged(_: ISessionContext, args: { newValue: Kernel.IKernelConnection | null }): void {
    this.setKernel(args.newValue ?? null);
  }

  private onStatusChanged(_: ISessionContext, status: Kernel.Status): void {
    if (status === 'restarting' || status === 'autorestarting' || status === 'dead') {
      if (!this.restarting) {
        this.restarting = true;
        this.dropComm();
        this.store.reset();
        this.hideGraph();
        this.setState('restarting');
        this.scheduleRender();
      }
    } else if (this.restarting && (status === 'idle' || status === 'busy')) {
      this.restarting = false;
      this.reconnect();
    }
    this.renderWhere();
  }

  private setKernel(kernel: Kernel.IKernelConnection | null): void {
    if (kernel === this.kernel) {
      return;
    }
    this.dropComm();
    if (this.kernel && !this.kernel.isDisposed) {
      this.kernel.removeCommTarget(COMM_TARGET, this.onKernelOpensComm);
    }
    this.kernel = kernel;
    this.restarting = false;
    this.store.reset();
    this.hideGraph();
    if (kernel) {
      kernel.registerCommTarget(COMM_TARGET, this.onKernelOpensComm);
      this.openComm();
    } else {
      this.setState(this.notebook ? 'no-kernel' : 'no-notebook');
    }
    this.scheduleRender();
  }

  /** Open a fresh comm on the current kernel and ask for a snapshot. */
  reconnect(): void {
    if (!this.kernel) {
      return;
    }
    this.dropComm();
    this.kernel.registerCommTarget(COMM_TARGET, this.onKernelOpensComm);
    this.openComm();
  }

  private openComm(): void {
    const kernel = this.kernel;
    if (!kernel || kernel.isDisposed) {
      return;
    }
    this.setState('connecting');
    let comm: Kernel.IComm;
    try {
      comm = kernel.createComm(COMM_TARGET);
    } catch (err) {
      console.warn('jaxviz: cannot open a comm', err);
      this.setState('not-loaded');
      return;
    }
    this.adopt(comm);
    comm.open({ type: 'snapshot_request' });
  }

  /** The kernel announced itself (`%load_ext jaxviz` ran after the panel connected). */
  private onKernelOpensComm = (comm: Kernel.IComm, _msg: KernelMessage.ICommOpenMsg): void => {
    if (this.kernel === null || this.restarting) {
      comm.close();
      return;
    }
    this.dropComm();
    this.adopt(comm);
    comm.send({ type: 'snapshot_request' });
  };

  private adopt(comm: Kernel.IComm): void {
    this.comm = comm;
    comm.onMsg = msg => this.onCommMsg(comm, msg);
    comm.onClose = () => {
      if (this.comm === comm) {
        this.comm = null;
        this.store.reset();
        this.hideGraph();
        this.setState(this.restarting ? 'restarting' : 'not-loaded');
        this.scheduleRender();
      }
    };
  }

  private dropComm(): void {
    const comm = this.comm;
    this.comm = null;
    if (comm && !comm.isDisposed) {
      try {
        comm.close();
      } catch {
        // the kernel is gone already
      }
    }
  }

  private onCommMsg(comm: Kernel.IComm, msg: KernelMessage.ICommMsgMsg): void {
    if (comm !== this.comm) {
      return;
    }
    const data = msg.content.data as unknown as { type?: string };
    switch (data.type) {
      case 'snapshot':
        this.store.applySnapshot(data as SnapshotMessage);
        this.setState('connected');
        this.scheduleRender();
        break;
      case 'event':
      case 'events': {
        const events = data.type === 'event' ? [data as EventMessage] : ((data as EventsMessage).events ?? []);
        if (this.state !== 'connected') {
          this.setState('connected');
        }
        let changed = false;
        for (const ev of events) {
          changed = this.store.applyEvent(ev.kind, ev.payload) || changed;
          if (ev.kind === 'program') {
            this.graphProblems.delete((ev.payload as { name?: string })?.name ?? '');
          }
        }
        if (changed) {
          this.scheduleRender();
        }
        break;
      }
      case 'graph': {
        const g = data as GraphMessage;
        if (g.name === this.selectedFunction) {
          if (g.payload) {
            this.graphProblems.delete(g.name);
            this.openGraph(g.name, g.payload);
          } else {
            this.graphProblems.set(g.name, 'the kernel no longer keeps this graph: run its cell again');
            this.scheduleRender();
          }
          this.selectedFunction = null;
        }
        break;
      }
      case 'diff':
        this.openDiff(data as unknown as DiffMessage);
        break;
      default:
        break;
    }
  }

  /** Ask the kernel what a recompile changed in the program; it opens in a tab. */
  requestDiff(name: string, count: number): void {
    this.comm?.send({ type: 'diff_request', function: name, count } as JSONObject);
  }

  private requestGraph(name: string): void {
    this.comm?.send({ type: 'graph_request', name } as JSONObject);
  }

  private hideGraph(): void {
    this.selectedFunction = null;
    this.graphProblems.clear();
  }

  // ------------------------------------------------------------------ rendering

  private setState(state: LinkState): void {
    this.state = state;
    this.node.dataset.jaxvizState = state;
    const messages: { [s in LinkState]: string } = {
      'no-notebook': 'Open a notebook to see what its kernel traced.',
      'no-kernel': 'This notebook has no kernel.',
      connecting: 'Connecting to the kernel…',
      'not-loaded': 'jaxviz is not loaded in this kernel: run %load_ext jaxviz in a cell.',
      restarting: 'The kernel is restarting…',
      connected: ''
    };
    this.statusEl.replaceChildren();
    if (state === 'not-loaded') {
      this.statusEl.append('jaxviz is not loaded in this kernel: run ');
      this.statusEl.append(el('code', '', '%load_ext jaxviz'));
      this.statusEl.append(' in a cell.');
    } else {
      this.statusEl.textContent = messages[state];
    }
    this.statusEl.style.display = state === 'connected' ? 'none' : '';
    this.scheduleRender();
  }

  private renderWhere(): void {
    const nb = this.notebook;
    if (!nb) {
      this.whereEl.textContent = '';
      return;
    }
    const ctx = nb.sessionContext;
    this.whereEl.textContent = `${nb.title.label} · ${ctx.kernelDisplayName} · ${ctx.kernelDisplayStatus}`;
  }

  private scheduleRender(): void {
    if (this.renderTimer || this.isDisposed) {
      return;
    }
    this.renderTimer = window.setTimeout(() => {
      this.renderTimer = 0;
      this.renderAll();
    }, RENDER_DELAY_MS);
  }

  /** Render now (tests and the debounce timer). */
  renderAll(): void {
    this.renderWhere();
    this.renderFunctions();
    this.renderCompiles();
    this.renderStale();
    this.renderDevices();
    this.node.dataset.jaxvizRevision = String(this.store.revision);
  }

  private renderFunctions(): void {
    const { functions: list, cells } = this.store.shownFunctions();
    this.functions.setCount(list.length);
    const body = this.functions.body;
    body.replaceChildren();
    if (!list.length && !cells.length) {
      body.append(el('div', 'jp-jaxviz-empty', this.state === 'connected' ? 'No function traced yet.' : ''));
      return;
    }
    const ul = el('ul', 'jp-jaxviz-list jp-jaxviz-functions');
    for (const f of list.slice(0, 500)) {
      ul.append(this.functionEntry(f));
    }
    body.append(ul);
    if (list.length > 500) {
      body.append(el('div', 'jp-jaxviz-folded', `${list.length - 500} more functions not shown`));
    }
    if (cells.length) {
      // Cell programs compile nothing of their own: their graph is under the cell, and
      // opens in a tab from here.
      const line = el('div', 'jp-jaxviz-folded jp-jaxviz-cells');
      line.append(`cell graph${cells.length === 1 ? '' : 's'}: `);
      cells.slice(0, 50).forEach((f, i) => {
        const name = el('span', 'jp-jaxviz-cell-name', f.name);
        name.dataset.name = f.name;
        if (f.hasGraph) {
          name.classList.add('jp-jaxviz-clickable');
          name.title = 'open its graph in a tab';
          name.addEventListener('click', () => this.selectFunction(f.name));
        } else {
          name.title = noGraphReason(f) ?? '';
        }
        line.append(...(i ? [', ', name] : [name]));
      });
      body.append(line);
    }
  }

  private functionEntry(f: FunctionEntry): HTMLLIElement {
    const li = el('li', 'jp-jaxviz-function');
    li.dataset.name = f.name;
    const row = el('div', 'jp-jaxviz-function-row');
    const name = el('span', 'jp-jaxviz-fn-name', f.name);
    const facts: string[] = [];
    if (f.eqnCount !== null) {
      facts.push(`${f.eqnCount} eqns`);
    }
    if (f.compiles > 0) {
      const re = f.compiles - 1;
      facts.push(`${f.compiles} compile${f.compiles === 1 ? '' : 's'}` + (re ? ` (${re} re)` : ''));
    }
    const meta = el('span', 'jp-jaxviz-fn-meta', facts.join(' · '));
    if (f.compiles > 1) {
      meta.classList.add('jp-jaxviz-warn');
    }
    row.append(name, meta);
    li.append(row);
    if (f.summary) {
      li.title = f.summary;
    }
    const problem = this.graphProblems.get(f.name) ?? noGraphReason(f);
    if (f.hasGraph && !this.graphProblems.has(f.name)) {
      li.classList.add('jp-jaxviz-clickable');
      li.title = `${f.summary ? f.summary + '\n' : ''}click: open its graph in a tab`;
      li.addEventListener('click', () => this.selectFunction(f.name));
    } else if (problem) {
      li.append(el('div', 'jp-jaxviz-detail jp-jaxviz-no-graph', problem));
    }
    return li;
  }

  /** Ask the kernel for a function's graph; it opens in a main-area tab. */
  selectFunction(name: string): void {
    this.selectedFunction = name;
    this.requestGraph(name);
  }

  private renderCompiles(): void {
    const store = this.store;
    // The badge counts recompiles: a function's first compile is not one.
    this.compiles.setCount(store.totals.recompile);
    this.compiles.node.title = `${store.totals.compile} compiles seen, ${store.totals.recompile} of them recompiles`;
    const body = this.compiles.body;
    body.replaceChildren();
    if (!store.compiles.length) {
      body.append(el('div', 'jp-jaxviz-empty', this.state === 'connected' ? 'No compilation seen yet.' : ''));
      return;
    }
    const shown = store.recentCompiles(this.compileLimit);
    const ol = el('ol', 'jp-jaxviz-list jp-jaxviz-timeline');
    for (const c of shown) {
      ol.append(compileEntry(c, (name, count) => this.requestDiff(name, count)));
    }
    body.append(ol);
    const older = store.totals.compile - shown.length;
    if (older > 0) {
      const fold = el('div', 'jp-jaxviz-folded');
      fold.append(`${older} older compilation${older === 1 ? '' : 's'} folded`);
      if (shown.length < store.compiles.length) {
        const more = el('button', 'jp-jaxviz-button jp-jaxviz-more', `show ${PAGE} more`);
        more.addEventListener('click', () => {
          this.compileLimit += PAGE;
          this.renderCompiles();
        });
        fold.append(' ', more);
      } else if (store.droppedCompiles > 0) {
        fold.append(' (dropped from memory)');
      }
      body.append(fold);
    }
  }

  private renderStale(): void {
    const store = this.store;
    this.stale.setCount(store.totals.stale);
    const body = this.stale.body;
    body.replaceChildren();
    if (!store.stale.length) {
      body.append(el('div', 'jp-jaxviz-empty', this.state === 'connected' ? 'No stale capture.' : ''));
      return;
    }
    const ul = el('ul', 'jp-jaxviz-list');
    for (const s of store.recentStale(PAGE)) {
      ul.append(staleEntry(s));
    }
    body.append(ul);
    const older = store.totals.stale - Math.min(PAGE, store.stale.length);
    if (older > 0) {
      body.append(el('div', 'jp-jaxviz-folded', `${older} older warnings folded`));
    }
  }

  private renderDevices(): void {
    const store = this.store;
    this.devices.setCount(store.devices.length);
    const body = this.devices.body;
    body.replaceChildren();
    if (!store.devices.length) {
      body.append(el('div', 'jp-jaxviz-empty', store.devicesNote ?? ''));
      return;
    }
    const ul = el('ul', 'jp-jaxviz-list jp-jaxviz-devices');
    for (const d of store.devices) {
      const li = el('li', 'jp-jaxviz-device');
      li.append(el('span', 'jp-jaxviz-fn-name', `${d.platform}:${d.id}`), ' ', el('span', 'jp-jaxviz-fn-meta', d.kind));
      const mem = d.memory;
      if (mem) {
        const used = mem.bytes_in_use;
        const limit = mem.bytes_limit;
        const peak = mem.peak_bytes_in_use;
        const parts: string[] = [];
        if (used !== undefined) {
          parts.push(`${formatBytes(used)} in use`);
        }
        if (limit !== undefined) {
          parts.push(`of ${formatBytes(limit)}`);
        }
        if (peak !== undefined) {
          parts.push(`(peak ${formatBytes(peak)})`);
        }
        li.append(el('div', 'jp-jaxviz-detail', `memory: ${parts.join(' ')}`));
      } else {
        li.append(el('div', 'jp-jaxviz-detail', 'memory: not reported'));
      }
      ul.append(li);
    }
    body.append(ul);
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    window.clearTimeout(this.renderTimer);
    this.setNotebook(null);
    super.dispose();
  }
}

/** Text with `code` spans as <code> (textContent only: safe). */
function richText(className: string, text: string): HTMLDivElement {
  const d = el('div', className);
  for (const part of codeSpans(text)) {
    d.append(part.code ? el('code', '', part.text) : part.text);
  }
  return d;
}

/** A compile: one head line, one line per cause; the message, the suggested fix, the
 * call site and the timings on demand (a disclosure). */
function compileEntry(c: CompileEvent, diff: (name: string, count: number) => void): HTMLLIElement {
  const li = el('li', 'jp-jaxviz-compile');
  if (isWarning(c)) {
    li.classList.add('jp-jaxviz-warning');
  }
  li.dataset.function = c.function;
  const head = el('div', 'jp-jaxviz-compile-head');
  head.append(el('span', 'jp-jaxviz-fn-name', c.function));
  const facts: string[] = [];
  if (c.count !== undefined && c.count !== null) {
    facts.push(c.count > 1 ? `recompile #${c.count - 1}` : 'first compile');
  }
  const total = c.durations
    ? Object.values(c.durations).reduce<number>((a, b) => a + (typeof b === 'number' ? b : 0), 0)
    : 0;
  if (total > 0) {
    facts.push(formatSeconds(total));
  }
  if (c.time) {
    facts.push(new Date(c.time * 1000).toLocaleTimeString());
  }
  head.append(' ', el('span', 'jp-jaxviz-fn-meta', facts.join(' · ')));
  if (c.count && c.count > 1) {
    const button = el('button', 'jp-jaxviz-button jp-jaxviz-diff', 'diff');
    button.title = 'What this recompile changed in the program, against the compile before it';
    const count = c.count;
    button.addEventListener('click', event => {
      event.stopPropagation();
      diff(c.function, count);
    });
    head.append(' ', button);
  }
  li.append(head);
  const causes = (c.causes ?? []).filter(x => x.kind !== 'first_call' || !isWarning(c));
  if (causes.length && isWarning(c)) {
    const ul = el('ul', 'jp-jaxviz-causes');
    for (const cause of causes) {
      const item = el('li', 'jp-jaxviz-cause');
      item.dataset.kind = cause.kind;
      if (cause.text) {
        item.title = cause.text;
      }
      item.append(el('span', 'jp-jaxviz-cause-kind', cause.kind.replace(/_/g, ' ')), ' ');
      const hasBefore = cause.before !== null && cause.before !== undefined;
      const after = shortValue(cause.after);
      if (hasBefore) {
        item.append(el('code', '', cause.path), ': ', el('code', '', shortValue(cause.before)), ' → ', el('code', '', after));
      } else if (after) {
        item.append(el('code', '', after));
      } else {
        item.append(el('code', '', cause.path));
      }
      ul.append(item);
    }
    li.append(ul);
  }
  const details: HTMLElement[] = [];
  if (c.message) {
    details.push(richText('jp-jaxviz-message', c.message));
  }
  if (c.suggestion) {
    details.push(richText('jp-jaxviz-suggestion', c.suggestion));
  }
  if (c.call_site) {
    details.push(richText('jp-jaxviz-detail', `called at ${c.call_site}`));
  }
  if (c.durations) {
    const parts = Object.entries(c.durations)
      .filter(([, v]) => typeof v === 'number')
      .map(([k, v]) => `${k} ${formatSeconds(v as number)}`);
    if (parts.length) {
      details.push(el('div', 'jp-jaxviz-detail', parts.join(' · ')));
    }
  }
  if (details.length) {
    const more = el('details', 'jp-jaxviz-compile-details');
    more.append(el('summary', '', c.suggestion ? 'why, and a fix' : 'details'), ...details);
    li.append(more);
  }
  return li;
}

function staleEntry(s: StaleEvent): HTMLLIElement {
  const li = el('li', 'jp-jaxviz-stale jp-jaxviz-warning');
  const head = el('div', 'jp-jaxviz-compile-head');
  head.append(el('code', 'jp-jaxviz-fn-name', s.name));
  if (s.function) {
    head.append(' ', el('span', 'jp-jaxviz-fn-meta', `in ${s.function}`));
  }
  li.append(head);
  const baked = shortValue(s.baked);
  const current = shortValue(s.current);
  if (baked || current) {
    const d = el('div', 'jp-jaxviz-detail');
    d.append('baked in: ', el('code', '', baked), ' · now: ', el('code', '', current));
    li.append(d);
  }
  if (s.message) {
    li.append(richText('jp-jaxviz-message', s.message));
  }
  return li;
}
