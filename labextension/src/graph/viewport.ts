/**
 * The graph's zoom and pan on screen: the first view of a drawing (legible text, the
 * canvas as tall as the drawing needs), Fit, zooming about a point, keeping what the user
 * looked at in place after a re-layout, and growing the canvas (never shrinking it: the
 * page below would jump). The zoom and pan themselves are the model's.
 */

import { shownFolds } from './folds';
import {
  PAD,
  Rect,
  Span,
  fitAll,
  firstView,
  foldsOrigin,
  keepInPlace,
  maxCanvasHeight,
  storyWindow,
  titleCorner,
  uncutWindow
} from './geometry';
import { GraphModel } from './model';
import { SceneCanvas } from './scenecanvas';
import { GraphIndex } from './visible';

/** A point on the page where an item was (its id, the item that replaces it). */
export interface Anchor {
  item: string;
  x: number;
  y: number;
}

/** How a new drawing is placed: a first view, fitted, kept where it was, or anchored. */
export interface Placement {
  fit?: boolean;
  anchor?: Anchor;
  initial?: boolean;
}

/** What the viewport works on: the widget's elements and what is drawn in it. */
export interface ViewportHost {
  readonly node: HTMLElement;
  readonly canvas: HTMLDivElement;
  readonly stage: HTMLDivElement;
  readonly model: GraphModel;
  /** The canvas fills the widget's height (a main-area tab). */
  readonly fill: boolean;
  readonly compact: boolean;
  /** The Graphviz drawing on the stage, or the canvas scene (one of them, or none). */
  drawing(): { svg: SVGSVGElement | null; scene: SceneCanvas | null };
}

/** The share of the canvas's width within which the drawing's left edge is "near" its
 * structure's (as render/dot.py's `first_screen_span`). */
const STORY_NEAR = 0.25;

export class Viewport {
  /** The drawing's size in px at zoom 1. */
  size = { w: 0, h: 0 };
  /** A drawing was on screen once (later layouts keep the zoom). */
  shownOnce = false;

  constructor(private readonly host: ViewportHost) {}

  private get svg(): SVGSVGElement | null {
    return this.host.drawing().svg;
  }

  private get scene(): SceneCanvas | null {
    return this.host.drawing().scene;
  }

  /** Put the model's zoom and pan on screen. */
  applyTransform(): void {
    const { scale, tx, ty } = this.host.model.transform;
    this.host.stage.style.transform = `translate(${tx}px, ${ty}px) scale(${scale})`;
    this.scene?.setTransform(this.host.model.transform);
    this.host.node.dataset.jaxvizScale = scale.toFixed(3);
  }

  maxCanvasHeight(): number {
    if (this.host.fill) {
      return Math.max(200, this.host.canvas.clientHeight || this.host.node.clientHeight - 120);
    }
    return maxCanvasHeight(window.innerHeight || 1000, this.host.compact);
  }

  canvasWidth(): number {
    return this.host.canvas.clientWidth || this.host.node.clientWidth || (this.host.compact ? 300 : 800);
  }

  /** Place a new drawing: `kept` when it keeps the coordinates of the one before (opened
   * or closed in place, or the drawing from before). */
  place(opts: Placement, kept: boolean, index: GraphIndex | null): void {
    if (opts.initial || !this.shownOnce) {
      this.showFirstView(index);
    } else if (opts.fit) {
      this.fit();
    } else if (kept) {
      // The pan stays and everything on screen stays where it was (also the group
      // clicked, under the pointer; with several opened, each makes room for the others).
      this.growCanvas();
      this.applyTransform();
    } else if (opts.anchor) {
      this.keepAnchor(opts.anchor);
    } else {
      this.keepViewOrStartOver(index); // a button: Collapse all, Expand level
    }
    this.shownOnce = true;
  }

  /** The zoom and pan stay unless the new drawing would be out of view, which then starts
   * over as a first view. */
  private keepViewOrStartOver(index: GraphIndex | null): void {
    this.growCanvas();
    this.applyTransform();
    if (!this.drawingInView()) {
      this.showFirstView(index);
    }
  }

  /** The first view of a graph: legible text (the canvas pans rather than shrinking
   * the drawing below a readable size), as tall as the drawing needs. */
  private showFirstView(index: GraphIndex | null): void {
    const { w, h } = this.size;
    if (!w || !h) {
      return;
    }
    const first = firstView(this.size, this.canvasWidth(), this.maxCanvasHeight());
    if (!this.host.fill) {
      this.host.canvas.style.height = `${first.canvasHeight}px`;
    }
    this.host.model.setTransform({ scale: first.scale, tx: first.tx, ty: first.ty });
    if (this.scene) {
      this.focusScene(this.scene);
    } else if (this.svg && index) {
      this.focusStructure(this.svg, index);
    }
    if (index) {
      this.focusFolds(index);
    }
  }

  /** The first view opens with the model's repeated layers in view (the folds the view
   * shows, `Block ×12`, `_update_step ×3 (scan)`: the kernel chose the view for them),
   * whatever laid it out: the pan moves from the top-left story chosen above as little
   * as brings in the structure's titles, the folds' titles, the titles of the open
   * groups holding them (the story around them) and their boxes, each while it fits
   * with the ones before, in the order `foldsOrigin` takes them each way; then off any
   * input an edge would cut in half, keeping those in view (`uncutWindow`). */
  private focusFolds(index: GraphIndex): void {
    const { scale, tx, ty } = this.host.model.transform;
    const width = this.canvasWidth();
    const height = this.host.fill ? this.maxCanvasHeight() : this.host.canvas.clientHeight || this.maxCanvasHeight();
    const win = { w: (width - 2 * PAD) / scale, h: (height - 2 * PAD) / scale };
    if (this.size.w <= win.w && this.size.h <= win.h) {
      return;
    }
    const folds = shownFolds(index.graph, this.host.model.expanded)
      .map(gid => this.drawnRect(index, gid))
      .filter(f => f !== null);
    if (!folds.length) {
      return;
    }
    const holders = new Map<string, Rect>();
    for (const fold of folds) {
      for (const g of index.groupChain(fold.gid).slice(1)) {
        const r = this.drawingRect(`cluster_g${g}`);
        if (r && g !== (index.graph.root ?? 0)) {
          holders.set(`cluster_g${g}`, titleCorner(r, win));
        }
      }
    }
    const titles = folds.map(f => (f.open ? titleCorner(f.rect, win) : f.rect));
    const story = this.structureTitles(index, win);
    const targets = { story, titles, around: [...holders.values()], boxes: folds.map(f => f.rect) };
    const start = { x: (PAD - tx) / scale, y: (PAD - ty) / scale };
    const at = foldsOrigin(this.size, win, targets, start, PAD / scale);
    // What the pan brought in stays; an input its edges cut moves in or out of view.
    const inView = [...targets.story, ...targets.titles, ...targets.around, ...targets.boxes].filter(
      r => r.x >= at.x - 0.5 && r.x + r.w <= at.x + win.w + 0.5
    );
    if (inView.length) {
      const keep = { left: Math.min(...inView.map(r => r.x)), right: Math.max(...inView.map(r => r.x + r.w)) };
      const inputs = rootItemIds(index, 'inputs')
        .map(id => this.drawingRect(id))
        .filter((r): r is Rect => r !== null)
        .map(r => ({ left: r.x, right: r.x + r.w }));
      at.x = uncutWindow(at.x, win.w, inputs, keep, PAD / scale);
    }
    if (at.x !== start.x || at.y !== start.y) {
      this.host.model.setTransform({ tx: PAD - at.x * scale, ty: PAD - at.y * scale });
    }
  }

  /** The titles of the program's top-level structure (its outermost phases, else the
   * root's groups), which the pan to the folds keeps in view before them. */
  private structureTitles(index: GraphIndex, win: { w: number; h: number }): Rect[] {
    const groups = index.graph.groups;
    const outermostPhase = (gid: number): boolean => {
      const chain = index.groupChain(gid).slice(1);
      return groups[gid].kind === 'phase' && !chain.some(g => groups[g].kind === 'phase');
    };
    let top = groups.map((_, gid) => gid).filter(outermostPhase);
    if (!top.length) {
      top = groups[index.graph.root ?? 0].groups.filter(g => !['inputs', 'outputs'].includes(groups[g].kind));
    }
    const rects: Rect[] = [];
    for (const gid of top) {
      const open = this.drawingRect(`cluster_g${gid}`);
      const rect = open ? titleCorner(open, win) : this.drawingRect(`g${gid}`);
      if (rect) {
        rects.push(rect);
      }
    }
    return rects;
  }

  /** Where a group is drawn (px at zoom 1): its box, its open group's, or, inside a chain
   * of open groups drawn as one, the chain's; `gid`: the group drawn. */
  private drawnRect(index: GraphIndex, gid: number): { gid: number; rect: Rect; open: boolean } | null {
    for (const g of index.groupChain(gid)) {
      const open = this.drawingRect(`cluster_g${g}`);
      const rect = open ?? this.drawingRect(`g${g}`);
      if (rect) {
        return { gid: g, rect, open: !!open };
      }
    }
    return null;
  }

  /** Where an item (`n…`, `g…`) or open group (`cluster_g…`) is in the drawing (px at
   * zoom 1), null when it is not drawn. */
  private drawingRect(id: string): Rect | null {
    if (this.scene) {
      return this.scene.rectOf(id);
    }
    const svg = this.svg;
    const e = svg?.getElementById(id) as SVGGraphicsElement | null | undefined;
    if (!svg || !e) {
      return null;
    }
    const { scale } = this.host.model.transform;
    const s = svg.getBoundingClientRect();
    const r = e.getBoundingClientRect();
    return { x: (r.left - s.left) / scale, y: (r.top - s.top) / scale, w: r.width / scale, h: r.height / scale };
  }

  /** A scene bigger than the canvas starts at the program's first equation or box (the
   * topmost item that is not an input or output), across where the structure under it is
   * (`SceneCanvas.startPoint`). */
  private focusScene(scene: SceneCanvas): void {
    const { scale } = this.host.model.transform;
    const width = this.canvasWidth();
    if (this.size.w * scale <= width && this.size.h * scale <= this.maxCanvasHeight()) {
      return;
    }
    const start = scene.startPoint(width / scale, this.maxCanvasHeight() / scale);
    if (!start) {
      return;
    }
    const tx = width / 2 - start.x * scale;
    this.host.model.setTransform({
      tx: Math.min(PAD, Math.max(width - PAD - this.size.w * scale, tx)),
      ty: Math.min(PAD, 4 * PAD - start.y * scale)
    });
  }

  /** When the drawing is wider than the canvas, pan so that the program's own groups
   * (the root's children, not its inputs and outputs) are in view rather than a row of
   * inputs: centred when they fit, with the inputs beside them that fit too and none cut
   * in half (`storyWindow`), else from their left edge, or from the drawing's where that
   * is near (the inputs beside them: the story from its top left). */
  private focusStructure(svg: SVGSVGElement, index: GraphIndex): void {
    const canvas = this.host.canvas.getBoundingClientRect();
    const stage = svg.getBoundingClientRect();
    if (stage.width <= canvas.width) {
      return;
    }
    const spans = (part: 'structure' | 'inputs'): Span[] =>
      rootItemIds(index, part)
        .map(id => svg.getElementById(id))
        .filter((e): e is Element => e !== null)
        .map(e => {
          const r = e.getBoundingClientRect();
          return { left: r.left, right: r.right };
        });
    const structure = spans('structure');
    if (!structure.length) {
      return;
    }
    const left = Math.min(...structure.map(s => s.left));
    const width = Math.max(...structure.map(s => s.right)) - left;
    const room = canvas.width - 16;
    const fits = width <= room;
    if (!fits && left - stage.left <= canvas.width * STORY_NEAR) {
      return;
    }
    const model = this.host.model;
    if (fits) {
      const structureSpan = { left, right: left + width };
      const inputs = spans('inputs');
      const at = storyWindow(structureSpan, inputs, room, { left: stage.left, right: stage.right });
      model.setTransform({
        tx: model.transform.tx + canvas.left + 8 - uncutWindow(at, room, inputs, structureSpan, 8)
      });
      return;
    }
    // Within the drawing's own extent: no empty band beside it.
    const minTx = canvas.width - stage.width - 8;
    model.setTransform({ tx: Math.min(8, Math.max(minTx, model.transform.tx + canvas.left + 8 - left)) });
  }

  /** Fit all of the drawing in view (below legible size when it must: the whole
   * structure at a glance), the canvas grown to its largest first. */
  fit(): void {
    const { w, h } = this.size;
    if (!w || !h) {
      return;
    }
    const maxH = this.maxCanvasHeight();
    const width = this.canvasWidth();
    const canvas = this.host.canvas;
    if (!this.host.fill) {
      const scaleAtMax = Math.min(1, (width - 16) / w, (maxH - 16) / h);
      canvas.style.height = `${Math.max(80, Math.min(maxH, h * scaleAtMax + 16))}px`;
    }
    const fitted = fitAll(this.size, { w: width, h: canvas.clientHeight || maxH }, this.scene ? 0 : 0.02);
    this.host.model.setTransform({ scale: fitted.scale, tx: fitted.tx, ty: fitted.ty });
  }

  zoomBy(factor: number, at?: { x: number; y: number }): void {
    const rect = this.host.canvas.getBoundingClientRect();
    const px = at ? at.x - rect.left : rect.width / 2;
    const py = at ? at.y - rect.top : rect.height / 2;
    this.host.model.zoomAbout(factor, px, py);
  }

  /** Grow the canvas (never shrink it: the page below would jump) when the drawing grew. */
  private growCanvas(): void {
    if (this.host.fill) {
      return;
    }
    const current = this.host.canvas.getBoundingClientRect().height;
    const wanted = Math.min(this.maxCanvasHeight(), this.size.h * this.host.model.transform.scale + 16);
    if (wanted > current) {
      this.host.canvas.style.height = `${wanted}px`;
    }
  }

  /** After a re-layout, pan so that the clicked item's replacement is where the clicked
   * item was on the page (the zoom stays): what the user looked at stays under the
   * pointer, whatever moved around it. */
  private keepAnchor(anchor: Anchor): void {
    this.growCanvas();
    this.applyTransform();
    const r = this.pageRect(anchor.item);
    if (r) {
      const { tx, ty } = this.host.model.transform;
      this.host.model.setTransform(keepInPlace({ tx, ty }, { x: r.left, y: r.top }, anchor));
    }
  }

  /** Where an item (`n…`, `g…`) or open group (`cluster_g…`) is on the page. */
  pageRect(id: string): DOMRect | null {
    if (this.scene) {
      return this.scenePageRect(id);
    }
    return (this.svg?.getElementById(id) as SVGGraphicsElement | null)?.getBoundingClientRect() ?? null;
  }

  /** Where an item or open group of the scene is on the page. */
  scenePageRect(id: string): DOMRect | null {
    const r = this.scene?.rectOf(id);
    if (!r) {
      return null;
    }
    const c = this.host.canvas.getBoundingClientRect();
    const { scale, tx, ty } = this.host.model.transform;
    return new DOMRect(c.left + tx + r.x * scale, c.top + ty + r.y * scale, r.w * scale, r.h * scale);
  }

  /** Whether the drawing is in view: nearly all of it, or, when bigger than the canvas,
   * nearly all of the canvas. */
  private drawingInView(): boolean {
    const c = this.host.canvas.getBoundingClientRect();
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
    const c = this.host.canvas.getBoundingClientRect();
    const { scale, tx, ty } = this.host.model.transform;
    return new DOMRect(c.left + tx, c.top + ty, this.size.w * scale, this.size.h * scale);
  }
}

/** The ids the root's own groups (`structure`: not its inputs and outputs) may be drawn
 * under, closed or open; or its inputs' (its inputs' group, closed or open, the inputs in
 * it, and the inputs and constants the root holds itself). */
function rootItemIds(index: GraphIndex, part: 'structure' | 'inputs'): string[] {
  const { groups, nodes } = index.graph;
  const root = groups[index.graph.root ?? 0];
  const ids: string[] = [];
  for (const gid of root.groups) {
    const kind = groups[gid].kind;
    if (part === 'inputs' ? kind === 'inputs' : kind !== 'inputs' && kind !== 'outputs') {
      ids.push(`g${gid}`, `cluster_g${gid}`);
      if (kind === 'inputs') {
        ids.push(...groups[gid].nodes.map(n => `n${n}`));
      }
    }
  }
  if (part === 'inputs') {
    ids.push(...root.nodes.filter(n => nodes[n].kind === 'input' || nodes[n].kind === 'const').map(n => `n${n}`));
  }
  return ids;
}
