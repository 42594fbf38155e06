/**
 * What the canvas looks things up in, built with the layout in the worker (pure data, no
 * DOM; its arrays are transferred to the page, not copied): each edge as drawn (its points,
 * from its source's side through its bends into its target's), and spatial grids of the
 * items, of the open groups' outlines and labels, and of the edges' segments in runs of a
 * few (`spatialgrid.ts`).
 */

import { LayeredInput, LayeredOutput } from './layered';
import { BoxList, GridCells, gridCells } from './spatialgrid';

/** What drawing a path needs: a 2D canvas context, or `SvgPath`. */
export interface PathSink {
  moveTo(x: number, y: number): void;
  lineTo(x: number, y: number): void;
  bezierCurveTo(a: number, b: number, c: number, d: number, x: number, y: number): void;
  closePath(): void;
  rect(x: number, y: number, w: number, h: number): void;
  roundRect(x: number, y: number, w: number, h: number, r: number): void;
}

/** The edges' points: those of edge e are `pts[2k], pts[2k + 1]` for k in
 * `start[e] .. start[e + 1]` (none for an edge with an end not drawn). */
export interface EdgePoints {
  start: Int32Array;
  pts: Float64Array;
}

/** Each edge's points: out of the bottom of its source, through its bends, into the top of
 * its target (left to right: out of the right side, into the left). */
export function edgePointsOf(input: LayeredInput, layout: LayeredOutput): EdgePoints {
  const { edgeSrc, edgeDst, itemW, itemH } = input;
  const { itemX, itemY } = layout;
  const tb = input.rankdir === 'TB';
  const nEdges = edgeSrc.length;
  const start = new Int32Array(nEdges + 1);
  const route = layout.routeStart ?? new Int32Array(nEdges + 1);
  for (let e = 0; e < nEdges; e++) {
    const drawn = edgeSrc[e] >= 0 && edgeDst[e] >= 0;
    start[e + 1] = start[e] + (drawn ? 2 + route[e + 1] - route[e] : 0);
  }
  const pts = new Float64Array(2 * start[nEdges]);
  for (let e = 0; e < nEdges; e++) {
    if (start[e + 1] === start[e]) {
      continue;
    }
    const a = edgeSrc[e];
    const b = edgeDst[e];
    let k = 2 * start[e];
    pts[k++] = tb ? itemX[a] + itemW[a] / 2 : itemX[a] + itemW[a];
    pts[k++] = tb ? itemY[a] + itemH[a] : itemY[a] + itemH[a] / 2;
    for (let r = 2 * route[e]; r < 2 * route[e + 1]; r++) {
      pts[k++] = layout.routePoints[r];
    }
    pts[k++] = tb ? itemX[b] + itemW[b] / 2 : itemX[b];
    pts[k++] = tb ? itemY[b] : itemY[b] + itemH[b] / 2;
  }
  return { start, pts };
}

/** Each edge as drawn, from its source's side through its bends into its target's. */
export class EdgeGeometry {
  readonly start: Int32Array;
  readonly pts: Float64Array;
  readonly tb: boolean;

  constructor(points: EdgePoints, rankdir: 'TB' | 'LR') {
    this.start = points.start;
    this.pts = points.pts;
    this.tb = rankdir === 'TB';
  }

  /** One segment (`k`: its first point) as drawn: a curve leaving and arriving along the
   * layers' axis, or a straight line. */
  segment(sink: PathSink, k: number, curved: boolean): void {
    const [x0, y0, x1, y1] = this.pts.subarray(2 * k, 2 * k + 4);
    sink.moveTo(x0, y0);
    if (!curved || x0 === x1 || y0 === y1) {
      sink.lineTo(x1, y1);
    } else if (this.tb) {
      const m = (y1 - y0) / 2;
      sink.bezierCurveTo(x0, y0 + m, x1, y1 - m, x1, y1);
    } else {
      const m = (x1 - x0) / 2;
      sink.bezierCurveTo(x0 + m, y0, x1 - m, y1, x1, y1);
    }
  }

  /** The arrowhead at the end of edge e. */
  head(sink: PathSink, e: number): void {
    const k = 2 * (this.start[e + 1] - 1);
    const x1 = this.pts[k];
    const y1 = this.pts[k + 1];
    sink.moveTo(x1, y1);
    if (this.tb) {
      sink.lineTo(x1 - 3.5, y1 - 7);
      sink.lineTo(x1 + 3.5, y1 - 7);
    } else {
      sink.lineTo(x1 - 7, y1 - 3.5);
      sink.lineTo(x1 - 7, y1 + 3.5);
    }
    sink.closePath();
  }
}

/** All that the canvas looks up: the edges' points, the edge of each segment (by its
 * first point; -1 for an edge's last point), the segments in runs (run r is segments
 * `runs[2r] .. runs[2r + 1]`, the end excluded: a 20k view has most of a million
 * segments, indexed one entry per run), and the grids of items, open groups and runs. */
export interface SceneIndex {
  edges: EdgePoints;
  segmentEdge: Int32Array;
  runs: Int32Array;
  items: GridCells;
  clusters: GridCells;
  segments: GridCells;
}

/** Side of a cell of the spatial index (px at zoom 1), at least: about one thing per
 * cell in a big scene (a scene a million px tall has no use for millions of cells). */
const GRID_CELL = 256;

function cellFor(width: number, height: number, count: number): number {
  return Math.max(GRID_CELL, Math.sqrt((width * height) / Math.max(1, count)));
}

/** The index of a laid-out scene. */
export function sceneIndexOf(input: LayeredInput, layout: LayeredOutput): SceneIndex {
  const edges = edgePointsOf(input, layout);
  const runs = edgeRuns(edges.start);
  return {
    edges,
    segmentEdge: segmentEdgesOf(edges.start),
    runs,
    items: itemCells(input, layout),
    clusters: clusterCells(input, layout),
    segments: runCells(layout, edges.pts, runs)
  };
}

/** The buffers of an index, to transfer rather than copy to the page. */
export function indexBuffers(index: SceneIndex): ArrayBuffer[] {
  const { edges, segmentEdge, runs, items, clusters, segments } = index;
  const grids = [items, clusters, segments].flatMap(g => [g.start, g.ids, g.bigIds, g.bigBoxes]);
  return [edges.start, edges.pts, segmentEdge, runs, ...grids].map(a => a.buffer as ArrayBuffer);
}

function itemCells(input: LayeredInput, layout: LayeredOutput): GridCells {
  const { width, height, itemX, itemY } = layout;
  const n = input.itemW.length;
  const boxes = new BoxList(n);
  for (let k = 0; k < n; k++) {
    boxes.add(k, itemX[k], itemY[k], itemX[k] + input.itemW[k], itemY[k] + input.itemH[k]);
  }
  return gridCells(n, width, height, cellFor(width, height, n), boxes);
}

/** An open group is found by its outline and its label only: its inside holds its children. */
function clusterCells(input: LayeredInput, layout: LayeredOutput): GridCells {
  const { width, height } = layout;
  const nClusters = input.clusterParent.length;
  const boxes = new BoxList(5 * nClusters);
  for (let c = 0; c < nClusters; c++) {
    const x = layout.clusterX[c];
    const y = layout.clusterY[c];
    const w = layout.clusterW[c];
    const h = layout.clusterH[c];
    boxes.add(c, x, y, x + w, y + 1);
    boxes.add(c, x, y + h - 1, x + w, y + h);
    boxes.add(c, x, y, x + 1, y + h);
    boxes.add(c, x + w - 1, y, x + w, y + h);
    boxes.add(c, x, y, x + Math.min(w, input.labelW[c] + 16), y + input.labelH[c] + 8);
  }
  return gridCells(nClusters, width, height, cellFor(width, height, input.itemW.length), boxes);
}

function runCells(layout: LayeredOutput, pts: Float64Array, runs: Int32Array): GridCells {
  const { width, height } = layout;
  const count = runs.length / 2;
  const box = new Float64Array(4);
  const boxes = new BoxList(count);
  for (let r = 0; r < count; r++) {
    pointsBox(pts, runs[2 * r], runs[2 * r + 1], box);
    boxes.add(r, box[0], box[1], box[2], box[3]);
  }
  return gridCells(count, width, height, cellFor(width, height, count), boxes);
}

/** The edge of each segment of edges whose points start at `start` (by the segment's
 * first point), -1 for an edge's last point. */
function segmentEdgesOf(start: Int32Array): Int32Array {
  const segmentEdge = new Int32Array(start[start.length - 1]).fill(-1);
  for (let e = 0; e + 1 < start.length; e++) {
    segmentEdge.fill(e, start[e], Math.max(start[e], start[e + 1] - 1));
  }
  return segmentEdge;
}

/** Segments per run of the edge index. */
const RUN = 8;

/** The edges' segments (`start`: each edge's first point) in runs of at most `RUN` of one
 * edge, as pairs of bounds: run r is segments `runs[2r] .. runs[2r + 1]`, the end
 * excluded (an edge's last point starts no segment). */
function edgeRuns(start: Int32Array): Int32Array {
  let count = 0;
  for (let e = 0; e + 1 < start.length; e++) {
    count += Math.ceil(Math.max(0, start[e + 1] - 1 - start[e]) / RUN);
  }
  const runs = new Int32Array(2 * count);
  let r = 0;
  for (let e = 0; e + 1 < start.length; e++) {
    for (let k = start[e]; k + 1 < start[e + 1]; k += RUN) {
      runs[r++] = k;
      runs[r++] = Math.min(k + RUN, start[e + 1] - 1);
    }
  }
  return runs;
}

/** The box of points `first .. end` (the last segment's end point included), into `box`:
 * x0, y0, x1, y1. */
function pointsBox(pts: Float64Array, first: number, end: number, box: Float64Array): void {
  let x0 = Infinity;
  let y0 = Infinity;
  let x1 = -Infinity;
  let y1 = -Infinity;
  for (let k = first; k <= end; k++) {
    x0 = Math.min(x0, pts[2 * k]);
    x1 = Math.max(x1, pts[2 * k]);
    y0 = Math.min(y0, pts[2 * k + 1]);
    y1 = Math.max(y1, pts[2 * k + 1]);
  }
  box[0] = x0;
  box[1] = y0;
  box[2] = x1;
  box[3] = y1;
}
