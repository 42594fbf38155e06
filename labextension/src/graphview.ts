/**
 * The interactive graph: a view of the program's graph model laid out by Graphviz
 * (WebAssembly) in the browser. The widget of a `GraphModel` (`graphmodel.ts`: the
 * program, the open groups, the kept drawings, the search, the zoom and pan), which it
 * renders as the model signals. Click a collapsed group to expand it, the label of
 * an expanded group to collapse it; only the visible part is laid out again.
 * Hover for details, drag to pan, ctrl/⌘+wheel or the buttons to zoom, search by
 * primitive or variable name, export what is shown as SVG or DOT.
 */

import type { Message } from '@lumino/messaging';
import { Signal } from '@lumino/signaling';
import { Widget } from '@lumino/widgets';

import { groupToDot, legendKinds, legendOf, viewToDot } from './dot';
import { TooltipLine, avalDetail, groupTooltip, heatColor, nodeTooltip, repeatText } from './format';
import {
  PAD,
  PT_TO_PX,
  fitAll,
  firstView,
  keepInPlace,
  maxCanvasHeight,
  placeTooltip,
  prefersSideways
} from './geometry';
import { parseSvg } from './layout';
import { layouter, layoutMode, layoutText } from './layoutsvg';
import { LayeredOutput } from './layered';
import { Scene, sceneOf } from './scene';
import { SceneCanvas } from './scenecanvas';
import { sceneSvg } from './scenesvg';
import { GraphModel } from './graphmodel';
import { GROUP_FILL, LEGEND } from './visual';
import { closeGroup, drawingText, parseDrawing, portOrder, spliceGroup } from './splicesvg';
import { ProgramPayload, inflatePayload, payloadProblem } from './model';
import { initialExpansion } from './persist';
import {
  GraphIndex,
  ItemId,
  View,
  VisibleEdge,
  buildView,
  edgeIsWeak,
  groupItem,
  parseItem,
  statusText,
  visibleItems
} from './view';

/** Views with more visible items than this are not laid out (collapse instead). */
export const MAX_LAYOUT_ITEMS = 100000;
/** Views with more visible items than this are laid out by the layered layout and drawn
 * on a canvas (`layered.ts`, `scenecanvas.ts`); up to it, by Graphviz as SVG, whose
 * drawings are tidier but whose time grows faster than the items (see
 * `benchmarks/bench_browser.py`). */
export const GRAPHVIZ_MAX_ITEMS = 500;
const SVG_NS = 'http://www.w3.org/2000/svg';
/** Heat levels shown in the legend's swatch of cost-shaded groups. */
const HEAT_SAMPLES = [0.1, 0.5, 0.9];
/** How a drawing came to be, for the status line. */
const ARRANGED = { layout: 'layout', splice: 'opened in place', close: 'closed in place', restore: 'as before' };
/** Boxes in view whose opening is laid out ahead, while nothing else runs. */
const PREFETCH_BOXES = 8;
/** How long items glide from their old to their new place after a re-layout. */
const MOVE_MS = 220;

export interface GraphViewOptions {
  /** Smaller canvas, for the sidebar. */
  compact?: boolean;
  /** The canvas fills the widget's height (a main-area tab). */
  fill?: boolean;
}

function el<K extends keyof HTMLElementTagNameMap>(tag: K, className: string, text?: string): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  e.className = className;
  if (text !== undefined) {
    e.textContent = text;
  }
  return e;
}

function button(label: string, title: string, onClick: () => void, cls = ''): HTMLButtonElement {
  const b = el('button', `jp-jaxviz-button ${cls}`.trim(), label);
  b.type = 'button';
  b.title = title;
  b.addEventListener('click', ev => {
    ev.preventDefault();
    onClick();
  });
  return b;
}

/** A laid-out SVG's size in CSS px at zoom 1. */
function svgSizePx(svg: SVGSVGElement): { w: number; h: number } {
  const vb = svg.viewBox.baseVal;
  const w = (vb && vb.width) || parseFloat(svg.getAttribute('width') || '0');
  const h = (vb && vb.height) || parseFloat(svg.getAttribute('height') || '0');
  return { w: w * PT_TO_PX, h: h * PT_TO_PX };
}

export class GraphView extends Widget {
  private readonly compact: boolean;
  private readonly fill: boolean;
  private readonly header: HTMLDivElement;
  private readonly titleEl: HTMLSpanElement;
  private readonly summaryEl: HTMLSpanElement;
  private readonly toolbar: HTMLDivElement;
  private readonly searchInput: HTMLInputElement;
  private readonly matchInfo: HTMLSpanElement;
  private readonly legendEl: HTMLDivElement;
  private readonly canvas: HTMLDivElement;
  private readonly stage: HTMLDivElement;
  private readonly tooltip: HTMLDivElement;
  private readonly statusEl: HTMLDivElement;

  /** What is shown: the program, its open groups, kept drawings, search, zoom and pan. */
  readonly model = new GraphModel();
  private svg: SVGSVGElement | null = null;
  /** The canvas drawing of a view too big for Graphviz (then `svg` is null). */
  private scene: SceneCanvas | null = null;
  private readonly progressEl: HTMLDivElement;
  private svgSize = { w: 0, h: 0 }; // px at scale 1
  private renderToken = 0;
  private searchTimer = 0;
  private drag: { x: number; y: number; tx: number; ty: number; moved: boolean } | null = null;
  /** A drawing was on screen once (later layouts keep the zoom). */
  private svgShown = false;
  /** What was open inside each group when a click closed it: opening it again opens
   * that too (closing and reopening brings the drawing from before back, exactly). */
  private readonly openWhenClosed = new Map<number, number[]>();
  private glideTimer = 0;
  private suppressClick = false;
  /** Resolved when the current layout is on screen (for tests and callers). */
  ready: Promise<void> = Promise.resolve();

  constructor(options: GraphViewOptions = {}) {
    super();
    this.compact = !!options.compact;
    this.fill = !!options.fill;
    this.addClass('jp-jaxviz-graph');
    if (this.compact) {
      this.addClass('jp-jaxviz-compact');
    }
    if (this.fill) {
      this.addClass('jp-jaxviz-fill');
    }
    const node = this.node;

    this.header = el('div', 'jp-jaxviz-header');
    this.titleEl = el('span', 'jp-jaxviz-title');
    this.summaryEl = el('span', 'jp-jaxviz-summary');
    this.header.append(this.titleEl, this.summaryEl);

    this.toolbar = el('div', 'jp-jaxviz-toolbar');
    this.searchInput = el('input', 'jp-jaxviz-search');
    this.searchInput.type = 'search';
    this.searchInput.placeholder = 'search primitive or variable';
    this.searchInput.setAttribute('aria-label', 'search primitive or variable');
    this.searchInput.addEventListener('input', () => {
      window.clearTimeout(this.searchTimer);
      this.searchTimer = window.setTimeout(() => this.runSearch(), 120);
    });
    this.searchInput.addEventListener('keydown', ev => {
      if (ev.key === 'Enter') {
        ev.preventDefault();
        this.runSearch();
        void this.revealMatches();
      } else if (ev.key === 'Escape') {
        this.searchInput.value = '';
        this.runSearch();
      }
      ev.stopPropagation(); // keep notebook shortcuts out of the search box
    });
    this.matchInfo = el('span', 'jp-jaxviz-matches');
    const spacer = el('span', 'jp-jaxviz-spacer');
    this.toolbar.append(
      this.searchInput,
      this.matchInfo,
      spacer,
      button(
        'Collapse all',
        'Show only the top level',
        () => void this.setExpanded(this.index?.expandToDepth(0), { fresh: true })
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

    this.legendEl = el('div', 'jp-jaxviz-legend');
    this.canvas = el('div', 'jp-jaxviz-canvas');
    this.stage = el('div', 'jp-jaxviz-stage');
    this.canvas.appendChild(this.stage);
    this.tooltip = el('div', 'jp-jaxviz-tooltip');
    this.tooltip.style.display = 'none';
    this.statusEl = el('div', 'jp-jaxviz-status');
    this.progressEl = el('div', 'jp-jaxviz-progress');
    this.progressEl.appendChild(el('div', 'jp-jaxviz-progress-bar'));
    this.canvas.appendChild(this.progressEl);
    new ResizeObserver(() => this.scene?.setTransform(this.model.transform)).observe(this.canvas);
    // The tooltip lives on the page's body, fixed to the viewport: no output or canvas
    // edge cuts it off.
    node.append(this.header, this.toolbar, this.legendEl, this.canvas, this.statusEl);

    this.canvas.addEventListener('click', ev => this.onClick(ev));
    this.canvas.addEventListener('mousemove', ev => this.onHover(ev));
    this.canvas.addEventListener('mouseleave', () => this.hideTooltip());
    this.canvas.addEventListener('pointerdown', ev => this.onPointerDown(ev));
    this.canvas.addEventListener('pointermove', ev => this.onPointerMove(ev));
    this.canvas.addEventListener('pointerup', ev => this.onPointerUp(ev));
    this.canvas.addEventListener('wheel', ev => this.onWheel(ev), { passive: false });

    this.model.payloadChanged.connect(this.renderHeader, this);
    this.model.transformChanged.connect(this.applyTransform, this);
    this.model.searchChanged.connect(this.applySearch, this);
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
    this.svgShown = false;
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
    this.renderLegend();
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

  /**
   * Change the expansion state and show it. Groups opened since a drawing that is kept
   * are opened in place in it (the rest of the drawing keeps its place, see
   * `splicesvg.ts`); a state shown before comes back as it was; the first view, `fresh`
   * (Tidy layout, Expand level, Collapse all) and what cannot be reached by opening
   * groups are laid out afresh by Graphviz.
   */
  async setExpanded(
    expanded: Set<number> | undefined,
    opts: { fit?: boolean; anchor?: { item: string; x: number; y: number }; initial?: boolean; fresh?: boolean } = {}
  ): Promise<void> {
    const index = this.index;
    if (!index || !expanded) {
      return;
    }
    const view = buildView(index, expanded);
    const count = visibleItems(view).nodes.length + visibleItems(view).groups.length;
    if (count > MAX_LAYOUT_ITEMS) {
      this.setStatus(
        `That would show ${count} items: too many to lay out here (limit ${MAX_LAYOUT_ITEMS}). ` +
          'Expand a smaller group, or export the DOT.',
        true
      );
      return;
    }
    const token = ++this.renderToken;
    if (opts.initial) {
      this.openWhenClosed.clear(); // group ids of another program
    }
    if (count > GRAPHVIZ_MAX_ITEMS) {
      return this.showScene(view, count, token, opts);
    }
    const drawings = this.model.drawings;
    let dot = viewToDot(view, { rankdir: this.model.rankdir });
    this.node.classList.add('jp-jaxviz-busy');
    this.setStatus(`laying out ${count} items…`);
    const t0 = performance.now();
    const afresh = opts.initial || opts.fresh;
    let text: string | undefined = afresh ? undefined : drawings.get(view.expanded);
    let arranged: 'layout' | 'splice' | 'close' | 'restore' = text === undefined ? 'layout' : 'restore';
    const base =
      afresh || text !== undefined ? null : drawings.baseFor(view.expanded, g => index.depth[g], this.expanded);
    const closing = afresh || text !== undefined || base ? null : this.closedGroup(index, view.expanded);
    let svg: SVGSVGElement;
    try {
      if (base) {
        try {
          text = await this.openInPlace(index, base, token);
          arranged = 'splice';
        } catch (err) {
          console.warn('jaxviz: opening in place failed, laying out afresh:', err);
        }
      } else if (closing !== null) {
        try {
          text = await this.closeInPlace(closing, dot);
          arranged = 'close';
        } catch (err) {
          console.warn('jaxviz: closing in place failed, laying out afresh:', err);
        }
      }
      if (token !== this.renderToken) {
        return;
      }
      if (text === undefined) {
        text = await layoutText(dot);
      }
      svg = parseSvg(text);
    } catch (err) {
      if (token === this.renderToken) {
        this.node.classList.remove('jp-jaxviz-busy');
        this.setStatus(`Graphviz failed: ${(err as Error).message ?? err}`, true);
      }
      return;
    }
    if (token !== this.renderToken) {
      return; // a newer layout was requested meanwhile
    }
    if (opts.initial && this.model.rankdir === 'TB') {
      // A tall, narrow column uses a third of the width: drawn left to right instead, for
      // this graph's every view (the direction never changes while exploring).
      const size = svgSizePx(svg);
      const first = firstView(size, this.canvasWidth(), this.maxCanvasHeight());
      if (prefersSideways(size, this.canvasWidth(), this.maxCanvasHeight(), first.scale)) {
        const sideways = viewToDot(view, { rankdir: 'LR' });
        try {
          text = await layoutText(sideways);
          svg = parseSvg(text);
          dot = sideways;
          this.model.drawSideways();
        } catch {
          // keep the top-to-bottom drawing
        }
        if (token !== this.renderToken) {
          return;
        }
      }
    }
    if (opts.initial || opts.fresh) {
      // Drawings of another payload or direction; after a fresh layout (Tidy layout,
      // Expand level, Collapse all), drawings of the old one: coming back to one of those
      // would move everything. What opens or closes next does so in the new drawing.
      drawings.clear();
    }
    drawings.set(view.expanded, text);
    const ms = performance.now() - t0;
    const before = opts.initial ? null : this.itemRects();
    this.model.show(view, dot);
    this.install(svg);
    this.node.classList.remove('jp-jaxviz-busy');
    this.node.dataset.jaxvizExpanded = this.expandedGroups.join(',');
    this.node.dataset.jaxvizItems = String(count);
    this.node.dataset.jaxvizLayout = layoutMode() ?? '';
    this.node.dataset.jaxvizRankdir = this.model.rankdir;
    this.node.dataset.jaxvizArranged = arranged;
    if (opts.initial || !this.svgShown) {
      this.showFirstView();
    } else if (opts.fit) {
      this.fit();
    } else if (arranged !== 'layout') {
      // Opened in place, or the drawing from before: the drawing keeps its coordinates,
      // so the pan stays and everything on screen stays where it was (also the group
      // clicked, under the pointer; with several opened, each makes room for the others).
      this.growCanvas();
      this.applyTransform();
    } else if (opts.anchor) {
      this.keepAnchor(opts.anchor);
    } else {
      this.keepViewOrStartOver(); // a button: Collapse all, Expand level
    }
    this.svgShown = true;
    if (before) {
      this.glide(before);
    }
    this.applySearch();
    this.setStatus(
      `${statusText(view)} · ${ARRANGED[arranged]} ${ms.toFixed(0)} ms · ` +
        'click ▸ boxes to expand, ▾ labels to collapse · drag to pan · ctrl+wheel to zoom · Fit shows all'
    );
    this.laidOut();
    this.prefetchOpenings(index, text, token);
    if (!opts.initial && !this.isDisposed) {
      this.expansionChanged(view.expanded);
    }
  }

  /** Lay out ahead, one at a time in the worker, what opening each box in view would
   * splice into this drawing (the same DOT as `openInPlace` writes, so the layout cache
   * answers the click): a click then only splices. Stops when the view changes. */
  private prefetchOpenings(index: GraphIndex, text: string, token: number): void {
    const svg = this.svg;
    if (!svg) {
      return;
    }
    const c = this.canvas.getBoundingClientRect();
    const boxes = [...svg.querySelectorAll<SVGGElement>('g.node.jaxviz-group')]
      .filter(g => !/jaxviz-group-(inputs|outputs)/.test(g.getAttribute('class') ?? ''))
      .filter(g => {
        const r = g.getBoundingClientRect();
        return r.right > c.left && r.left < c.right && r.bottom > c.top && r.top < c.bottom;
      })
      .slice(0, PREFETCH_BOXES)
      .map(g => parseItem(g.id).id);
    const rankdir = this.model.rankdir;
    const run = async () => {
      const drawing = parseDrawing(text);
      for (const gid of boxes) {
        if (token !== this.renderToken || this.isDisposed) {
          return;
        }
        const order = portOrder(drawing, groupItem(gid), rankdir);
        await layoutText(groupToDot(buildView(index, index.expand(this.expanded, gid)), gid, { rankdir }, order));
      }
    };
    window.setTimeout(() => void run().catch(() => undefined), 0);
  }

  /** Show a view too big for Graphviz: the layered layout (in the worker, with a progress
   * bar), drawn on a canvas; the same zoom, pan, clicks and tooltips as a drawing. */
  private async showScene(
    view: View,
    count: number,
    token: number,
    opts: { fit?: boolean; anchor?: { item: string; x: number; y: number }; initial?: boolean }
  ): Promise<void> {
    const t0 = performance.now();
    this.node.classList.add('jp-jaxviz-busy');
    this.setStatus(`laying out ${count} items…`);
    const progress = (share: number) => {
      if (token === this.renderToken) {
        this.showProgress(share);
        this.setStatus(`laying out ${count} items… ${Math.round(share * 100)} %`);
      }
    };
    progress(0);
    let scene: Scene;
    let layout: LayeredOutput;
    try {
      scene = sceneOf(view, this.model.rankdir);
      layout = await layouter.layered(scene.layout, progress);
      if (opts.initial && this.model.rankdir === 'TB' && token === this.renderToken) {
        const size = { w: layout.width, h: layout.height };
        const first = firstView(size, this.canvasWidth(), this.maxCanvasHeight());
        if (prefersSideways(size, this.canvasWidth(), this.maxCanvasHeight(), first.scale)) {
          this.model.drawSideways();
          scene = sceneOf(view, 'LR');
          layout = await layouter.layered(scene.layout, progress);
        }
      }
    } catch (err) {
      if (token === this.renderToken) {
        this.node.classList.remove('jp-jaxviz-busy');
        this.showProgress(null);
        this.setStatus(`The layout failed: ${(err as Error).message ?? err}`, true);
      }
      return;
    }
    if (token !== this.renderToken) {
      return;
    }
    const ms = performance.now() - t0;
    // The DOT of a view this big is written when exported (it takes longer than the layout).
    this.model.show(view, '');
    this.installScene(scene, layout);
    this.showProgress(null);
    this.node.classList.remove('jp-jaxviz-busy');
    this.node.dataset.jaxvizExpanded = this.expandedGroups.join(',');
    this.node.dataset.jaxvizItems = String(count);
    this.node.dataset.jaxvizLayout = layoutMode() ?? 'worker';
    this.node.dataset.jaxvizRankdir = this.model.rankdir;
    this.node.dataset.jaxvizArranged = 'layout';
    this.node.dataset.jaxvizLayoutMs = ms.toFixed(1);
    if (opts.initial || !this.svgShown) {
      this.showFirstView();
    } else if (opts.fit) {
      this.fit();
    } else if (opts.anchor) {
      this.keepAnchor(opts.anchor);
    } else {
      this.keepViewOrStartOver();
    }
    this.svgShown = true;
    this.applySearch();
    this.setStatus(
      `${statusText(view)} · layered layout ${ms.toFixed(0)} ms (canvas) · ` +
        'click ▸ boxes to expand, ▾ labels to collapse · drag to pan · ctrl+wheel to zoom · Fit shows all'
    );
    this.laidOut();
    if (!opts.initial && !this.isDisposed) {
      this.expansionChanged(view.expanded);
    }
  }

  /** Put a laid-out scene on the canvas in place of a drawing. */
  private installScene(scene: Scene, layout: LayeredOutput): void {
    this.dropScene();
    this.stage.replaceChildren();
    this.svg = null;
    const drawn = new SceneCanvas(scene, layout);
    this.scene = drawn;
    this.svgSize = { w: Math.max(1, layout.width), h: Math.max(1, layout.height) };
    this.canvas.insertBefore(drawn.element, this.progressEl);
    this.node.dataset.jaxvizRenderer = 'canvas';
    // For tests and automation: where an item is on the page, and the text shown.
    const hooks = drawn.element as unknown as {
      jaxvizRect: (id: string) => DOMRect | null;
      jaxvizTextHeights: () => number[];
      jaxvizDrawMs: () => number;
    };
    hooks.jaxvizRect = id => this.scenePageRect(id);
    hooks.jaxvizTextHeights = () => drawn.textHeights();
    hooks.jaxvizDrawMs = () => drawn.drawMs / Math.max(1, drawn.frames);
    drawn.setTransform(this.model.transform);
  }

  private dropScene(): void {
    this.scene?.dispose();
    this.scene = null;
    this.node.dataset.jaxvizRenderer = 'svg';
  }

  /** Where an item (`n…`, `g…`) or open group (`cluster_g…`) of the scene is on the page. */
  private scenePageRect(id: string): DOMRect | null {
    const scene = this.scene;
    if (!scene) {
      return null;
    }
    const r = scene.rectOf(id);
    if (!r) {
      return null;
    }
    const c = this.canvas.getBoundingClientRect();
    const { scale, tx, ty } = this.model.transform;
    return new DOMRect(c.left + tx + r.x * scale, c.top + ty + r.y * scale, r.w * scale, r.h * scale);
  }

  private showProgress(share: number | null): void {
    this.progressEl.style.display = share === null ? 'none' : 'block';
    const bar = this.progressEl.firstElementChild as HTMLDivElement;
    bar.style.width = `${Math.round((share ?? 0) * 100)}%`;
  }

  /** Open the groups `base.open` in the drawing `base.text`, in place: each box drawn
   * there is opened in one go, with the groups to open inside it laid out as its own
   * drawing (fewer joins than opening them level by level). The drawing's text. */
  private async openInPlace(
    index: GraphIndex,
    base: { text: string; groups: Set<number>; open: number[] },
    token: number
  ): Promise<string | undefined> {
    const drawing = parseDrawing(base.text);
    const groups = new Set(base.groups);
    const pending = new Set(base.open);
    for (const gid of base.open) {
      if (!pending.has(gid)) {
        continue; // opened with the box that holds it
      }
      // Parents come first: `gid` is a box of the drawing; what opens inside it opens with it.
      for (const g of base.open) {
        if (pending.has(g) && index.groupChain(g).includes(gid)) {
          groups.add(g);
          pending.delete(g);
        }
      }
      const item = groupItem(gid);
      const rankdir = this.model.rankdir;
      const order = portOrder(drawing, item, rankdir);
      const sub = await layoutText(groupToDot(buildView(index, groups), gid, { rankdir }, order));
      if (token !== this.renderToken) {
        return undefined;
      }
      spliceGroup(drawing, parseDrawing(sub), item);
    }
    return drawingText(drawing);
  }

  /** The group whose closing turns the state on screen into `next` (it and what it
   * holds leave the expanded set, nothing else changes), if there is one. */
  private closedGroup(index: GraphIndex, next: Set<number>): number | null {
    const gone = [...this.expanded].filter(g => !next.has(g));
    if (!gone.length || [...next].some(g => !this.expanded.has(g))) {
      return null;
    }
    const top = gone.find(g => !gone.includes(index.graph.groups[g].parent ?? -1));
    return top !== undefined && gone.every(g => index.groupChain(g).includes(top)) ? top : null;
  }

  /** Close `gid` in the drawing on screen, in place (`splicesvg.ts closeGroup`): the box
   * comes from a fresh layout of the closed view, nothing else moves. The drawing's text. */
  private async closeInPlace(gid: number, dot: string): Promise<string> {
    const shown = this.model.drawings.get(this.expanded);
    if (shown === undefined) {
      throw new Error('the drawing on screen is not kept');
    }
    const drawing = parseDrawing(shown);
    closeGroup(drawing, parseDrawing(await layoutText(dot)), groupItem(gid), this.model.rankdir);
    return drawingText(drawing);
  }

  /** Put a fresh Graphviz SVG on the stage, sized in px, without native tooltips. */
  private install(svg: SVGSVGElement): void {
    svg.querySelectorAll('title').forEach(t => t.remove());
    svg.querySelectorAll('a').forEach(a => {
      // Graphviz wraps elements with tooltips in links; keep the content only.
      a.replaceWith(...Array.from(a.childNodes));
    });
    const vb = svg.viewBox.baseVal;
    const w = (vb && vb.width) || parseFloat(svg.getAttribute('width') || '0');
    const h = (vb && vb.height) || parseFloat(svg.getAttribute('height') || '0');
    this.svgSize = { w: w * PT_TO_PX, h: h * PT_TO_PX };
    svg.dataset.ptWidth = String(w);
    svg.dataset.ptHeight = String(h);
    svg.setAttribute('width', `${this.svgSize.w}px`);
    svg.setAttribute('height', `${this.svgSize.h}px`);
    // Inline, so that no page's rule scales the drawing (nbconvert's and Colab's
    // `.jp-RenderedHTMLCommon svg {max-width: 100%; height: auto}` shrank its text to 6 px):
    // the zoom is ours alone.
    svg.style.width = `${this.svgSize.w}px`;
    svg.style.height = `${this.svgSize.h}px`;
    svg.style.maxWidth = 'none';
    svg.style.maxHeight = 'none';
    svg.classList.add('jp-jaxviz-svg');
    // A box's fill (its kind's colour or its cost heat) as a variable, so that the theme
    // can tint it (see base.css) as it tints the legend's swatches.
    svg.querySelectorAll('g.node.jaxviz-group').forEach(g => {
      const fill = g.querySelector('polygon')?.getAttribute('fill');
      if (fill && fill !== 'none') {
        (g as SVGGElement).style.setProperty('--jaxviz-fill', fill);
      }
    });
    // Wide invisible strokes make thin edges easy to hover.
    svg.querySelectorAll('g.edge').forEach(g => {
      const path = g.querySelector('path');
      if (path) {
        const hit = path.cloneNode(false) as SVGPathElement;
        hit.setAttribute('class', 'jaxviz-hit');
        hit.removeAttribute('stroke-dasharray');
        g.insertBefore(hit, g.firstChild);
      }
    });
    // Cluster labels (click to collapse) go on a layer above the edges, which would
    // otherwise catch the clicks where they cross a label.
    const top = svg.querySelector('g.graph') ?? svg;
    const labels = document.createElementNS(SVG_NS, 'g');
    labels.setAttribute('class', 'jaxviz-labels');
    svg.querySelectorAll('g.cluster').forEach(cluster => {
      if (!cluster.id.startsWith('cluster_g')) {
        return;
      }
      cluster.querySelectorAll(':scope > text').forEach(t => {
        const clone = t.cloneNode(true) as SVGTextElement;
        clone.setAttribute('class', 'jaxviz-cluster-label');
        clone.setAttribute('data-cluster', cluster.id);
        t.setAttribute('visibility', 'hidden');
        labels.appendChild(clone);
      });
    });
    top.appendChild(labels);
    this.dropScene();
    this.stage.replaceChildren(svg);
    this.svg = svg;
  }

  // ------------------------------------------------------------------ zoom/pan

  /** Put the model's zoom and pan on screen. */
  private applyTransform(): void {
    const { scale, tx, ty } = this.model.transform;
    this.stage.style.transform = `translate(${tx}px, ${ty}px) scale(${scale})`;
    this.scene?.setTransform(this.model.transform);
    this.node.dataset.jaxvizScale = scale.toFixed(3);
  }

  private maxCanvasHeight(): number {
    if (this.fill) {
      return Math.max(200, this.canvas.clientHeight || this.node.clientHeight - 120);
    }
    return maxCanvasHeight(window.innerHeight || 1000, this.compact);
  }

  private canvasWidth(): number {
    return this.canvas.clientWidth || this.node.clientWidth || (this.compact ? 300 : 800);
  }

  /** The first view of a graph: legible text (the canvas pans rather than shrinking
   * the drawing below a readable size), as tall as the drawing needs. */
  /** The zoom and pan stay unless the new drawing would be out of view, which then starts
   * over as a first view. */
  private keepViewOrStartOver(): void {
    this.growCanvas();
    this.applyTransform();
    if (!this.drawingInView()) {
      this.showFirstView();
    }
  }

  private showFirstView(): void {
    const { w, h } = this.svgSize;
    if (!w || !h) {
      return;
    }
    const first = firstView(this.svgSize, this.canvasWidth(), this.maxCanvasHeight());
    if (!this.fill) {
      this.canvas.style.height = `${first.canvasHeight}px`;
    }
    this.model.setTransform({ scale: first.scale, tx: first.tx, ty: first.ty });
    if (this.scene) {
      this.focusScene();
    } else {
      this.focusStructure();
    }
  }

  /** A scene bigger than the canvas starts at the program's first equation or box (the
   * topmost item that is not an input or output), across where the structure under it is
   * (`SceneCanvas.startPoint`). */
  private focusScene(): void {
    const scene = this.scene;
    const { scale } = this.model.transform;
    const width = this.canvasWidth();
    if (!scene || (this.svgSize.w * scale <= width && this.svgSize.h * scale <= this.maxCanvasHeight())) {
      return;
    }
    const start = scene.startPoint(width / scale, this.maxCanvasHeight() / scale);
    if (!start) {
      return;
    }
    const tx = width / 2 - start.x * scale;
    this.model.setTransform({
      tx: Math.min(PAD, Math.max(width - PAD - this.svgSize.w * scale, tx)),
      ty: Math.min(PAD, 4 * PAD - start.y * scale)
    });
  }

  /** When the drawing is wider than the canvas, pan so that the program's own groups
   * (the root's children, not its inputs and outputs) are in view rather than a row of
   * inputs: centred when they fit, else from their left edge. */
  private focusStructure(): void {
    const svg = this.svg;
    const index = this.index;
    if (!svg || !index) {
      return;
    }
    const canvas = this.canvas.getBoundingClientRect();
    const stage = svg.getBoundingClientRect();
    if (stage.width <= canvas.width) {
      return;
    }
    let left = Infinity;
    let right = -Infinity;
    for (const gid of index.graph.groups[index.graph.root ?? 0].groups) {
      const kind = index.graph.groups[gid].kind;
      if (kind === 'inputs' || kind === 'outputs') {
        continue;
      }
      const e = svg.getElementById(`g${gid}`) ?? svg.getElementById(`cluster_g${gid}`);
      if (e) {
        const r = e.getBoundingClientRect();
        left = Math.min(left, r.left);
        right = Math.max(right, r.right);
      }
    }
    if (!isFinite(left)) {
      return;
    }
    const width = right - left;
    const target = width <= canvas.width - 16 ? canvas.left + (canvas.width - width) / 2 : canvas.left + 8;
    // Within the drawing's own extent: no empty band beside it.
    const shift = target - left;
    const minTx = canvas.width - stage.width - 8;
    this.model.setTransform({ tx: Math.min(8, Math.max(minTx, this.model.transform.tx + shift)) });
  }

  /** Fit all of the drawing in view (below legible size when it must: the whole
   * structure at a glance), the canvas grown to its largest first. */
  fit(): void {
    const { w, h } = this.svgSize;
    if (!w || !h) {
      return;
    }
    const maxH = this.maxCanvasHeight();
    const width = this.canvasWidth();
    if (!this.fill) {
      const scaleAtMax = Math.min(1, (width - 16) / w, (maxH - 16) / h);
      this.canvas.style.height = `${Math.max(80, Math.min(maxH, h * scaleAtMax + 16))}px`;
    }
    const fitted = fitAll(this.svgSize, { w: width, h: this.canvas.clientHeight || maxH }, this.scene ? 0 : 0.02);
    this.model.setTransform({ scale: fitted.scale, tx: fitted.tx, ty: fitted.ty });
  }

  zoomBy(factor: number, at?: { x: number; y: number }): void {
    const rect = this.canvas.getBoundingClientRect();
    const px = at ? at.x - rect.left : rect.width / 2;
    const py = at ? at.y - rect.top : rect.height / 2;
    this.model.zoomAbout(factor, px, py);
  }

  /** Grow the canvas (never shrink it: the page below would jump) when the drawing grew. */
  private growCanvas(): void {
    if (this.fill) {
      return;
    }
    const current = this.canvas.getBoundingClientRect().height;
    const wanted = Math.min(this.maxCanvasHeight(), this.svgSize.h * this.model.transform.scale + 16);
    if (wanted > current) {
      this.canvas.style.height = `${wanted}px`;
    }
  }

  /** After a re-layout, pan so that the clicked item's replacement is where the clicked
   * item was on the page (the zoom stays): what the user looked at stays under the
   * pointer, whatever moved around it. */
  private keepAnchor(anchor: { item: string; x: number; y: number }): void {
    this.growCanvas();
    this.applyTransform();
    const target = this.scene
      ? this.scenePageRect(anchor.item)
      : (this.svg?.getElementById(anchor.item) as SVGGraphicsElement | null)?.getBoundingClientRect();
    if (target) {
      const r = target;
      const { tx, ty } = this.model.transform;
      this.model.setTransform(keepInPlace({ tx, ty }, { x: r.left, y: r.top }, anchor));
    }
  }

  /** Whether the drawing is in view: nearly all of it, or, when bigger than the canvas,
   * nearly all of the canvas. */
  private drawingInView(): boolean {
    const c = this.canvas.getBoundingClientRect();
    const s = this.scene ? this.sceneRect() : this.svg?.getBoundingClientRect();
    if (!s) {
      return false;
    }
    const w = Math.min(c.right, s.right) - Math.max(c.left, s.left);
    const h = Math.min(c.bottom, s.bottom) - Math.max(c.top, s.top);
    return w >= 0.9 * Math.min(s.width, c.width) && h >= 0.9 * Math.min(s.height, c.height);
  }

  /** Where the whole scene is on the page. */
  private sceneRect(): DOMRect {
    const c = this.canvas.getBoundingClientRect();
    const { scale, tx, ty } = this.model.transform;
    return new DOMRect(c.left + tx, c.top + ty, this.svgSize.w * scale, this.svgSize.h * scale);
  }

  /** Page positions of the drawn items (nodes, boxes, open groups), by id. */
  private itemRects(): Map<string, DOMRect> {
    const out = new Map<string, DOMRect>();
    this.svg?.querySelectorAll('g.node, g.cluster').forEach(g => {
      if (g.id) {
        out.set(g.id, g.getBoundingClientRect());
      }
    });
    return out;
  }

  /** Items that were drawn before glide from their old page position to their new one;
   * new items and the edges fade in: no jump, no blank frame. */
  private glide(before: Map<string, DOMRect>): void {
    const svg = this.svg;
    if (!svg || window.matchMedia?.('(prefers-reduced-motion: reduce)').matches) {
      return;
    }
    window.clearTimeout(this.glideTimer);
    const moved: SVGGElement[] = [];
    svg.querySelectorAll<SVGGElement>('g.node, g.cluster').forEach(g => {
      const old = g.id ? before.get(g.id) : undefined;
      if (!old) {
        g.classList.add('jaxviz-enter');
        return;
      }
      const now = g.getBoundingClientRect();
      // In the drawing's units (points: the SVG's viewBox), zoomed.
      const dx = (old.left - now.left) / (this.model.transform.scale * PT_TO_PX);
      const dy = (old.top - now.top) / (this.model.transform.scale * PT_TO_PX);
      if (Math.abs(dx) + Math.abs(dy) < 0.5) {
        return;
      }
      g.style.transform = `translate(${dx}px, ${dy}px)`;
      moved.push(g);
    });
    svg.classList.add('jaxviz-gliding');
    this.node.dataset.jaxvizMoving = 'true';
    void svg.getBoundingClientRect(); // the start positions are on screen before the move
    requestAnimationFrame(() => {
      for (const g of moved) {
        g.style.transition = `transform ${MOVE_MS}ms ease-out`;
        g.style.transform = '';
      }
      svg.classList.add('jaxviz-glide-end');
    });
    this.glideTimer = window.setTimeout(() => {
      for (const g of moved) {
        g.style.transition = '';
      }
      svg.classList.remove('jaxviz-gliding', 'jaxviz-glide-end');
      svg.querySelectorAll('.jaxviz-enter').forEach(e => e.classList.remove('jaxviz-enter'));
      delete this.node.dataset.jaxvizMoving;
    }, MOVE_MS + 60);
  }

  /** Called when a layout is on screen (subclasses: release a held height). */
  protected laidOut(): void {
    // nothing here
  }

  private onWheel(ev: WheelEvent): void {
    if (!(ev.ctrlKey || ev.metaKey)) {
      return; // plain wheel scrolls the notebook
    }
    ev.preventDefault();
    this.zoomBy(ev.deltaY < 0 ? 1.15 : 1 / 1.15, { x: ev.clientX, y: ev.clientY });
  }

  private onPointerDown(ev: PointerEvent): void {
    if (ev.button !== 0) {
      return;
    }
    const { tx, ty } = this.model.transform;
    this.drag = { x: ev.clientX, y: ev.clientY, tx, ty, moved: false };
  }

  private onPointerMove(ev: PointerEvent): void {
    const d = this.drag;
    if (!d || !(ev.buttons & 1)) {
      this.drag = null;
      return;
    }
    const dx = ev.clientX - d.x;
    const dy = ev.clientY - d.y;
    if (!d.moved && Math.abs(dx) + Math.abs(dy) < 4) {
      return;
    }
    if (!d.moved) {
      d.moved = true;
      this.canvas.setPointerCapture?.(ev.pointerId);
      this.canvas.classList.add('jp-jaxviz-panning');
      this.hideTooltip();
    }
    this.model.setTransform({ tx: d.tx + dx, ty: d.ty + dy });
  }

  private onPointerUp(ev: PointerEvent): void {
    if (this.drag?.moved) {
      this.suppressClick = true;
      this.canvas.releasePointerCapture?.(ev.pointerId);
    }
    this.canvas.classList.remove('jp-jaxviz-panning');
    this.drag = null;
  }

  // ------------------------------------------------------------------ clicks

  private onClick(ev: MouseEvent): void {
    if (this.suppressClick) {
      this.suppressClick = false;
      return;
    }
    const index = this.index;
    const target = ev.target as Element | null;
    if (!index || !target) {
      return;
    }
    if (this.scene) {
      this.onSceneClick(index, ev);
      return;
    }
    const nodeEl = target.closest('g.node');
    if (nodeEl && nodeEl.id.startsWith('g')) {
      const gid = parseItem(nodeEl.id).id;
      const r = nodeEl.getBoundingClientRect();
      this.hideTooltip();
      void this.setExpanded(this.opened(index, gid), {
        anchor: { item: `cluster_g${gid}`, x: r.left, y: r.top }
      });
      return;
    }
    const label = target.closest('.jaxviz-cluster-label');
    const clusterId = label?.getAttribute('data-cluster') ?? '';
    const cluster = clusterId ? this.svg?.getElementById(clusterId) : null;
    if (cluster) {
      const gid = Number(clusterId.slice('cluster_g'.length));
      const r = cluster.getBoundingClientRect();
      this.hideTooltip();
      void this.setExpanded(this.closed(index, gid), {
        anchor: { item: `g${gid}`, x: r.left, y: r.top }
      });
    }
  }

  /** The open groups once `gid` opens: with its ancestors, and with what was open inside
   * it when a click closed it. */
  private opened(index: GraphIndex, gid: number): Set<number> {
    const next = index.expand(this.expanded, gid);
    for (const g of this.openWhenClosed.get(gid) ?? []) {
      next.add(g);
    }
    this.openWhenClosed.delete(gid);
    return next;
  }

  /** The open groups once `gid` closes (and everything in it), remembering what was open
   * inside it. */
  private closed(index: GraphIndex, gid: number): Set<number> {
    const inside = index.descendants(gid).filter(g => g !== gid && this.expanded.has(g));
    this.openWhenClosed.set(gid, inside);
    return index.collapse(this.expanded, gid);
  }

  /** A click on the canvas: a box opens, an open group's label closes it. */
  private onSceneClick(index: GraphIndex, ev: MouseEvent): void {
    const hit = this.sceneHit(ev);
    if (hit?.kind === 'item' && hit.id.startsWith('g')) {
      const gid = parseItem(hit.id).id;
      const r = this.scenePageRect(hit.id)!;
      this.hideTooltip();
      void this.setExpanded(this.opened(index, gid), {
        anchor: { item: `cluster_g${gid}`, x: r.left, y: r.top }
      });
    } else if (hit?.kind === 'label') {
      const r = this.scenePageRect(`cluster_g${hit.gid}`)!;
      this.hideTooltip();
      void this.setExpanded(this.closed(index, hit.gid), {
        anchor: { item: `g${hit.gid}`, x: r.left, y: r.top }
      });
    }
  }

  private sceneHit(ev: MouseEvent) {
    const c = this.canvas.getBoundingClientRect();
    return this.scene?.hit(ev.clientX - c.left, ev.clientY - c.top) ?? null;
  }

  private async expandLevel(): Promise<void> {
    const index = this.index;
    if (!index) {
      return;
    }
    // Open every collapsed group that is visible now.
    const next = new Set(this.expanded);
    for (const gid of this.expanded) {
      for (const c of index.graph.groups[gid].groups) {
        next.add(c);
      }
    }
    await this.setExpanded(next, { fresh: true });
  }

  // ------------------------------------------------------------------ tooltips

  private onHover(ev: MouseEvent): void {
    if (this.drag?.moved || !this.index) {
      return;
    }
    if (this.scene) {
      this.onSceneHover(ev);
      return;
    }
    const target = ev.target as Element | null;
    const nodeEl = target?.closest('g.node');
    const edgeEl = nodeEl ? null : target?.closest('g.edge');
    const clusterId = nodeEl || edgeEl ? null : target?.closest('.jaxviz-cluster-label')?.getAttribute('data-cluster');
    let content: { title: string; lines: TooltipLine[] } | null = null;
    if (nodeEl) {
      content = this.itemTooltip(nodeEl.id);
    } else if (edgeEl) {
      content = this.edgeTooltip(edgeEl.id);
    } else if (clusterId) {
      content = this.clusterTooltip(Number(clusterId.slice('cluster_g'.length)));
    }
    this.tooltipOrNone(content, ev);
  }

  private onSceneHover(ev: MouseEvent): void {
    const hit = this.sceneHit(ev);
    const scene = this.scene!;
    let content: { title: string; lines: TooltipLine[] } | null = null;
    if (hit?.kind === 'item') {
      content = this.itemTooltip(hit.id);
    } else if (hit?.kind === 'label') {
      content = this.clusterTooltip(hit.gid);
    } else if (hit?.kind === 'edge') {
      const src = scene.scene.items[scene.scene.edgeSrc[hit.index]];
      const dst = scene.scene.items[scene.scene.edgeDst[hit.index]];
      content = this.edgeTooltip(`e_${src}_${dst}`);
    }
    this.canvas.classList.toggle(
      'jp-jaxviz-pointing',
      hit?.kind === 'item' ? hit.id[0] === 'g' : hit?.kind === 'label'
    );
    this.tooltipOrNone(content, ev);
  }

  private clusterTooltip(gid: number): { title: string; lines: TooltipLine[] } {
    const groups = this.index!.graph.groups;
    const g = groups[gid];
    const kind = g.kind === 'repeat' ? `repeat: ${repeatText(groups, g.id)}` : g.kind;
    return { title: g.repeat || g.name, lines: [{ key: 'kind', text: kind }, { text: 'click to collapse' }] };
  }

  private tooltipOrNone(content: { title: string; lines: TooltipLine[] } | null, ev: MouseEvent): void {
    if (!content) {
      this.hideTooltip();
      return;
    }
    this.showTooltip(content, ev);
  }

  private itemTooltip(id: string): { title: string; lines: TooltipLine[] } | null {
    const graph = this.index!.graph;
    const { kind, id: num } = parseItem(id);
    if (kind === 'n' && graph.nodes[num]) {
      const n = graph.nodes[num];
      return nodeTooltip(n, n.kind === 'input' || n.kind === 'const' ? this.model.input(n.label) : undefined);
    }
    if (kind === 'g' && graph.groups[num]) {
      const { ins, outs } = this.model.edgeLabels(id);
      return groupTooltip(graph.groups[num], ins, outs, graph.groups);
    }
    return null;
  }

  private edgeTooltip(id: string): { title: string; lines: TooltipLine[] } | null {
    const e = this.model.edge(id);
    if (!e) {
      return null;
    }
    const lines: TooltipLine[] = e.avals.slice(0, 8).map(a => ({ text: avalDetail(a), mono: true }));
    if (e.avals.length > 8) {
      lines.push({ text: `… and ${e.avals.length - 8} more` });
    }
    if (edgeIsWeak(e)) {
      lines.push({ text: 'weakly typed: a Python scalar, promoted to the other operand’s dtype' });
    }
    const title = e.avals.length === 1 ? 'value' : `${e.avals.length} values`;
    return { title, lines };
  }

  private showTooltip(content: { title: string; lines: TooltipLine[] }, ev: MouseEvent): void {
    const t = this.tooltip;
    t.replaceChildren();
    t.appendChild(el('div', 'jp-jaxviz-tooltip-title', content.title));
    for (const line of content.lines) {
      const row = el('div', 'jp-jaxviz-tooltip-row');
      if (line.key) {
        row.appendChild(el('span', 'jp-jaxviz-tooltip-key', `${line.key}: `));
      }
      row.appendChild(el('span', line.mono ? 'jp-jaxviz-mono' : '', line.text));
      t.appendChild(row);
    }
    if (!t.isConnected) {
      document.body.appendChild(t);
    }
    t.style.display = 'block';
    const at = placeTooltip(
      { x: ev.clientX, y: ev.clientY },
      { w: t.offsetWidth, h: t.offsetHeight },
      { w: document.documentElement.clientWidth || window.innerWidth, h: window.innerHeight }
    );
    t.style.left = `${at.x}px`;
    t.style.top = `${at.y}px`;
  }

  private hideTooltip(): void {
    this.tooltip.style.display = 'none';
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    window.clearTimeout(this.glideTimer);
    this.tooltip.remove();
    Signal.clearData(this.model);
    super.dispose();
  }

  protected onBeforeDetach(msg: Message): void {
    this.hideTooltip();
    super.onBeforeDetach(msg);
  }

  // ------------------------------------------------------------------ search

  private runSearch(): void {
    this.model.search(this.searchInput.value);
  }

  private applySearch(): void {
    const svg = this.svg;
    const index = this.index;
    if ((!svg && !this.scene) || !index) {
      return;
    }
    svg?.querySelectorAll('.jaxviz-match').forEach(e => e.classList.remove('jaxviz-match'));
    const q = this.model.query.trim();
    if (!q) {
      this.scene?.setMatches(new Set());
      this.matchInfo.textContent = '';
      this.node.classList.remove('jp-jaxviz-searching');
      return;
    }
    this.node.classList.add('jp-jaxviz-searching');
    let hidden = 0;
    const items = new Set<ItemId>();
    const matches = this.model.matches;
    for (const nid of matches) {
      const item = index.visibleItemOf(nid, this.expanded);
      if (item[0] === 'g') {
        hidden++;
      }
      items.add(item);
    }
    for (const item of items) {
      svg?.getElementById(item)?.classList.add('jaxviz-match');
    }
    this.scene?.setMatches(new Set([...items].map(item => this.scene!.indexOf(item)).filter(k => k >= 0)));
    const n = matches.length;
    this.matchInfo.textContent =
      n === 0
        ? 'no match'
        : `${n} match${n === 1 ? '' : 'es'}` + (hidden ? ` (${hidden} in collapsed groups: Enter to show)` : '');
    this.matchInfo.title = this.matchInfo.textContent ?? '';
  }

  /** Expand the groups that hide search matches. */
  private async revealMatches(): Promise<void> {
    const index = this.index;
    const matches = this.model.matches;
    if (!index || !matches.length) {
      return;
    }
    let next = new Set(this.expanded);
    let anchor: { item: string; x: number; y: number } | undefined;
    for (const nid of matches.slice(0, 200)) {
      const shown = index.visibleItemOf(nid, this.expanded);
      const r =
        shown[0] !== 'g'
          ? undefined
          : this.scene
            ? this.scenePageRect(shown)
            : this.svg?.getElementById(shown)?.getBoundingClientRect();
      // The topmost box that opens stays where it is, as when clicked.
      if (r && (!anchor || r.top < anchor.y || (r.top === anchor.y && r.left < anchor.x))) {
        anchor = { item: `cluster_${shown}`, x: r.left, y: r.top };
      }
      next = index.expand(next, index.graph.nodes[nid].group);
    }
    // The zoom stays, and so does the side each part is drawn on.
    await this.setExpanded(next, { anchor });
  }

  // ------------------------------------------------------------------ export

  /** The shown graph as a standalone SVG document, in the DOT's own (light) colours
   * whatever JupyterLab's theme: the theme's colours are CSS rules on `.jp-jaxviz-svg`,
   * a class the copy does not carry. */
  svgText(): string {
    if (this.scene) {
      return sceneSvg(this.scene.scene, this.scene.layout);
    }
    if (!this.svg) {
      return '';
    }
    const clone = this.svg.cloneNode(true) as SVGSVGElement;
    clone.querySelectorAll('.jaxviz-hit, .jaxviz-labels').forEach(e => e.remove());
    clone.querySelectorAll('g.cluster > text[visibility]').forEach(e => e.removeAttribute('visibility'));
    clone.querySelectorAll('.jaxviz-match').forEach(e => e.classList.remove('jaxviz-match'));
    clone.removeAttribute('class');
    clone.setAttribute('width', `${clone.dataset.ptWidth}pt`);
    clone.setAttribute('height', `${clone.dataset.ptHeight}pt`);
    delete clone.dataset.ptWidth;
    delete clone.dataset.ptHeight;
    clone.setAttribute('xmlns', SVG_NS);
    return '<?xml version="1.0" encoding="UTF-8" standalone="no"?>\n' + new XMLSerializer().serializeToString(clone);
  }

  private download(text: string, type: string, ext: string): void {
    const name = (this.model.payload?.name || 'program').replace(/[^\w.-]+/g, '_');
    const blob = new Blob([text], { type });
    const url = URL.createObjectURL(blob);
    const a = document.createElement('a');
    a.href = url;
    a.download = `${name}.${ext}`;
    document.body.appendChild(a);
    a.click();
    a.remove();
    window.setTimeout(() => URL.revokeObjectURL(url), 10000);
  }

  exportSvg(): void {
    this.download(this.svgText(), 'image/svg+xml', 'svg');
  }

  exportDot(): void {
    const view = this.model.view;
    const dot = this.model.dot || (view ? viewToDot(view, { rankdir: this.model.rankdir }) : '');
    this.download(dot, 'text/vnd.graphviz', 'dot');
  }

  // ------------------------------------------------------------------ misc

  private renderLegend(): void {
    const graph = this.model.payload?.graph;
    this.legendEl.replaceChildren();
    if (!graph) {
      return;
    }
    const legend = legendOf(graph);
    const kinds = legendKinds(graph);
    const hasGroups = graph.groups.length > 1;
    const repeat = kinds.includes('repeat') ? ['repeat'] : [];
    for (const kind of [...kinds.filter(k => k !== 'repeat'), ...(hasGroups ? ['group'] : []), ...repeat]) {
      const spec = legend[kind];
      const item = el('span', `jp-jaxviz-legend-item jp-jaxviz-legend-${kind}`);
      item.title = spec.label;
      const swatches: HTMLSpanElement[] = [];
      const heated = kind === 'group' && !!graph.groups[graph.root ?? 0]?.flops;
      for (const fill of heated ? HEAT_SAMPLES.map(heatColor) : [kind === 'group' ? GROUP_FILL.call : spec.color]) {
        const swatch = el('span', 'jp-jaxviz-swatch');
        if (kind === 'weak') {
          swatch.classList.add('jp-jaxviz-swatch-edge');
          swatch.style.borderTopColor = spec.color;
        } else if (kind === 'group' || kind === 'repeat') {
          // Coloured as the boxes are, by the same theme rule (see base.css).
          swatch.classList.add('jp-jaxviz-swatch-box');
          swatch.style.setProperty('--jaxviz-fill', fill);
        } else {
          swatch.style.background = fill;
        }
        if (kind === 'repeat') {
          swatch.classList.add('jp-jaxviz-swatch-repeat'); // a double outline, as the boxes
        }
        swatches.push(swatch);
      }
      // The legend's words are visual.json's (a kind the file does not know: its name).
      const text = heated ? 'group (shaded by its share of FLOPs)' : (LEGEND[kind]?.text ?? kind);
      item.append(...swatches, el('span', 'jp-jaxviz-legend-label', text));
      this.legendEl.appendChild(item);
    }
  }

  private setStatus(text: string, warn = false): void {
    this.statusEl.textContent = text;
    this.statusEl.classList.toggle('jp-jaxviz-warn', warn);
  }

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
    this.setStatus(text, true);
  }
}
