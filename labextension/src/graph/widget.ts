/**
 * The interactive graph: a view of the program's graph model laid out by Graphviz
 * (WebAssembly) in the browser. The widget of a `GraphModel` (`model.ts`: the
 * program, the open groups, the kept drawings, the search, the zoom and pan), which it
 * renders as the model signals. Click a collapsed group to expand it, the label of
 * an expanded group to collapse it; only the visible part is laid out again.
 * Hover for details, drag to pan, ctrl/⌘+wheel or the buttons to zoom, search by
 * primitive or variable name, export what is shown as SVG or DOT.
 *
 * The widget lays out and wires; the parts are their own modules: what an expand does
 * to the drawing (`expand.ts`), opening and closing in place (`inplace.ts`), the zoom and
 * pan on screen (`viewport.ts`, `pan.ts`), the search box (`search.ts`), the tooltips
 * (`hover.ts`, `tooltip.ts`), the legend, the status line and the test report.
 */

import type { Message } from '@lumino/messaging';
import { Signal } from '@lumino/signaling';
import { Widget } from '@lumino/widgets';

import { ProgramPayload, inflatePayload, payloadProblem } from '../shared/payload';
import { button, download, el } from './dom';
import { viewToDot } from './dot';
import { Arranged, ExpandPlan, ReopenMemory, levelBelow, planExpand } from './expand';
import { firstView, prefersSideways } from './geometry';
import { parseSvg } from './layout';
import { Pan } from './pan';
import { SearchBox } from './search';
import { drawingTip, hoverScene, sceneHit } from './hover';
import { closeInPlace, openInPlace, prefetchOpenings, svgOf } from './inplace';
import { LaidScene } from './layoutserver';
import { layouter, layoutMode, layoutView } from './layoutsvg';
import { renderLegend } from './legend';
import { GraphModel, RankDir } from './model';
import { initialExpansion } from './persist';
import { addSceneHooks, reportShown } from './report';
import { Scene, sceneOf } from './scene';
import { LaidView, SceneStore, layOutAhead, layOutHovered } from './sceneahead';
import { SceneCanvas } from './scenecanvas';
import { sceneSvg } from './scenesvg';
import { StatusLine, drawnText, layingOutText, sceneText, tooManyText } from './status';
import { Glider, exportedSvg, itemRects, prepareSvg, svgSizePx } from './svgdrawing';
import { Tooltip } from './tooltip';
import { Placement, Viewport } from './viewport';
import { GraphIndex, View, VisibleEdge, buildView, parseItem, visibleItems } from './visible';

/** Views with more visible items than this are not laid out (collapse instead). */
export const MAX_LAYOUT_ITEMS = 100000;
/** Views with more visible items than this are laid out by the layered layout and drawn
 * on a canvas (`layered.ts`, `scenecanvas.ts`); up to it, by Graphviz as SVG, whose
 * drawings are tidier but whose time grows faster than the items (see
 * `benchmarks/bench_browser.py`). */
export const GRAPHVIZ_MAX_ITEMS = 500;
/** How long the pointer rests on a box before what opening it shows is laid out (ms). */
const HOVER_AHEAD_MS = 80;

export interface GraphViewOptions {
  /** Smaller canvas, for the sidebar. */
  compact?: boolean;
  /** The canvas fills the widget's height (a main-area tab). */
  fill?: boolean;
}

/** How `setExpanded` shows a new state (see there). */
export interface ExpandOptions extends Placement {
  fresh?: boolean;
}

/** A Graphviz drawing ready to go on screen. */
interface Laid {
  svg: SVGSVGElement;
  text: string;
  dot: string;
  arranged: Arranged;
}

export class GraphView extends Widget {
  private readonly titleEl = el('span', 'jp-jaxviz-title');
  private readonly summaryEl = el('span', 'jp-jaxviz-summary');
  private readonly legendEl = el('div', 'jp-jaxviz-legend');
  private readonly canvas = el('div', 'jp-jaxviz-canvas');
  private readonly stage = el('div', 'jp-jaxviz-stage');
  private readonly progressEl = el('div', 'jp-jaxviz-progress');
  private readonly status = new StatusLine(el('div', 'jp-jaxviz-status'));
  private readonly tooltip = new Tooltip();
  private readonly viewport: Viewport;
  private readonly search: SearchBox;
  private readonly glider = new Glider(this.node);

  /** What is shown: the program, its open groups, kept drawings, search, zoom and pan. */
  readonly model = new GraphModel();
  private svg: SVGSVGElement | null = null;
  /** The canvas drawing of a view too big for Graphviz (then `svg` is null). */
  private scene: SceneCanvas | null = null;
  private renderToken = 0;
  /** The box the pointer is on (-1: none), and the wait before laying out its opening. */
  private hovered = -1;
  private hoverTimer = 0;
  private readonly reopen = new ReopenMemory();
  /** Canvas views shown lately, and those laid out ahead of a click on a box in view. */
  private readonly scenes = new SceneStore();
  private readonly pan = new Pan(this.canvas, this.model, () => this.tooltip.hide());
  /** Resolved when the current layout is on screen (for tests and callers). */
  ready: Promise<void> = Promise.resolve();

  constructor(options: GraphViewOptions = {}) {
    super();
    const compact = !!options.compact;
    const fill = !!options.fill;
    this.addClass('jp-jaxviz-graph');
    this.node.classList.toggle('jp-jaxviz-compact', compact);
    this.node.classList.toggle('jp-jaxviz-fill', fill);
    const { canvas, stage, model } = this;
    this.viewport = new Viewport({
      node: this.node,
      canvas,
      stage,
      model,
      fill,
      compact,
      drawing: () => ({ svg: this.svg, scene: this.scene })
    });
    this.search = new SearchBox({
      node: this.node,
      model,
      drawing: () => ({ svg: this.svg, scene: this.scene }),
      pageRect: id => this.viewport.pageRect(id),
      reveal: (next, anchor) => this.setExpanded(next, { anchor })
    });
    const header = el('div', 'jp-jaxviz-header');
    header.append(this.titleEl, this.summaryEl);
    this.canvas.appendChild(this.stage);
    this.progressEl.appendChild(el('div', 'jp-jaxviz-progress-bar'));
    this.canvas.appendChild(this.progressEl);
    new ResizeObserver(() => this.scene?.setTransform(this.model.transform)).observe(this.canvas);
    // The tooltip lives on the page's body, fixed to the viewport: no output or canvas
    // edge cuts it off.
    this.node.append(header, this.toolbar(), this.legendEl, this.canvas, this.status.element);
    this.listen();
  }

  /** The search box, the match count and the buttons. */
  private toolbar(): HTMLDivElement {
    const bar = el('div', 'jp-jaxviz-toolbar');
    bar.append(
      this.search.input,
      this.search.matchInfo,
      el('span', 'jp-jaxviz-spacer'),
      button(
        'Collapse all',
        'Show only the top level',
        () => void this.setExpanded(this.index ? this.reopen.collapsedAll(this.index) : undefined, { fresh: true })
      ),
      button('Expand level', 'Open one more level of groups', () => void this.expandLevel()),
      button('−', 'Zoom out', () => this.zoomBy(1 / 1.25), 'jp-jaxviz-zoom-out'),
      button('+', 'Zoom in', () => this.zoomBy(1.25), 'jp-jaxviz-zoom-in'),
      button('Fit', 'Fit the graph in view', () => this.fit(), 'jp-jaxviz-fit'),
      button(
        'Tidy layout',
        'Lay out what is shown afresh (Graphviz): tidier after many groups were opened, but items move',
        () => void this.setExpanded(this.expanded, { fresh: true }),
        'jp-jaxviz-tidy'
      ),
      button('SVG', 'Export what is shown as SVG', () => this.exportSvg(), 'jp-jaxviz-export-svg'),
      button('DOT', 'Export what is shown as Graphviz DOT', () => this.exportDot(), 'jp-jaxviz-export-dot')
    );
    return bar;
  }

  /** The canvas's pointer and wheel, and the model's signals. */
  private listen(): void {
    const canvas = this.canvas;
    canvas.addEventListener('click', ev => this.onClick(ev));
    canvas.addEventListener('mousemove', ev => this.onHover(ev));
    canvas.addEventListener('mouseleave', () => {
      this.tooltip.hide();
      this.aheadOfClick(-1);
    });
    canvas.addEventListener('wheel', ev => this.onWheel(ev), { passive: false });
    this.model.payloadChanged.connect(this.renderHeader, this);
    this.model.transformChanged.connect(() => this.viewport.applyTransform());
    this.model.searchChanged.connect(() => this.search.mark());
  }

  // Shorthands for what the model holds.
  private get index(): GraphIndex | null {
    return this.model.index;
  }

  private get expanded(): Set<number> {
    return this.model.expanded;
  }

  /** The DOT source of what is shown. */
  get dotSource(): string {
    return this.model.dot;
  }

  /** The visible edges of what is shown. */
  get visibleEdges(): VisibleEdge[] {
    return this.model.view?.edges ?? [];
  }

  get expandedGroups(): number[] {
    return [...this.expanded].sort((a, b) => a - b);
  }

  /** Show a program payload (the MIME data). `metadata`: the output's metadata, whose
   * stored expansion state (see `persist.ts`), when valid for this graph, is shown
   * instead of the kernel's `expanded`. */
  setPayload(data: unknown, metadata?: unknown): Promise<void> {
    this.ready = inflatePayload(data).then(
      inflated => this.applyPayload(inflated, metadata),
      err => this.showError(`jaxviz cannot read this output: ${err}.`)
    );
    return this.ready;
  }

  private applyPayload(data: unknown, metadata: unknown): Promise<void> {
    const problem = payloadProblem(data);
    if (problem) {
      this.model.load(null);
      this.showError(`jaxviz cannot show this output: ${problem}.`);
      this.ready = Promise.resolve();
      return this.ready;
    }
    const payload = data as ProgramPayload;
    this.viewport.shownOnce = false;
    this.model.load(payload);
    const { expanded } = initialExpansion(this.model.index!, payload.expanded, metadata, MAX_LAYOUT_ITEMS);
    this.ready = this.setExpanded(expanded, { fit: true, initial: true });
    return this.ready;
  }

  /** The program's title, summary and legend (nothing: `showError` says why). */
  private renderHeader(_: GraphModel, payload: ProgramPayload | null): void {
    if (!payload) {
      return;
    }
    this.titleEl.textContent = this.displayName(payload.name);
    this.summaryEl.textContent = payload.summary ?? '';
    renderLegend(this.legendEl, payload.graph);
  }

  /** The title shown for a program of this name (subclasses: the cell's current prompt). */
  protected displayName(name: string): string {
    return name;
  }

  /** Show the title again (the name may read differently now). */
  protected refreshTitle(): void {
    const payload = this.model.payload;
    if (payload) {
      this.titleEl.textContent = this.displayName(payload.name);
    }
  }

  /** The graph shown, and the kernel's initial expansion of it (null before a payload). */
  protected get shown(): { index: GraphIndex; kernelExpanded: number[] | undefined } | null {
    const { index, payload } = this.model;
    return index && payload ? { index, kernelExpanded: payload.expanded } : null;
  }

  /** Called when a new expansion state is on screen, but for the initial one (and
   * those applied with `initial`): for subclasses that keep the state. */
  protected expansionChanged(_expanded: Set<number>): void {
    // nothing here
  }

  /** Called when a layout is on screen (subclasses: release a held height). */
  protected laidOut(): void {
    // nothing here
  }

  // ------------------------------------------------------------------ layout

  /**
   * Change the expansion state and show it. Groups opened since a drawing that is kept
   * are opened in place in it (the rest of the drawing keeps its place, see
   * `splicesvg.ts`); a state shown before comes back as it was; the first view, `fresh`
   * (Tidy layout, Expand level, Collapse all) and what cannot be reached by opening
   * groups are laid out afresh by Graphviz (`expand.ts` decides which).
   */
  async setExpanded(expanded: Set<number> | undefined, opts: ExpandOptions = {}): Promise<void> {
    const index = this.index;
    if (!index || !expanded) {
      return;
    }
    const kept = this.keptScene(index, expanded, opts);
    if (kept) {
      return this.putScene(kept, opts, ++this.renderToken, performance.now());
    }
    if (await this.putSceneUnderWay(index, expanded, opts)) {
      return;
    }
    const view = buildView(index, expanded);
    const { nodes, groups } = visibleItems(view);
    const count = nodes.length + groups.length;
    if (count > MAX_LAYOUT_ITEMS) {
      this.status.set(tooManyText(count, MAX_LAYOUT_ITEMS), true);
      return;
    }
    const token = ++this.renderToken;
    if (opts.initial) {
      this.reopen.clear(); // group ids of another program
    }
    if (count > GRAPHVIZ_MAX_ITEMS) {
      return this.showScene(view, count, token, opts);
    }
    this.node.classList.add('jp-jaxviz-busy');
    this.status.set(layingOutText(count));
    const t0 = performance.now();
    const laid = await this.layOut(index, view, token, opts);
    if (!laid || token !== this.renderToken) {
      return; // failed, or a newer layout was requested meanwhile
    }
    this.keepDrawing(view, laid.text, opts);
    const ms = performance.now() - t0;
    const before = opts.initial ? null : itemRects(this.svg);
    this.model.show(view, laid.dot);
    this.install(laid.svg);
    this.shownNow(count, layoutMode() ?? '', laid.arranged);
    this.viewport.place(opts, laid.arranged !== 'layout', index);
    if (before) {
      this.glider.glide(this.svg, before, this.model.transform.scale);
    }
    this.finish(opts, drawnText(view, laid.arranged, ms));
    const svg = this.svg;
    if (svg) {
      const shown = { index, expanded: this.expanded, text: laid.text, rankdir: this.model.rankdir };
      prefetchOpenings(svg, this.canvas.getBoundingClientRect(), shown, () => this.isCurrent(token));
    }
  }

  /** The canvas view of this state, shown lately or laid out ahead (not for a first view,
   * nor when asked afresh). */
  private keptScene(index: GraphIndex, expanded: Set<number>, opts: ExpandOptions): LaidView | undefined {
    if (opts.initial) {
      this.scenes.clear(); // another program, or its state stored in the notebook
    }
    return opts.fresh || opts.initial ? undefined : this.scenes.get(index, expanded, this.model.rankdir);
  }

  /** Put the canvas view of this state on screen once its layout ahead is done, where
   * one is under way (not for a first view, nor when asked afresh): whether it did (or
   * a newer request came meanwhile). */
  private async putSceneUnderWay(index: GraphIndex, expanded: Set<number>, opts: ExpandOptions): Promise<boolean> {
    const coming = opts.fresh || opts.initial ? undefined : this.scenes.underWay(index, expanded, this.model.rankdir);
    if (!coming) {
      return false;
    }
    const token = ++this.renderToken;
    const t0 = performance.now();
    this.node.classList.add('jp-jaxviz-busy');
    const entry = await coming;
    if (token !== this.renderToken) {
      return true;
    }
    if (entry?.view.index !== index) {
      this.node.classList.remove('jp-jaxviz-busy');
      return false;
    }
    this.putScene(entry, opts, token, t0);
    return true;
  }

  /** The Graphviz drawing of `view`, as `expand.ts` plans it (null: failed, said in the
   * status line, or outdated). */
  private async layOut(index: GraphIndex, view: View, token: number, opts: ExpandOptions): Promise<Laid | null> {
    const plan = planExpand(this.model.drawings, index, this.expanded, view.expanded, !!(opts.initial || opts.fresh));
    const dot = viewToDot(view, { rankdir: this.model.rankdir });
    let laid: Laid;
    try {
      const { text, arranged } = await this.arrange(plan, index, dot, token);
      if (token !== this.renderToken) {
        return null;
      }
      // A drawing opened or closed in place was parsed already: copied, not parsed again.
      if (text !== undefined) {
        laid = { svg: svgOf(text), text, dot, arranged };
      } else {
        const fresh = await layoutView(view, this.model.rankdir);
        laid = { svg: parseSvg(fresh.text), text: fresh.text, dot: fresh.dot, arranged };
      }
    } catch (err) {
      if (token === this.renderToken) {
        this.node.classList.remove('jp-jaxviz-busy');
        this.status.set(`Graphviz failed: ${(err as Error).message ?? err}`, true);
      }
      return null;
    }
    if (token !== this.renderToken) {
      return null;
    }
    return opts.initial && this.model.rankdir === 'TB' ? this.sidewaysIfTall(view, laid, token) : laid;
  }

  /** The drawing the plan brings: kept, opened or closed in place (undefined text: laid
   * out afresh, also when opening or closing in place failed). */
  private async arrange(
    plan: ExpandPlan,
    index: GraphIndex,
    dot: string,
    token: number
  ): Promise<{ text: string | undefined; arranged: Arranged }> {
    if (plan.kind === 'restore') {
      return { text: plan.text, arranged: 'restore' };
    }
    try {
      if (plan.kind === 'splice') {
        const text = await openInPlace(index, plan.base, this.model.rankdir, () => token === this.renderToken);
        return { text, arranged: 'splice' };
      }
      if (plan.kind === 'close') {
        const shown = this.model.drawings.get(this.expanded);
        return { text: await closeInPlace(shown, plan.gid, dot, this.model.rankdir), arranged: 'close' };
      }
    } catch (err) {
      const what = plan.kind === 'splice' ? 'opening' : 'closing';
      console.warn(`jaxviz: ${what} in place failed, laying out afresh:`, err);
    }
    return { text: undefined, arranged: 'layout' };
  }

  /** A tall, narrow column uses a third of the width: drawn left to right instead, for
   * this graph's every view (the direction never changes while exploring). */
  private async sidewaysIfTall(view: View, laid: Laid, token: number): Promise<Laid | null> {
    if (!this.prefersSideways(svgSizePx(laid.svg))) {
      return laid;
    }
    let result = laid;
    try {
      const sideways = await layoutView(view, 'LR');
      result = { svg: parseSvg(sideways.text), text: sideways.text, dot: sideways.dot, arranged: laid.arranged };
      this.model.drawSideways();
    } catch {
      // keep the top-to-bottom drawing
    }
    return token === this.renderToken ? result : null;
  }

  private prefersSideways(size: { w: number; h: number }): boolean {
    const width = this.viewport.canvasWidth();
    const height = this.viewport.maxCanvasHeight();
    return prefersSideways(size, width, height, firstView(size, width, height).scale);
  }

  /** Keep the drawing of `view` for coming back to it, or opening groups in it. */
  private keepDrawing(view: View, text: string, opts: ExpandOptions): void {
    if (opts.initial || opts.fresh) {
      // Drawings of another payload or direction; after a fresh layout (Tidy layout,
      // Expand level, Collapse all), drawings of the old one: coming back to one of those
      // would move everything. What opens or closes next does so in the new drawing.
      this.model.drawings.clear();
    }
    this.model.drawings.set(view.expanded, text);
  }

  /** The layout is on screen: not busy, and what is shown written on the element. */
  private shownNow(count: number, layout: string, arranged: Arranged | 'ahead', layoutMs?: number): void {
    this.node.classList.remove('jp-jaxviz-busy');
    const { expandedGroups: expanded, model } = this;
    reportShown(this.node, { expanded, items: count, layout, rankdir: model.rankdir, arranged, layoutMs });
  }

  /** What follows every layout on screen: the search marked, the status, the hooks. */
  private finish(opts: ExpandOptions, status: string): void {
    this.search.mark();
    this.status.set(status);
    this.laidOut();
    if (!opts.initial && !this.isDisposed) {
      // After the frame that shows it: storing it changes the output's model, which
      // JupyterLab answers at once (the table of contents reads the output again).
      requestAnimationFrame(() =>
        window.setTimeout(() => !this.isDisposed && this.expansionChanged(new Set(this.expanded)), 0)
      );
    }
  }

  /** Show a view too big for Graphviz: the layered layout (in the worker, with a progress
   * bar), drawn on a canvas; the same zoom, pan, clicks and tooltips as a drawing. */
  private async showScene(view: View, count: number, token: number, opts: Placement): Promise<void> {
    const t0 = performance.now();
    this.node.classList.add('jp-jaxviz-busy');
    this.status.set(layingOutText(count));
    const laid = await this.layOutScene(view, count, token, opts);
    if (!laid || token !== this.renderToken) {
      return;
    }
    this.putScene({ view, scene: laid.scene, laid: laid.laid, count, shown: false, ahead: false }, opts, token, t0);
  }

  /** Put a laid-out view on the canvas (kept for coming back to it), then lay out ahead
   * what opening each box in view would show. `t0`: when it was asked for. */
  private putScene(entry: LaidView, opts: Placement, token: number, t0: number): void {
    const { view, scene, laid, count } = entry;
    const arranged = entry.shown ? 'restore' : entry.ahead ? 'ahead' : 'layout';
    const ms = performance.now() - t0;
    entry.shown = true;
    this.scenes.put(view.index, scene.layout.rankdir, entry);
    // The DOT of a view this big is written when exported (it takes longer than the layout).
    this.model.show(view, '');
    this.installScene(scene, laid);
    this.showProgress(null);
    this.shownNow(count, layoutMode() ?? 'worker', arranged, ms);
    this.viewport.place(opts, false, this.index);
    this.finish(opts, sceneText(view, ms, arranged));
    if (!['off', 'hover'].includes(this.node.dataset.jaxvizAhead ?? '')) {
      this.layOutAhead(view, scene.layout.rankdir, token);
    }
  }

  /** Lay out ahead, while the page is idle, what opening each box in view would show
   * (off where the element says `data-jaxviz-ahead="off"`, or `"hover"`: the box under
   * the pointer only; for the benchmark and the tests). */
  private layOutAhead(view: View, rankdir: RankDir, token: number): void {
    const boxes = (this.scene?.itemsInView() ?? [])
      .filter(([id, kind]) => id[0] === 'g' && kind !== 'inputs' && kind !== 'outputs')
      .map(([id]) => parseItem(id).id);
    const [minItems, maxItems] = [GRAPHVIZ_MAX_ITEMS, MAX_LAYOUT_ITEMS];
    const opening = (gid: number) => this.reopen.wouldOpen(view.index, view.expanded, gid);
    const ahead = { index: view.index, opening, rankdir, boxes, minItems, maxItems };
    layOutAhead(this.scenes, { ...ahead, current: () => this.isCurrent(token) });
  }

  /** The layered layout of `view` (null: failed, said in the status line). */
  private async layOutScene(
    view: View,
    count: number,
    token: number,
    opts: Placement
  ): Promise<{ scene: Scene; laid: LaidScene } | null> {
    const progress = (share: number) => {
      if (token === this.renderToken) {
        this.showProgress(share);
        this.status.set(layingOutText(count, share));
      }
    };
    progress(0);
    try {
      let scene = sceneOf(view, this.model.rankdir);
      let laid = await layouter.layered(scene.layout, progress);
      if (opts.initial && this.model.rankdir === 'TB' && token === this.renderToken) {
        if (this.prefersSideways({ w: laid.layout.width, h: laid.layout.height })) {
          this.model.drawSideways();
          scene = sceneOf(view, 'LR');
          laid = await layouter.layered(scene.layout, progress);
        }
      }
      return { scene, laid };
    } catch (err) {
      if (token === this.renderToken) {
        this.node.classList.remove('jp-jaxviz-busy');
        this.showProgress(null);
        this.status.set(`The layout failed: ${(err as Error).message ?? err}`, true);
      }
      return null;
    }
  }

  /** Put a laid-out scene on the canvas in place of a drawing. */
  private installScene(scene: Scene, { layout, index }: LaidScene): void {
    const canvases = this.scene?.handOver();
    this.scene = null;
    this.stage.replaceChildren();
    this.svg = null;
    const drawn = new SceneCanvas(scene, layout, index, canvases);
    this.scene = drawn;
    this.viewport.size = { w: Math.max(1, layout.width), h: Math.max(1, layout.height) };
    if (!canvases) {
      this.canvas.insertBefore(drawn.element, this.progressEl);
    }
    this.node.dataset.jaxvizRenderer = 'canvas';
    addSceneHooks(drawn, id => this.viewport.scenePageRect(id));
    drawn.setTransform(this.model.transform);
  }

  /** No newer layout was asked for since `token`'s, and the widget is still there. */
  private isCurrent(token: number): boolean {
    return token === this.renderToken && !this.isDisposed;
  }

  private dropScene(): void {
    this.scene?.dispose();
    this.scene = null;
    this.node.dataset.jaxvizRenderer = 'svg';
  }

  private showProgress(share: number | null): void {
    this.progressEl.style.display = share === null ? 'none' : 'block';
    const bar = this.progressEl.firstElementChild as HTMLDivElement;
    bar.style.width = `${Math.round((share ?? 0) * 100)}%`;
  }

  /** Put a fresh Graphviz SVG on the stage, sized in px, without native tooltips. */
  private install(svg: SVGSVGElement): void {
    this.viewport.size = prepareSvg(svg);
    this.dropScene();
    this.stage.replaceChildren(svg);
    this.svg = svg;
  }

  // ------------------------------------------------------------------ zoom/pan

  /** Fit all of the drawing in view (below legible size when it must: the whole
   * structure at a glance), the canvas grown to its largest first. */
  fit(): void {
    this.viewport.fit();
  }

  zoomBy(factor: number, at?: { x: number; y: number }): void {
    this.viewport.zoomBy(factor, at);
  }

  private onWheel(ev: WheelEvent): void {
    if (!(ev.ctrlKey || ev.metaKey)) {
      return; // plain wheel scrolls the notebook
    }
    ev.preventDefault();
    this.zoomBy(ev.deltaY < 0 ? 1.15 : 1 / 1.15, { x: ev.clientX, y: ev.clientY });
  }

  // ------------------------------------------------------------------ clicks

  private onClick(ev: MouseEvent): void {
    if (this.pan.takeClick()) {
      return; // the end of a drag
    }
    const target = ev.target as Element | null;
    if (!this.index || !target) {
      return;
    }
    if (this.scene) {
      this.onSceneClick(ev);
      return;
    }
    const nodeEl = target.closest('g.node');
    if (nodeEl && nodeEl.id.startsWith('g')) {
      this.openBox(parseItem(nodeEl.id).id, nodeEl.getBoundingClientRect());
      return;
    }
    const clusterId = target.closest('.jaxviz-cluster-label')?.getAttribute('data-cluster') ?? '';
    const cluster = clusterId ? this.svg?.getElementById(clusterId) : null;
    if (cluster) {
      this.closeOpenGroup(Number(clusterId.slice('cluster_g'.length)), cluster.getBoundingClientRect());
    }
  }

  /** A click on the canvas: a box opens, an open group's label closes it. */
  private onSceneClick(ev: MouseEvent): void {
    const hit = sceneHit(this.scene, this.canvas, ev);
    if (hit?.kind === 'item' && hit.id.startsWith('g')) {
      this.openBox(parseItem(hit.id).id, this.viewport.scenePageRect(hit.id)!);
    } else if (hit?.kind === 'label') {
      this.closeOpenGroup(hit.gid, this.viewport.scenePageRect(`cluster_g${hit.gid}`)!);
    }
  }

  /** Open the box `gid` drawn at `r`; the open group takes its place on the page. */
  private openBox(gid: number, r: DOMRect): void {
    this.tooltip.hide();
    const next = this.reopen.opened(this.index!, this.expanded, gid);
    void this.setExpanded(next, { anchor: { item: `cluster_g${gid}`, x: r.left, y: r.top } });
  }

  /** Close the open group `gid` drawn at `r`; its box takes its place on the page. */
  private closeOpenGroup(gid: number, r: DOMRect): void {
    this.tooltip.hide();
    const next = this.reopen.closed(this.index!, this.expanded, gid);
    void this.setExpanded(next, { anchor: { item: `g${gid}`, x: r.left, y: r.top } });
  }

  /** Open every collapsed group that is visible now. */
  private async expandLevel(): Promise<void> {
    const index = this.index;
    if (index) {
      await this.setExpanded(levelBelow(index, this.expanded), { fresh: true });
    }
  }

  // ------------------------------------------------------------------ tooltips

  /** The pointer rests on box `gid` (-1: on no box): what opening it shows is laid out
   * now, so that a click on it finds it ready (off with `data-jaxviz-ahead="off"`). */
  private aheadOfClick(gid: number): void {
    if (gid === this.hovered) {
      return;
    }
    this.hovered = gid;
    window.clearTimeout(this.hoverTimer);
    const index = this.index;
    if (gid < 0 || !index || this.node.dataset.jaxvizAhead === 'off' || this.expanded.has(gid)) {
      return;
    }
    const token = this.renderToken;
    const current = () => this.isCurrent(token);
    const expanded = this.expanded;
    const opening = (g: number) => this.reopen.wouldOpen(index, expanded, g);
    const ahead = { index, opening, rankdir: this.model.rankdir, boxes: [], current };
    this.hoverTimer = window.setTimeout(() => {
      if (current()) {
        layOutHovered(this.scenes, { ...ahead, minItems: GRAPHVIZ_MAX_ITEMS, maxItems: MAX_LAYOUT_ITEMS }, gid);
      }
    }, HOVER_AHEAD_MS);
  }

  private onHover(ev: MouseEvent): void {
    if (this.pan.panning || !this.index) {
      return;
    }
    if (this.scene) {
      const hit = hoverScene(this.model, this.scene, this.canvas, this.tooltip, ev);
      this.aheadOfClick(hit?.kind === 'item' && hit.id[0] === 'g' ? parseItem(hit.id).id : -1);
    } else {
      this.tooltip.showOrHide(drawingTip(this.model, ev), ev);
    }
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this.glider.dispose();
    this.tooltip.element.remove();
    Signal.clearData(this.model);
    super.dispose();
  }

  protected onBeforeDetach(msg: Message): void {
    this.tooltip.hide();
    super.onBeforeDetach(msg);
  }

  // ------------------------------------------------------------------ export

  /** The shown graph as a standalone SVG document, in the DOT's own (light) colours
   * whatever JupyterLab's theme. */
  svgText(): string {
    if (this.scene) {
      return sceneSvg(this.scene.scene, this.scene.layout);
    }
    return this.svg ? exportedSvg(this.svg) : '';
  }

  private get fileName(): string {
    return this.model.payload?.name || 'program';
  }

  exportSvg(): void {
    download(this.svgText(), 'image/svg+xml', this.fileName, 'svg');
  }

  exportDot(): void {
    const view = this.model.view;
    const dot = this.model.dot || (view ? viewToDot(view, { rankdir: this.model.rankdir }) : '');
    download(dot, 'text/vnd.graphviz', this.fileName, 'dot');
  }

  // ------------------------------------------------------------------ misc

  /**
   * A graph too big to ship: show the kernel's static drawing instead, as an image (an
   * <img> never runs scripts, so this stays safe in untrusted notebooks).
   */
  showStatic(name: string, reason: string, svg: string | null): void {
    this.showError(`The interactive view is off for this output: ${reason}.`);
    this.titleEl.textContent = name;
    if (svg) {
      const img = document.createElement('img');
      img.className = 'jp-jaxviz-static';
      img.alt = `${name} (static drawing)`;
      img.src = 'data:image/svg+xml;base64,' + btoa(unescape(encodeURIComponent(svg)));
      this.stage.replaceChildren(img);
    }
  }

  private showError(text: string): void {
    this.titleEl.textContent = 'jaxviz';
    this.summaryEl.textContent = '';
    this.legendEl.replaceChildren();
    this.stage.replaceChildren();
    this.svg = null;
    this.dropScene();
    this.status.set(text, true);
  }
}
