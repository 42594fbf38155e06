/**
 * A laid-out scene drawn on a `<canvas>`, for views too big for SVG: each frame draws only
 * what is in view, batched by colour; labels are drawn only where they would be legible
 * (`MIN_LABEL_PX` and up), boxes smaller than a few pixels as plain marks, edges straight
 * when zoomed far out. Hit-testing maps a point on the canvas to the item, the open
 * group's label or the edge under it, for clicks and tooltips.
 */

import { LayeredOutput } from './layered';
import { EDGE_COLOR, LINE_HEIGHT, Look, Scene } from './scene';
import { CANVAS_OUTLINE, CLUSTER, HEAT_DARK_TEXT, LEGEND, MATCH_COLOR } from './visual';

/** Text smaller than this (px on screen) is not drawn: it could not be read. */
export const MIN_LABEL_PX = 5;
const FONT_FAMILY = 'Helvetica, Arial, sans-serif';

export type Hit =
  | { kind: 'item'; index: number; id: string }
  | { kind: 'label'; cluster: number; gid: number }
  | { kind: 'edge'; index: number };

export interface Transform {
  scale: number;
  tx: number;
  ty: number;
}

export class SceneCanvas {
  readonly element: HTMLCanvasElement;
  private frame = 0;
  private transform: Transform = { scale: 1, tx: 0, ty: 0 };
  private matches = new Set<number>();
  /** Item index by id, open group index by `cluster_g<id>`. */
  private readonly itemIndex: Map<string, number>;
  private readonly clusterIndex: Map<string, number>;
  /** Each edge's ends (x0, y0, x1, y1), computed once: a frame reads them without allocating. */
  private readonly ends: Float64Array;
  /** Items by fill colour (drawn one path per colour). */
  private readonly byFill = new Map<string, number[]>();
  /** Frames drawn and the time they took (ms), for the benchmark. */
  frames = 0;
  drawMs = 0;

  constructor(
    readonly scene: Scene,
    readonly layout: LayeredOutput
  ) {
    this.element = document.createElement('canvas');
    this.element.className = 'jp-jaxviz-scene';
    this.itemIndex = new Map(scene.items.map((id, k) => [id, k]));
    this.clusterIndex = new Map(scene.clusters.map((gid, c) => [`cluster_g${gid}`, c]));
    this.ends = new Float64Array(4 * scene.edgeSrc.length);
    for (let e = 0; e < scene.edgeSrc.length; e++) {
      if (scene.edgeSrc[e] >= 0 && scene.edgeDst[e] >= 0) {
        this.ends.set(this.edgeEnds(e), 4 * e);
      }
    }
    scene.itemLooks.forEach((l, k) => {
      const list = this.byFill.get(l.fill) ?? [];
      list.push(k);
      this.byFill.set(l.fill, list);
    });
  }

  /** Where item `k` is drawn (px at zoom 1). */
  itemRect(k: number): { x: number; y: number; w: number; h: number } {
    const { itemX, itemY } = this.layout;
    return { x: itemX[k], y: itemY[k], w: this.scene.layout.itemW[k], h: this.scene.layout.itemH[k] };
  }

  clusterRect(c: number): { x: number; y: number; w: number; h: number } {
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

  /** The index of an item, -1 when it is not shown. */
  indexOf(id: string): number {
    return this.itemIndex.get(id) ?? -1;
  }

  /** Where an item or open group (`cluster_g<id>`) is (px at zoom 1), null when not shown. */
  rectOf(id: string): { x: number; y: number; w: number; h: number } | null {
    const k = this.itemIndex.get(id);
    if (k !== undefined) {
      return this.itemRect(k);
    }
    const c = this.clusterIndex.get(id);
    return c === undefined ? null : this.clusterRect(c);
  }

  /** The on-screen heights (px) of the labels drawn in view: one per line of text. */
  textHeights(): number[] {
    const { scale, tx, ty } = this.transform;
    const cw = this.element.clientWidth;
    const ch = this.element.clientHeight;
    const out: number[] = [];
    const add = (l: Look, r: { x: number; y: number; w: number; h: number }, lines: number) => {
      const x = tx + r.x * scale;
      const y = ty + r.y * scale;
      if (l.fontPx * scale >= MIN_LABEL_PX && x + r.w * scale > 0 && y + r.h * scale > 0 && x < cw && y < ch) {
        for (let i = 0; i < lines; i++) {
          out.push(l.fontPx * scale);
        }
      }
    };
    this.scene.itemLooks.forEach((l, k) => add(l, this.itemRect(k), l.lines.length));
    this.scene.clusterLooks.forEach((l, c) => add(l, this.clusterRect(c), 1));
    return out;
  }

  setMatches(items: Set<number>): void {
    this.matches = items;
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

  /** Draw now (sized to the element's box). */
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
    const { scale, tx, ty } = this.transform;
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.clearRect(0, 0, canvas.width, canvas.height);
    ctx.setTransform(dpr * scale, 0, 0, dpr * scale, dpr * tx, dpr * ty);
    const view = { x0: -tx / scale, y0: -ty / scale, x1: (cw - tx) / scale, y1: (ch - ty) / scale };
    const seen = (x: number, y: number, w: number, h: number) =>
      x <= view.x1 && y <= view.y1 && x + w >= view.x0 && y + h >= view.y0;
    this.drawClusters(ctx, seen, scale);
    this.drawEdges(ctx, view, scale);
    this.drawItems(ctx, seen, scale);
    this.frames++;
    this.drawMs += performance.now() - t0;
    canvas.dataset.frames = String(this.frames);
  }

  private drawClusters(
    ctx: CanvasRenderingContext2D,
    seen: (x: number, y: number, w: number, h: number) => boolean,
    scale: number
  ): void {
    const { clusterLooks } = this.scene;
    clusterLooks.forEach((l, c) => {
      const r = this.clusterRect(c);
      if (!seen(r.x, r.y, r.w, r.h)) {
        return;
      }
      ctx.beginPath();
      ctx.roundRect(r.x, r.y, r.w, r.h, 6);
      ctx.fillStyle = l.fill;
      ctx.fill();
      ctx.lineWidth = l.lineWidth;
      ctx.strokeStyle = l.stroke;
      ctx.setLineDash(l.dashed ? [5, 3] : []);
      ctx.stroke();
      ctx.setLineDash([]);
      if (l.fontPx * scale >= MIN_LABEL_PX) {
        ctx.font = `${l.fontPx}px ${FONT_FAMILY}`;
        ctx.fillStyle = l.stroke === CLUSTER.color ? HEAT_DARK_TEXT : l.stroke; // a cluster's title reads dark
        ctx.textBaseline = 'top';
        ctx.textAlign = 'left';
        ctx.fillText(l.lines[0], r.x + 8, r.y + 6, r.w - 16);
      }
    });
  }

  private drawEdges(
    ctx: CanvasRenderingContext2D,
    view: { x0: number; y0: number; x1: number; y1: number },
    scale: number
  ): void {
    const { edgeSrc, edgeDst, edgeWeak } = this.scene;
    const curved = scale > 0.2;
    const arrows = scale > 0.3;
    for (const weak of [0, 1]) {
      ctx.beginPath();
      const heads: [number, number, number, number][] = [];
      for (let e = 0; e < edgeSrc.length; e++) {
        if (edgeWeak[e] !== weak || edgeSrc[e] < 0 || edgeDst[e] < 0) {
          continue;
        }
        const x0 = this.ends[4 * e];
        const y0 = this.ends[4 * e + 1];
        const x1 = this.ends[4 * e + 2];
        const y1 = this.ends[4 * e + 3];
        if (Math.max(x0, x1) < view.x0 || Math.min(x0, x1) > view.x1) {
          continue;
        }
        if (Math.max(y0, y1) < view.y0 || Math.min(y0, y1) > view.y1) {
          continue;
        }
        const long = Math.abs(x1 - x0) > 3 * (view.x1 - view.x0) || Math.abs(y1 - y0) > 3 * (view.y1 - view.y0);
        if (long) {
          // Straight and cut to the view: a curve or dash pattern thousands of screens
          // long costs the rasteriser its whole length.
          clippedLine(ctx, x0, y0, x1, y1, view);
        } else if (curved) {
          ctx.moveTo(x0, y0);
          const tb = this.scene.layout.rankdir === 'TB';
          const m = tb ? (y1 - y0) / 2 : (x1 - x0) / 2;
          if (tb) {
            ctx.bezierCurveTo(x0, y0 + m, x1, y1 - m, x1, y1);
          } else {
            ctx.bezierCurveTo(x0 + m, y0, x1 - m, y1, x1, y1);
          }
        } else {
          ctx.moveTo(x0, y0);
          ctx.lineTo(x1, y1);
        }
        if (arrows) {
          heads.push([x0, y0, x1, y1]);
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
      const tb = this.scene.layout.rankdir === 'TB';
      for (const [, , x1, y1] of heads) {
        if (tb) {
          ctx.moveTo(x1, y1);
          ctx.lineTo(x1 - 3.5, y1 - 7);
          ctx.lineTo(x1 + 3.5, y1 - 7);
        } else {
          ctx.moveTo(x1, y1);
          ctx.lineTo(x1 - 7, y1 - 3.5);
          ctx.lineTo(x1 - 7, y1 + 3.5);
        }
        ctx.closePath();
      }
      ctx.fillStyle = color;
      ctx.fill();
    }
  }

  /** An edge's start and end: out of the bottom of its source, into the top of its target
   * (left to right: out of the right side, into the left). */
  edgeEnds(e: number): [number, number, number, number] {
    const a = this.itemRect(this.scene.edgeSrc[e]);
    const b = this.itemRect(this.scene.edgeDst[e]);
    if (this.scene.layout.rankdir === 'TB') {
      return [a.x + a.w / 2, a.y + a.h, b.x + b.w / 2, b.y];
    }
    return [a.x + a.w, a.y + a.h / 2, b.x, b.y + b.h / 2];
  }

  private drawItems(
    ctx: CanvasRenderingContext2D,
    seen: (x: number, y: number, w: number, h: number) => boolean,
    scale: number
  ): void {
    const looks = this.scene.itemLooks;
    const detailed = scale * 6 > 2; // boxes bigger than a couple of pixels get outlines
    const labelled: number[] = [];
    for (const [fill, list] of this.byFill) {
      ctx.beginPath();
      const { itemX, itemY } = this.layout;
      const { itemW, itemH } = this.scene.layout;
      for (const k of list) {
        if (!seen(itemX[k], itemY[k], itemW[k], itemH[k])) {
          continue;
        }
        const r = this.itemRect(k);
        shapePath(ctx, looks[k], r);
        if (looks[k].fontPx * scale >= MIN_LABEL_PX) {
          labelled.push(k);
        }
      }
      ctx.fillStyle = fill;
      ctx.fill();
      if (detailed) {
        ctx.strokeStyle = CANVAS_OUTLINE;
        ctx.lineWidth = 1;
        ctx.stroke();
      }
    }
    if (detailed) {
      this.drawExtras(ctx, labelled);
    }
    ctx.textAlign = 'center';
    ctx.textBaseline = 'middle';
    for (const k of labelled) {
      const l = looks[k];
      const r = this.itemRect(k);
      ctx.font = `${l.fontPx}px ${FONT_FAMILY}`;
      ctx.fillStyle = l.font;
      const lh = l.fontPx * LINE_HEIGHT;
      const top = r.y + r.h / 2 - ((l.lines.length - 1) * lh) / 2;
      l.lines.forEach((line, i) => ctx.fillText(line, r.x + r.w / 2, top + i * lh, r.w - 6));
    }
  }

  /** Heavier outlines (phases), double ones (folded repeats), search matches. */
  private drawExtras(ctx: CanvasRenderingContext2D, shown: number[]): void {
    const looks = this.scene.itemLooks;
    for (const k of shown) {
      const l = looks[k];
      const r = this.itemRect(k);
      if (l.peripheries > 1 || l.lineWidth > 1.5) {
        ctx.beginPath();
        ctx.strokeStyle = l.stroke;
        ctx.lineWidth = l.lineWidth;
        ctx.rect(r.x, r.y, r.w, r.h);
        if (l.peripheries > 1) {
          ctx.rect(r.x + 3, r.y + 3, r.w - 6, r.h - 6);
        }
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
    const { items, itemLayout } = { items: this.scene.items, itemLayout: this.layout };
    for (let k = items.length - 1; k >= 0; k--) {
      const ix = itemLayout.itemX[k];
      const iy = itemLayout.itemY[k];
      if (x >= ix && y >= iy && x <= ix + this.scene.layout.itemW[k] && y <= iy + this.scene.layout.itemH[k]) {
        return { kind: 'item', index: k, id: items[k] };
      }
    }
    for (let c = this.scene.clusters.length - 1; c >= 0; c--) {
      const r = this.clusterRect(c);
      const band = this.scene.layout.labelH[c] + 8;
      const labelW = Math.min(r.w, this.scene.layout.labelW[c] + 16);
      if (x >= r.x && x <= r.x + labelW && y >= r.y && y <= r.y + band) {
        return { kind: 'label', cluster: c, gid: this.scene.clusters[c] };
      }
    }
    const near = 5 / scale;
    const tb = this.scene.layout.rankdir === 'TB';
    for (let e = 0; e < this.scene.edgeSrc.length; e++) {
      if (this.scene.edgeSrc[e] < 0 || this.scene.edgeDst[e] < 0) {
        continue;
      }
      const [x0, y0, x1, y1] = this.ends.subarray(4 * e, 4 * e + 4);
      if (x < Math.min(x0, x1) - near || x > Math.max(x0, x1) + near) {
        continue;
      }
      if (y < Math.min(y0, y1) - near || y > Math.max(y0, y1) + near) {
        continue;
      }
      const long =
        Math.abs(x1 - x0) > (3 * this.element.clientWidth) / scale ||
        Math.abs(y1 - y0) > (3 * this.element.clientHeight) / scale;
      const d = long ? segmentDistance(x, y, x0, y0, x1, y1) : curveDistance(x, y, x0, y0, x1, y1, tb);
      if (d <= near) {
        return { kind: 'edge', index: e };
      }
    }
    return null;
  }

  dispose(): void {
    cancelAnimationFrame(this.frame);
    this.element.remove();
  }
}

/** The outline of an item's shape, added to the current path. */
function shapePath(ctx: CanvasRenderingContext2D, l: Look, r: { x: number; y: number; w: number; h: number }): void {
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
function clippedLine(
  ctx: CanvasRenderingContext2D,
  x0: number,
  y0: number,
  x1: number,
  y1: number,
  view: { x0: number; y0: number; x1: number; y1: number }
): void {
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
