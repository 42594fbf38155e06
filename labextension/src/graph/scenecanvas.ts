/**
 * A laid-out scene drawn on a `<canvas>`, for views too big for SVG: each frame draws only
 * what is in view (found in a grid of cells, `SpatialGrid`), batched by colour; labels are
 * drawn only where they would be legible (`MIN_LABEL_PX` and up), boxes smaller than a few
 * pixels as plain marks, edges straight when zoomed far out. What is drawn is kept in a
 * layer a screen bigger each way than the view: panning copies it (one bitmap, however
 * much is drawn), zooming scales it until the pointer rests, then it is drawn afresh.
 * Hit-testing maps a point on the canvas to the item, the open group's label or the edge
 * under it, for clicks and tooltips. `sceneSvg` writes the same drawing as SVG.
 */

import { LayeredOutput } from './layered';
import { EDGE_COLOR, LINE_HEIGHT, Look, Scene } from './scene';
import { EdgeGeometry, PathSink, SceneIndex } from './sceneindex';
import { SpatialGrid } from './spatialgrid';
import { CANVAS_OUTLINE, CLUSTER, HEAT_DARK_TEXT, LEGEND, MATCH_COLOR } from '../shared/visual';

/** Text smaller than this (px on screen) is not drawn: it could not be read. */
export const MIN_LABEL_PX = 5;
export const FONT_FAMILY = 'Helvetica, Arial, sans-serif';
/** Boxes narrower than this on screen are drawn as plain marks (no outline, no shape). */
const MIN_SHAPE_PX = 4;
/** After the last zoom step, the scaled layer is drawn afresh this much later (ms). */
const ZOOM_SETTLE_MS = 120;

export type Hit =
  | { kind: 'item'; index: number; id: string }
  | { kind: 'label'; cluster: number; gid: number }
  | { kind: 'edge'; index: number };

export interface Transform {
  scale: number;
  tx: number;
  ty: number;
}

export type Rect = { x: number; y: number; w: number; h: number };
type Area = { x0: number; y0: number; x1: number; y1: number };

export class SceneCanvas {
  readonly element: HTMLCanvasElement;
  private frame = 0;
  private transform: Transform = { scale: 1, tx: 0, ty: 0 };
  private matches = new Set<number>();
  /** Item index by id, open group index by `cluster_g<id>`. */
  private readonly itemIndex: Map<string, number>;
  private readonly clusterIndex: Map<string, number>;
  readonly edges: EdgeGeometry;
  /** Where items, open groups and edge segments are: what a frame or a hit looks at. */
  private readonly itemGrid: SpatialGrid;
  private readonly clusterGrid: SpatialGrid;
  private readonly segmentGrid: SpatialGrid;
  /** The edge of each segment (by its first point), -1 for an edge's last point. */
  private readonly segmentEdge: Int32Array;
  /** The edges' segments in runs of a few, each indexed by its box (one entry per run,
   * not per segment: a 20k view has most of a million segments): run r is segments
   * `runs[2r] .. runs[2r + 1]` (the end excluded). */
  private readonly runs: Int32Array;
  /** Each item's fill colour, as an index into `fills`. */
  private readonly fillOf: Int32Array;
  private readonly fills: string[] = [];
  /** The drawing kept for panning (a screen more each way), and how it was drawn. */
  private readonly layer: HTMLCanvasElement;
  private layerAt: (Transform & { w: number; h: number }) | null = null;
  private settle = 0;
  /** The layer's drawing after a new scene's first frame (a timer). */
  private layerLater = 0;
  /** Whether frames are copied from the kept layer (off: each frame drawn afresh). */
  useLayer = true;
  /** Frames shown, frames drawn afresh, and the time they took (ms), for the benchmark. */
  frames = 0;
  paints = 0;
  drawMs = 0;

  /** `index`: built with the layout, in the worker (`sceneindex.ts`); `canvases`: those
   * of the scene before (`handOver`), drawn on again (a new canvas costs a new context). */
  constructor(
    readonly scene: Scene,
    readonly layout: LayeredOutput,
    index: SceneIndex,
    canvases?: { element: HTMLCanvasElement; layer: HTMLCanvasElement }
  ) {
    this.element = canvases?.element ?? document.createElement('canvas');
    this.element.className = 'jp-jaxviz-scene';
    this.installBenchmarkHooks();
    this.layer = canvases?.layer ?? document.createElement('canvas');
    this.itemIndex = new Map(scene.items.map((id, k) => [id, k]));
    // Any open group of a chain is found at its chain's cluster.
    this.clusterIndex = new Map(scene.clusterChains.flatMap((chain, c) => chain.map(g => [`cluster_g${g}`, c])));
    this.edges = new EdgeGeometry(index.edges, scene.layout.rankdir);
    const fillIndex = new Map<string, number>();
    this.fillOf = Int32Array.from(scene.itemLooks, l => {
      if (!fillIndex.has(l.fill)) {
        fillIndex.set(l.fill, this.fills.length);
        this.fills.push(l.fill);
      }
      return fillIndex.get(l.fill)!;
    });
    this.itemGrid = new SpatialGrid(index.items);
    this.clusterGrid = new SpatialGrid(index.clusters);
    this.segmentGrid = new SpatialGrid(index.segments);
    this.segmentEdge = index.segmentEdge;
    this.runs = index.runs;
  }

  /** What the benchmark reads and sets on the element: frames copied from the kept layer
   * or each drawn afresh, paints, the items in view, and how many clusters this layout
   * laid out afresh, of how many. */
  private installBenchmarkHooks(): void {
    // For the benchmark: frames copied from the kept layer or each drawn afresh.
    const hooks = this.element as unknown as {
      jaxvizUseLayer: (on: boolean) => void;
      jaxvizPaints: () => number;
      jaxvizItemsInView: () => [string, string, number, number][];
    };
    hooks.jaxvizItemsInView = () => this.itemsInView();
    // For the benchmark: how many clusters this layout laid out afresh, of how many.
    this.element.dataset.fresh = String(this.layout.fresh ?? '');
    this.element.dataset.clusters = String(this.scene.clusters.length + 1);
    hooks.jaxvizUseLayer = on => {
      this.useLayer = on;
      this.request();
    };
    hooks.jaxvizPaints = () => this.paints;
  }

  /** The edge segments (by their first point) whose boxes meet the rectangle, in order:
   * those of the runs the index finds there. */
  private segmentsIn(x0: number, y0: number, x1: number, y1: number): number[] {
    const out: number[] = [];
    const { pts } = this.edges;
    for (const r of this.segmentGrid.within(x0, y0, x1, y1)) {
      for (let k = this.runs[2 * r]; k < this.runs[2 * r + 1]; k++) {
        const [ax, ay, bx, by] = pts.subarray(2 * k, 2 * k + 4);
        if (Math.min(ax, bx) <= x1 && Math.max(ax, bx) >= x0 && Math.min(ay, by) <= y1 && Math.max(ay, by) >= y0) {
          out.push(k);
        }
      }
    }
    return out;
  }

  /** Where item `k` is drawn (px at zoom 1). */
  itemRect(k: number): Rect {
    const { itemX, itemY } = this.layout;
    return { x: itemX[k], y: itemY[k], w: this.scene.layout.itemW[k], h: this.scene.layout.itemH[k] };
  }

  clusterRect(c: number): Rect {
    const L = this.layout;
    return { x: L.clusterX[c], y: L.clusterY[c], w: L.clusterW[c], h: L.clusterH[c] };
  }

  /** The topmost item that is not one of the program's inputs or outputs (the leftmost
   * of those), -1 when there is none. */
  firstItem(): number {
    const { itemRank } = this.scene.layout;
    const { itemX, itemY } = this.layout;
    let best = -1;
    for (let k = 0; k < this.scene.items.length; k++) {
      const kind = this.scene.itemKinds[k];
      if (itemRank[k] || kind === 'input' || kind === 'const' || kind.startsWith('output')) {
        continue;
      }
      if (best < 0 || itemY[k] < itemY[best] || (itemY[k] === itemY[best] && itemX[k] < itemX[best])) {
        best = k;
      }
    }
    return best;
  }

  /** Where a first view `w` × `h` (px at zoom 1) starts: at the top of the program's first
   * item (not an input or output) or of the open groups holding it, across where the items of that first screenful are
   * densest (the window of width `w` holding most of them), not where one item happens to
   * be: the centre across and the top, null when there is no such item. */
  startPoint(w: number, h: number): { x: number; y: number } | null {
    const first = this.firstItem();
    if (first < 0) {
      return null;
    }
    // From the top of the outermost open group holding it: its title shows.
    const item = this.itemRect(first);
    let top = item.y;
    for (let c = 0; c < this.scene.clusters.length; c++) {
      const r = this.clusterRect(c);
      if (r.y < top && r.x <= item.x && r.x + r.w >= item.x + item.w && r.y + r.h >= item.y + item.h) {
        top = r.y;
      }
    }
    const { itemRank } = this.scene.layout;
    const centres: number[] = [];
    for (let k = 0; k < this.scene.items.length; k++) {
      const r = this.itemRect(k);
      if (!itemRank[k] && r.y >= top && r.y + r.h <= top + h) {
        centres.push(r.x + r.w / 2);
      }
    }
    centres.sort((a, b) => a - b);
    let best = 0;
    let bestCount = 0;
    for (let i = 0, j = 0; j < centres.length; j++) {
      while (centres[j] - centres[i] > w) {
        i++;
      }
      if (j - i + 1 > bestCount) {
        bestCount = j - i + 1;
        best = (centres[i] + centres[j]) / 2;
      }
    }
    return { x: bestCount ? best : this.itemRect(first).x, y: top };
  }

  /** The items wholly in view, by the spatial index, in reading order: each one's id,
   * kind and centre on the page (for the benchmark and tests: what a click would hit). */
  itemsInView(): [string, string, number, number][] {
    const { scale, tx, ty } = this.transform;
    const box = this.element.getBoundingClientRect();
    const view = this.viewArea(box.width, box.height, this.transform);
    const out: [string, string, number, number][] = [];
    for (const k of this.itemGrid.within(view.x0, view.y0, view.x1, view.y1)) {
      const r = this.itemRect(k);
      if (r.x >= view.x0 && r.y >= view.y0 && r.x + r.w <= view.x1 && r.y + r.h <= view.y1) {
        const x = box.left + tx + (r.x + r.w / 2) * scale;
        const y = box.top + ty + (r.y + r.h / 2) * scale;
        out.push([this.scene.items[k], this.scene.itemKinds[k], x, y]);
      }
    }
    return out.sort((a, b) => a[3] - b[3] || a[2] - b[2]);
  }

  /** The index of an item, -1 when it is not shown. */
  indexOf(id: string): number {
    return this.itemIndex.get(id) ?? -1;
  }

  /** Where an item or open group (`cluster_g<id>`) is (px at zoom 1), null when not shown. */
  rectOf(id: string): Rect | null {
    const k = this.itemIndex.get(id);
    if (k !== undefined) {
      return this.itemRect(k);
    }
    const c = this.clusterIndex.get(id);
    return c === undefined ? null : this.clusterRect(c);
  }

  /** The on-screen heights (px) of the labels drawn in view: one per line of text. */
  textHeights(): number[] {
    const { scale } = this.transform;
    const view = this.viewArea(this.element.clientWidth, this.element.clientHeight, this.transform);
    const out: number[] = [];
    const add = (l: Look, lines: number) => {
      if (l.fontPx * scale >= MIN_LABEL_PX) {
        for (let i = 0; i < lines; i++) {
          out.push(l.fontPx * scale);
        }
      }
    };
    for (const k of this.itemGrid.within(view.x0, view.y0, view.x1, view.y1)) {
      if (meets(this.itemRect(k), view)) {
        add(this.scene.itemLooks[k], this.scene.itemLooks[k].lines.length);
      }
    }
    this.scene.clusterLooks.forEach((l, c) => meets(this.clusterRect(c), view) && add(l, 1));
    return out;
  }

  setMatches(items: Set<number>): void {
    this.matches = items;
    this.layerAt = null;
    this.request();
  }

  /** Draw with this zoom and pan at the next frame. */
  setTransform(t: Transform): void {
    this.transform = { ...t };
    this.request();
  }

  private request(): void {
    if (!this.frame) {
      this.frame = requestAnimationFrame(() => {
        this.frame = 0;
        this.draw();
      });
    }
  }

  /** The part of the scene (px at zoom 1) that a `w` × `h` screen shows. */
  private viewArea(w: number, h: number, t: Transform): Area {
    return { x0: -t.tx / t.scale, y0: -t.ty / t.scale, x1: (w - t.tx) / t.scale, y1: (h - t.ty) / t.scale };
  }

  /** Draw now (sized to the element's box): copied from the kept layer where it covers
   * the view at this zoom (scaled, while zooming), else the layer drawn afresh. */
  draw(): void {
    const t0 = performance.now();
    const canvas = this.element;
    const dpr = window.devicePixelRatio || 1;
    const cw = canvas.clientWidth;
    const ch = canvas.clientHeight;
    if (canvas.width !== Math.round(cw * dpr) || canvas.height !== Math.round(ch * dpr)) {
      canvas.width = Math.round(cw * dpr);
      canvas.height = Math.round(ch * dpr);
    }
    const ctx = canvas.getContext('2d');
    if (!ctx) {
      return;
    }
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.clearRect(0, 0, canvas.width, canvas.height);
    if (!this.useLayer) {
      this.layerAt = null;
      this.paintView(ctx, dpr, cw, ch);
    } else if (!this.frames) {
      // A new scene's first frame: the view alone (a quarter of the layer's area), the
      // layer drawn just after it is on screen.
      this.paintView(ctx, dpr, cw, ch);
      this.layerLater = window.setTimeout(() => this.layerAt ?? this.paintLayer(dpr, cw, ch), 0);
    } else {
      this.fromLayer(ctx, dpr, cw, ch);
    }
    this.frames++;
    this.drawMs += performance.now() - t0;
    canvas.dataset.frames = String(this.frames);
  }

  /** Draw the view straight onto the screen's canvas. */
  private paintView(ctx: CanvasRenderingContext2D, dpr: number, cw: number, ch: number): void {
    const t = this.transform;
    ctx.setTransform(dpr * t.scale, 0, 0, dpr * t.scale, dpr * t.tx, dpr * t.ty);
    this.paint(ctx, this.viewArea(cw, ch, t), t.scale);
    this.paints++;
  }

  private fromLayer(ctx: CanvasRenderingContext2D, dpr: number, cw: number, ch: number): void {
    const t = this.transform;
    let at = this.layerAt;
    const mx = cw / 2;
    const my = ch / 2;
    const ratio = at ? t.scale / at.scale : 1;
    const covered =
      at &&
      at.w === cw &&
      at.h === ch &&
      ratio > 0.5 &&
      ratio < 2 &&
      t.tx - ratio * (at.tx + mx) <= 0 &&
      t.ty - ratio * (at.ty + my) <= 0 &&
      t.tx - ratio * (at.tx + mx) + ratio * (cw + 2 * mx) >= cw &&
      t.ty - ratio * (at.ty + my) + ratio * (ch + 2 * my) >= ch;
    if (!at || !covered) {
      at = this.paintLayer(dpr, cw, ch);
    } else if (ratio !== 1) {
      window.clearTimeout(this.settle);
      this.settle = window.setTimeout(() => {
        this.layerAt = null;
        this.request();
      }, ZOOM_SETTLE_MS);
    }
    const k = t.scale / at.scale;
    ctx.setTransform(k, 0, 0, k, dpr * (t.tx - k * (at.tx + mx)), dpr * (t.ty - k * (at.ty + my)));
    ctx.drawImage(this.layer, 0, 0);
  }

  /** Draw the layer afresh around the view: a screen's half more on each side. */
  private paintLayer(dpr: number, cw: number, ch: number): Transform & { w: number; h: number } {
    const t = this.transform;
    const mx = cw / 2;
    const my = ch / 2;
    const layer = this.layer;
    const lw = Math.round((cw + 2 * mx) * dpr);
    const lh = Math.round((ch + 2 * my) * dpr);
    if (layer.width !== lw || layer.height !== lh) {
      layer.width = lw;
      layer.height = lh;
    }
    const ctx = layer.getContext('2d')!;
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.clearRect(0, 0, lw, lh);
    const shifted = { scale: t.scale, tx: t.tx + mx, ty: t.ty + my };
    ctx.setTransform(dpr * t.scale, 0, 0, dpr * t.scale, dpr * shifted.tx, dpr * shifted.ty);
    this.paint(ctx, this.viewArea(cw + 2 * mx, ch + 2 * my, shifted), t.scale);
    this.paints++;
    this.layerAt = { ...t, w: cw, h: ch };
    return this.layerAt;
  }

  /** Draw what meets `view` (px at zoom 1) at zoom `scale`, the context set to it. */
  private paint(ctx: CanvasRenderingContext2D, view: Area, scale: number): void {
    this.drawClusters(ctx, view, scale);
    this.drawEdges(ctx, view, scale);
    this.drawItems(ctx, view, scale);
  }

  /** The open groups that meet the view, parents first. */
  private clustersIn(view: Area): number[] {
    const out: number[] = [];
    this.scene.clusters.forEach((_, c) => meets(this.clusterRect(c), view) && out.push(c));
    return out;
  }

  private drawClusters(ctx: CanvasRenderingContext2D, view: Area, scale: number): void {
    const { clusterLooks } = this.scene;
    for (const c of this.clustersIn(view)) {
      const l = clusterLooks[c];
      const r = this.clusterRect(c);
      ctx.beginPath();
      // Far bigger than the view: only its part in view (a fill the size of thousands of
      // screens costs the rasteriser), its outline where it shows.
      const x0 = Math.max(r.x, view.x0 - 10);
      const y0 = Math.max(r.y, view.y0 - 10);
      const x1 = Math.min(r.x + r.w, view.x1 + 10);
      const y1 = Math.min(r.y + r.h, view.y1 + 10);
      const whole = x0 === r.x && y0 === r.y && x1 === r.x + r.w && y1 === r.y + r.h;
      if (whole) {
        ctx.roundRect(r.x, r.y, r.w, r.h, 6);
      } else {
        ctx.rect(x0, y0, x1 - x0, y1 - y0);
      }
      ctx.fillStyle = l.fill;
      ctx.fill();
      if (!whole) {
        ctx.beginPath();
        ctx.roundRect(r.x, r.y, r.w, r.h, 6);
      }
      ctx.lineWidth = l.lineWidth;
      ctx.strokeStyle = l.stroke;
      ctx.setLineDash(l.dashed ? [5, 3] : []);
      ctx.stroke();
      ctx.setLineDash([]);
      if (l.fontPx * scale >= MIN_LABEL_PX) {
        ctx.font = `${l.fontPx}px ${FONT_FAMILY}`;
        ctx.fillStyle = clusterTitleColor(l);
        ctx.textBaseline = 'top';
        ctx.textAlign = 'left';
        ctx.fillText(l.lines[0], r.x + 8, r.y + 6, r.w - 16);
      }
    }
  }

  private drawEdges(ctx: CanvasRenderingContext2D, view: Area, scale: number): void {
    const { edgeWeak } = this.scene;
    const curved = scale > 0.2;
    const arrows = scale > 0.3;
    const segments = this.segmentsIn(view.x0, view.y0, view.x1, view.y1);
    const longX = 3 * (view.x1 - view.x0);
    const longY = 3 * (view.y1 - view.y0);
    const { pts, start } = this.edges;
    for (const weak of [0, 1]) {
      ctx.beginPath();
      const heads: number[] = [];
      for (const k of segments) {
        const e = this.segmentEdge[k];
        if (edgeWeak[e] !== weak) {
          continue;
        }
        const [x0, y0, x1, y1] = pts.subarray(2 * k, 2 * k + 4);
        if (Math.abs(x1 - x0) > longX || Math.abs(y1 - y0) > longY) {
          // Straight and cut to the view: a curve or dash pattern thousands of screens
          // long costs the rasteriser its whole length.
          clippedLine(ctx, x0, y0, x1, y1, view);
        } else {
          this.edges.segment(ctx, k, curved);
        }
        if (arrows && k === start[e + 1] - 2) {
          heads.push(e);
        }
      }
      const color = weak ? LEGEND.weak.color : EDGE_COLOR;
      ctx.strokeStyle = color;
      ctx.lineWidth = Math.max(0.8, 0.6 / scale);
      ctx.setLineDash(weak ? [4, 3] : []);
      // Zoomed far out, thousands of edges would bury the boxes: fainter as they shrink.
      ctx.globalAlpha = Math.min(1, Math.max(0.15, scale * 2));
      ctx.stroke();
      ctx.globalAlpha = 1;
      ctx.setLineDash([]);
      ctx.beginPath();
      heads.forEach(e => this.edges.head(ctx, e));
      ctx.fillStyle = color;
      ctx.fill();
    }
  }

  private drawItems(ctx: CanvasRenderingContext2D, view: Area, scale: number): void {
    const looks = this.scene.itemLooks;
    const detailed = scale * 6 > 2; // boxes bigger than a couple of pixels get outlines
    const inView = this.itemGrid.within(view.x0, view.y0, view.x1, view.y1).filter(k => meets(this.itemRect(k), view));
    const labelled = inView.filter(k => looks[k].fontPx * scale >= MIN_LABEL_PX);
    const byFill: number[][] = this.fills.map(() => []);
    inView.forEach(k => byFill[this.fillOf[k]].push(k));
    byFill.forEach((list, f) => {
      if (!list.length) {
        return;
      }
      ctx.beginPath();
      for (const k of list) {
        const r = this.itemRect(k);
        if (r.w * scale < MIN_SHAPE_PX) {
          ctx.rect(r.x, r.y, r.w, r.h); // a mark: its shape could not be seen
        } else {
          shapePath(ctx, looks[k], r);
        }
      }
      ctx.fillStyle = this.fills[f];
      ctx.fill();
      if (detailed) {
        ctx.strokeStyle = CANVAS_OUTLINE;
        ctx.lineWidth = 1;
        ctx.stroke();
      }
    });
    if (detailed) {
      this.drawExtras(ctx, labelled);
    }
    ctx.textAlign = 'center';
    ctx.textBaseline = 'middle';
    for (const k of labelled) {
      const l = looks[k];
      ctx.font = `${l.fontPx}px ${FONT_FAMILY}`;
      ctx.fillStyle = l.font;
      labelLines(l, this.itemRect(k), (line, x, y, w) => ctx.fillText(line, x, y, w));
    }
  }

  /** Heavier outlines (phases), double ones (folded repeats), search matches. */
  private drawExtras(ctx: CanvasRenderingContext2D, shown: number[]): void {
    const looks = this.scene.itemLooks;
    for (const k of shown) {
      const l = looks[k];
      if (l.peripheries > 1 || l.lineWidth > 1.5) {
        ctx.beginPath();
        ctx.strokeStyle = l.stroke;
        ctx.lineWidth = l.lineWidth;
        extraOutlines(ctx, l, this.itemRect(k));
        ctx.stroke();
      }
    }
    if (this.matches.size) {
      ctx.beginPath();
      for (const k of this.matches) {
        const r = this.itemRect(k);
        ctx.rect(r.x - 3, r.y - 3, r.w + 6, r.h + 6);
      }
      ctx.strokeStyle = MATCH_COLOR;
      ctx.lineWidth = 3;
      ctx.stroke();
    }
  }

  /** What is under the point (canvas px): an item, an open group's label, an edge. */
  hit(px: number, py: number): Hit | null {
    const { scale, tx, ty } = this.transform;
    const x = (px - tx) / scale;
    const y = (py - ty) / scale;
    const items = this.itemGrid.within(x, y, x, y);
    for (let i = items.length - 1; i >= 0; i--) {
      const k = items[i];
      const r = this.itemRect(k);
      if (x >= r.x && y >= r.y && x <= r.x + r.w && y <= r.y + r.h) {
        return { kind: 'item', index: k, id: this.scene.items[k] };
      }
    }
    const clusters = this.clusterGrid.within(x, y, x, y);
    for (let i = clusters.length - 1; i >= 0; i--) {
      const c = clusters[i];
      const r = this.clusterRect(c);
      const band = this.scene.layout.labelH[c] + 8;
      const labelW = Math.min(r.w, this.scene.layout.labelW[c] + 16);
      if (x >= r.x && x <= r.x + labelW && y >= r.y && y <= r.y + band) {
        return { kind: 'label', cluster: c, gid: this.scene.clusters[c] };
      }
    }
    const near = 5 / scale;
    const { pts } = this.edges;
    const long = (3 * this.element.clientWidth) / scale;
    for (const k of this.segmentsIn(x - near, y - near, x + near, y + near)) {
      const [x0, y0, x1, y1] = pts.subarray(2 * k, 2 * k + 4);
      const straight = Math.abs(x1 - x0) > long || Math.abs(y1 - y0) > long;
      const d = straight ? segmentDistance(x, y, x0, y0, x1, y1) : curveDistance(x, y, x0, y0, x1, y1, this.edges.tb);
      if (d <= near) {
        return { kind: 'edge', index: this.segmentEdge[k] };
      }
    }
    return null;
  }

  dispose(): void {
    this.handOver();
    this.element.remove();
  }

  /** Stop drawing; the canvases, for the next scene to draw on. */
  handOver(): { element: HTMLCanvasElement; layer: HTMLCanvasElement } {
    cancelAnimationFrame(this.frame);
    window.clearTimeout(this.settle);
    window.clearTimeout(this.layerLater);
    this.frame = 0;
    return { element: this.element, layer: this.layer };
  }
}

function meets(r: Rect, view: Area): boolean {
  return r.x <= view.x1 && r.y <= view.y1 && r.x + r.w >= view.x0 && r.y + r.h >= view.y0;
}

/** An open group's title reads dark on the plain outline, in the outline's colour else. */
export function clusterTitleColor(l: Look): string {
  return l.stroke === CLUSTER.color ? HEAT_DARK_TEXT : l.stroke;
}

/** Each line of an item's label: its text, centre and the width it may take. */
export function labelLines(l: Look, r: Rect, put: (line: string, x: number, y: number, w: number) => void): void {
  const lh = l.fontPx * LINE_HEIGHT;
  const top = r.y + r.h / 2 - ((l.lines.length - 1) * lh) / 2;
  l.lines.forEach((line, i) => put(line, r.x + r.w / 2, top + i * lh, r.w - 6));
}

/** A phase's heavier outline, a folded repeat's second one. */
export function extraOutlines(sink: PathSink, l: Look, r: Rect): void {
  sink.rect(r.x, r.y, r.w, r.h);
  if (l.peripheries > 1) {
    sink.rect(r.x + 3, r.y + 3, r.w - 6, r.h - 6);
  }
}

/** The outline of an item's shape, added to the current path. */
export function shapePath(ctx: PathSink, l: Look, r: Rect): void {
  const { x, y, w, h } = r;
  const tip = Math.min(h / 3, 8);
  if (l.shape === 'house') {
    ctx.moveTo(x, y + tip);
    ctx.lineTo(x + w / 2, y);
    ctx.lineTo(x + w, y + tip);
    ctx.lineTo(x + w, y + h);
    ctx.lineTo(x, y + h);
    ctx.closePath();
  } else if (l.shape === 'invhouse') {
    ctx.moveTo(x, y);
    ctx.lineTo(x + w, y);
    ctx.lineTo(x + w, y + h - tip);
    ctx.lineTo(x + w / 2, y + h);
    ctx.lineTo(x, y + h - tip);
    ctx.closePath();
  } else if (l.shape === 'note') {
    ctx.moveTo(x, y);
    ctx.lineTo(x + w - tip, y);
    ctx.lineTo(x + w, y + tip);
    ctx.lineTo(x + w, y + h);
    ctx.lineTo(x, y + h);
    ctx.closePath();
  } else if (l.shape === 'box3d') {
    ctx.rect(x, y + 4, w - 4, h - 4);
    ctx.moveTo(x, y + 4);
    ctx.lineTo(x + 4, y);
    ctx.lineTo(x + w, y);
    ctx.lineTo(x + w, y + h - 4);
    ctx.lineTo(x + w - 4, y + h);
  } else if (l.rounded) {
    ctx.roundRect(x, y, w, h, Math.min(6, h / 3));
  } else {
    ctx.rect(x, y, w, h);
  }
}

/** The part of the segment (x0, y0)–(x1, y1) inside the view (Liang–Barsky), added to the
 * current path. */
function clippedLine(ctx: PathSink, x0: number, y0: number, x1: number, y1: number, view: Area): void {
  const dx = x1 - x0;
  const dy = y1 - y0;
  let t0 = 0;
  let t1 = 1;
  const sides: [number, number][] = [
    [-dx, x0 - view.x0],
    [dx, view.x1 - x0],
    [-dy, y0 - view.y0],
    [dy, view.y1 - y0]
  ];
  for (const [p, q] of sides) {
    if (p === 0) {
      if (q < 0) {
        return;
      }
    } else if (p < 0) {
      t0 = Math.max(t0, q / p);
    } else {
      t1 = Math.min(t1, q / p);
    }
  }
  if (t0 < t1) {
    ctx.moveTo(x0 + t0 * dx, y0 + t0 * dy);
    ctx.lineTo(x0 + t1 * dx, y0 + t1 * dy);
  }
}

/** Distance from a point to a straight segment. */
function segmentDistance(x: number, y: number, x0: number, y0: number, x1: number, y1: number): number {
  const dx = x1 - x0;
  const dy = y1 - y0;
  const t = Math.max(0, Math.min(1, ((x - x0) * dx + (y - y0) * dy) / (dx * dx + dy * dy || 1)));
  return Math.hypot(x0 + t * dx - x, y0 + t * dy - y);
}

/** Distance from a point to an edge drawn from (x0, y0) to (x1, y1), sampled along it. */
function curveDistance(x: number, y: number, x0: number, y0: number, x1: number, y1: number, tb: boolean): number {
  let best = Infinity;
  const steps = 12;
  for (let i = 0; i <= steps; i++) {
    const t = i / steps;
    // The cubic with control points halfway along the rank axis, as drawn.
    const s = t * t * (3 - 2 * t);
    const px = tb ? x0 + (x1 - x0) * s : x0 + (x1 - x0) * t;
    const py = tb ? y0 + (y1 - y0) * t : y0 + (y1 - y0) * s;
    best = Math.min(best, Math.hypot(px - x, py - y));
  }
  return best;
}
