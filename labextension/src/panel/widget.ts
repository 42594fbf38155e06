/**
 * The jaxviz sidebar panel, bound to the current notebook's kernel: Functions,
 * Recompiles, Stale captures, Devices. The view of a `PanelModel` (`model.ts`: the
 * comm, the link state, the store): it renders what changed when the model signals,
 * a section at a time, and new compiles and stale warnings are added to their lists
 * rather than the lists drawn again.
 */

import { NotebookPanel } from '@jupyterlab/notebook';
import { LabIcon } from '@jupyterlab/ui-components';
import { Panel, Widget } from '@lumino/widgets';

import { codeSpans, formatBytes, formatSeconds, shortValue } from '../shared/format';
import { CompileEvent, DiffMessage, ShippedPayload, StaleEvent } from '../shared/payload';
import { GraphReply, LinkState, PanelModel } from './model';
import { FunctionEntry, PanelStore, isWarning, noGraphReason } from './store';
import { ICON_COLOR } from '../shared/visual';

export type { LinkState } from './model';

/** Shows a function's graph where there is room to read it (a main-area tab). */
export type GraphOpener = (name: string, payload: ShippedPayload) => void;
/** Shows what a recompile changed in the program (the kernel's answer to a diff request). */
export type DiffOpener = (diff: DiffMessage) => void;

const PAGE = 100; // entries shown per "show more"
const RENDER_DELAY_MS = 60; // events arriving within this are rendered together

const ICON_SVG = `<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16" viewBox="0 0 16 16">
<g class="jp-icon3" fill="${ICON_COLOR}">
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

  constructor(
    readonly name: string,
    title: string
  ) {
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

/** What the link states say in the panel ('not-loaded' has a code span: see `renderState`). */
const STATE_TEXT: { [s in LinkState]: string } = {
  'no-notebook': 'Open a notebook to see what its kernel traced.',
  'no-kernel': 'This notebook has no kernel.',
  connecting: 'Connecting to the kernel…',
  'not-loaded': 'jaxviz is not loaded in this kernel: run %load_ext jaxviz in a cell.',
  restarting: 'The kernel is restarting…',
  connected: ''
};

/**
 * A list shown newest first, at most `limit` long: entries that arrived since the last
 * render are put at its top (the oldest shown drop off its end); it is drawn again only
 * when everything changed (a new snapshot, another kernel) or the limit did.
 */
class NewestFirstList<T> {
  readonly node: HTMLElement;
  private epoch = -1;
  private total = 0;
  private limit = 0;

  constructor(
    tag: 'ol' | 'ul',
    className: string,
    private readonly entry: (item: T) => HTMLElement
  ) {
    this.node = el(tag, className);
  }

  /** Show `shown` (newest first, the newest `limit` of `total` seen in `epoch`). */
  update(shown: T[], total: number, epoch: number, limit: number): void {
    const added = total - this.total;
    const sameList = epoch === this.epoch && limit === this.limit && added >= 0;
    if (sameList && added <= shown.length && this.node.childElementCount + added >= shown.length) {
      this.node.prepend(...shown.slice(0, added).map(this.entry));
      while (this.node.childElementCount > shown.length) {
        this.node.lastElementChild!.remove();
      }
    } else {
      this.node.replaceChildren(...shown.map(this.entry));
    }
    this.epoch = epoch;
    this.total = total;
    this.limit = limit;
  }
}

export class JaxvizPanel extends Panel {
  readonly model = new PanelModel();
  private renderTimer = 0;
  private compileLimit = PAGE;
  /** What each section showed when last rendered (see `sectionKeys`). */
  private rendered = { functions: '', compiles: '', stale: '', devices: '' };

  private readonly top = new Widget();
  private readonly bottom = new Widget();
  private readonly statusEl: HTMLDivElement;
  private readonly whereEl: HTMLDivElement;
  private readonly functions = new Section('functions', 'Functions');
  private readonly compiles = new Section('recompiles', 'Recompiles');
  private readonly stale = new Section('stale', 'Stale captures');
  private readonly devices = new Section('devices', 'Devices');
  private readonly compileList = new NewestFirstList<CompileEvent>('ol', 'jp-jaxviz-list jp-jaxviz-timeline', c =>
    compileEntry(c, (name, count) => this.model.requestDiff(name, count))
  );
  private readonly staleList = new NewestFirstList<StaleEvent>('ul', 'jp-jaxviz-list', staleEntry);

  constructor(
    private readonly openGraph: GraphOpener,
    private readonly openDiff: DiffOpener
  ) {
    super();
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

    const model = this.model;
    model.stateChanged.connect(this.onStateChanged, this);
    model.changed.connect(this.scheduleRender, this);
    model.whereChanged.connect(this.renderWhere, this);
    model.graphReceived.connect(this.onGraph, this);
    model.diffReceived.connect((_, diff) => this.openDiff(diff));
    this.renderState();
    this.renderAll();
  }

  /** The store of what the kernel reported (the model's). */
  get store(): PanelStore {
    return this.model.store;
  }

  get linkState(): LinkState {
    return this.model.state;
  }

  /** Follow a notebook (the current one), or none. */
  setNotebook(nb: NotebookPanel | null): void {
    this.model.setNotebook(nb);
  }

  /** Open a fresh comm on the current kernel and ask for a snapshot. */
  reconnect(): void {
    this.model.reconnect();
  }

  /** Ask the kernel what a recompile changed in the program; it opens in a tab. */
  requestDiff(name: string, count: number): void {
    this.model.requestDiff(name, count);
  }

  /** Ask the kernel for a function's graph; it opens in a main-area tab. */
  selectFunction(name: string): void {
    this.model.selectFunction(name);
  }

  private onGraph(_: PanelModel, reply: GraphReply): void {
    this.openGraph(reply.name, reply.payload);
  }

  private onStateChanged(): void {
    this.renderState();
    this.scheduleRender(); // the empty sections' wording depends on the state
  }

  // ------------------------------------------------------------------ rendering

  private renderState(): void {
    const state = this.model.state;
    this.node.dataset.jaxvizState = state;
    this.statusEl.replaceChildren();
    if (state === 'not-loaded') {
      this.statusEl.append('jaxviz is not loaded in this kernel: run ');
      this.statusEl.append(el('code', '', '%load_ext jaxviz'));
      this.statusEl.append(' in a cell.');
    } else {
      this.statusEl.textContent = STATE_TEXT[state];
    }
    this.statusEl.style.display = state === 'connected' ? 'none' : '';
  }

  private renderWhere(): void {
    const where = this.model.where;
    this.whereEl.textContent = where ? `${where.notebook} · ${where.kernel} · ${where.status}` : '';
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

  /** What each section shows depends on: a section is drawn again when its key changed. */
  private sectionKeys(): { [section in keyof JaxvizPanel['rendered']]: string } {
    const { revisions, epoch } = this.model.store;
    const state = this.model.state;
    return {
      functions: `${state}:${epoch}:${revisions.functions}:${this.model.problemsRevision}`,
      compiles: `${state}:${epoch}:${revisions.compiles}:${this.compileLimit}`,
      stale: `${state}:${epoch}:${revisions.stale}`,
      devices: `${epoch}:${revisions.devices}`
    };
  }

  /** Render what changed now (tests and the debounce timer). */
  renderAll(): void {
    this.renderWhere();
    const keys = this.sectionKeys();
    const renderers = {
      functions: () => this.renderFunctions(),
      compiles: () => this.renderCompiles(),
      stale: () => this.renderStale(),
      devices: () => this.renderDevices()
    };
    for (const section of Object.keys(renderers) as (keyof typeof renderers)[]) {
      if (keys[section] !== this.rendered[section]) {
        this.rendered[section] = keys[section];
        renderers[section]();
      }
    }
    this.node.dataset.jaxvizRevision = String(this.store.revision);
  }

  private emptyText(text: string): HTMLDivElement {
    return el('div', 'jp-jaxviz-empty', this.model.state === 'connected' ? text : '');
  }

  private renderFunctions(): void {
    const { functions: list, cells } = this.store.shownFunctions();
    this.functions.setCount(list.length);
    const body = this.functions.body;
    body.replaceChildren();
    if (!list.length && !cells.length) {
      body.append(this.emptyText('No function traced yet.'));
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
    const refused = this.model.graphProblem(f.name);
    const problem = refused ?? noGraphReason(f);
    if (f.hasGraph && refused === undefined) {
      li.classList.add('jp-jaxviz-clickable');
      li.title = `${f.summary ? f.summary + '\n' : ''}click: open its graph in a tab`;
      li.addEventListener('click', () => this.selectFunction(f.name));
    } else if (problem) {
      li.append(el('div', 'jp-jaxviz-detail jp-jaxviz-no-graph', problem));
    }
    return li;
  }

  private renderCompiles(): void {
    const store = this.store;
    // The badge counts recompiles: a function's first compile is not one.
    this.compiles.setCount(store.totals.recompile);
    this.compiles.node.title = `${store.totals.compile} compiles seen, ${store.totals.recompile} of them recompiles`;
    const body = this.compiles.body;
    if (!store.compiles.length) {
      body.replaceChildren(this.emptyText('No compilation seen yet.'));
      return;
    }
    const shown = store.recentCompiles(this.compileLimit);
    this.compileList.update(shown, store.totals.compile, store.epoch, this.compileLimit);
    const parts: HTMLElement[] = [this.compileList.node];
    const older = store.totals.compile - shown.length;
    if (older > 0) {
      const fold = el('div', 'jp-jaxviz-folded');
      fold.append(`${older} older compilation${older === 1 ? '' : 's'} folded`);
      if (shown.length < store.compiles.length) {
        const more = el('button', 'jp-jaxviz-button jp-jaxviz-more', `show ${PAGE} more`);
        more.addEventListener('click', () => {
          this.compileLimit += PAGE;
          this.renderAll();
        });
        fold.append(' ', more);
      } else if (store.droppedCompiles > 0) {
        fold.append(' (dropped from memory)');
      }
      parts.push(fold);
    }
    body.replaceChildren(...parts);
  }

  private renderStale(): void {
    const store = this.store;
    this.stale.setCount(store.totals.stale);
    const body = this.stale.body;
    if (!store.stale.length) {
      body.replaceChildren(this.emptyText('No stale capture.'));
      return;
    }
    this.staleList.update(store.recentStale(PAGE), store.totals.stale, store.epoch, PAGE);
    const parts: HTMLElement[] = [this.staleList.node];
    const older = store.totals.stale - Math.min(PAGE, store.stale.length);
    if (older > 0) {
      parts.push(el('div', 'jp-jaxviz-folded', `${older} older warnings folded`));
    }
    body.replaceChildren(...parts);
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
    this.model.dispose();
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
  li.append(compileHead(c, diff));
  const causes = (c.causes ?? []).filter(x => x.kind !== 'first_call' || !isWarning(c));
  if (causes.length && isWarning(c)) {
    const ul = el('ul', 'jp-jaxviz-causes');
    ul.append(...causes.map(causeItem));
    li.append(ul);
  }
  const details = compileDetails(c);
  if (details.length) {
    const more = el('details', 'jp-jaxviz-compile-details');
    more.append(el('summary', '', c.suggestion ? 'why, and a fix' : 'details'), ...details);
    li.append(more);
  }
  return li;
}

/** The function's name, which compile this is, its time, and a diff button for a recompile. */
function compileHead(c: CompileEvent, diff: (name: string, count: number) => void): HTMLDivElement {
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
  return head;
}

/** One cause of a recompile: its kind, and what changed (before → after). */
function causeItem(cause: NonNullable<CompileEvent['causes']>[number]): HTMLLIElement {
  const item = el('li', 'jp-jaxviz-cause');
  item.dataset.kind = cause.kind;
  if (cause.text) {
    item.title = cause.text;
  }
  item.append(el('span', 'jp-jaxviz-cause-kind', cause.kind.replace(/_/g, ' ')), ' ');
  const hasBefore = cause.before !== null && cause.before !== undefined;
  const after = shortValue(cause.after);
  if (hasBefore) {
    item.append(
      el('code', '', cause.path),
      ': ',
      el('code', '', shortValue(cause.before)),
      ' → ',
      el('code', '', after)
    );
  } else if (after) {
    item.append(el('code', '', after));
  } else {
    item.append(el('code', '', cause.path));
  }
  return item;
}

/** The message, the suggested fix, the call site and the timings of a compile. */
function compileDetails(c: CompileEvent): HTMLElement[] {
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
  return details;
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
