/**
 * A grid of square cells over a scene, each listing the things (items, groups, edge
 * segments) whose box meets it: what is in a rectangle is found by visiting its cells
 * only, so a frame or a hit test costs what is in view, not what is in the scene. The
 * cells are plain data (`GridCells`, built by `gridCells` in the layout worker, sent to the
 * page); a `SpatialGrid` answers queries over them.
 */

const BIG_CELLS = 16;

/** A grid's cells and what meets each, packed: the things of cell c are
 * `ids[start[c]] .. ids[start[c + 1]]`. Boxes that span more than `BIG_CELLS` cells a side
 * (an edge down a layer a million px long) are in a list instead (`bigIds`, with their
 * boxes `bigBoxes`: x0, y0, x1, y1 each), tested on every query, not in thousands of cells. */
export interface GridCells {
  count: number;
  cols: number;
  rows: number;
  cell: number;
  start: Int32Array;
  ids: Int32Array;
  bigIds: Int32Array;
  bigBoxes: Float64Array;
}

/** Boxes to index: the j-th is thing `id[j]`'s, from (`x0[j]`, `y0[j]`) to (`x1[j]`,
 * `y1[j]`); a thing may have several. Typed arrays filled in a loop: a box a call, its
 * coordinates passed as arguments, would box each number (garbage by the million). */
export class BoxList {
  readonly id: Int32Array;
  readonly x0: Float64Array;
  readonly y0: Float64Array;
  readonly x1: Float64Array;
  readonly y1: Float64Array;
  length = 0;

  constructor(capacity: number) {
    this.id = new Int32Array(capacity);
    [this.x0, this.y0, this.x1, this.y1] = [0, 1, 2, 3].map(() => new Float64Array(capacity));
  }

  add(id: number, x0: number, y0: number, x1: number, y1: number): void {
    const j = this.length++;
    this.id[j] = id;
    this.x0[j] = x0;
    this.y0[j] = y0;
    this.x1[j] = x1;
    this.y1[j] = y1;
  }
}

/** The cells of a grid over `width` × `height` of `count` things, by their `boxes`. */
export function gridCells(count: number, width: number, height: number, cell: number, boxes: BoxList): GridCells {
  const cols = Math.max(1, Math.ceil(width / cell) + 1);
  const rows = Math.max(1, Math.ceil(height / cell) + 1);
  const sizes = new Int32Array(cols * rows + 1);
  const { id, x0, y0, x1, y1 } = boxes;
  // Big boxes are listed, not put in cells.
  const big = new Uint8Array(boxes.length);
  let bigCount = 0;
  // Each box's range of cells (first column, last column, first row, last row), its cells
  // counted then filled: loops over its range, not a call per cell.
  const range = new Int32Array(4 * boxes.length);
  for (let j = 0; j < boxes.length; j++) {
    if ((x1[j] - x0[j]) / cell > BIG_CELLS || (y1[j] - y0[j]) / cell > BIG_CELLS) {
      big[j] = 1;
      bigCount++;
      continue;
    }
    range[4 * j] = cellOf(x0[j], cell, cols);
    range[4 * j + 1] = cellOf(x1[j], cell, cols);
    range[4 * j + 2] = cellOf(y0[j], cell, rows);
    range[4 * j + 3] = cellOf(y1[j], cell, rows);
    for (let r = range[4 * j + 2]; r <= range[4 * j + 3]; r++) {
      for (let c = range[4 * j]; c <= range[4 * j + 1]; c++) {
        sizes[r * cols + c + 1]++;
      }
    }
  }
  for (let c = 0; c < cols * rows; c++) {
    sizes[c + 1] += sizes[c];
  }
  const start = sizes.slice();
  const ids = new Int32Array(sizes[cols * rows]);
  const bigIds = new Int32Array(bigCount);
  const bigBoxes = new Float64Array(4 * bigCount);
  for (let j = 0, b = 0; j < boxes.length; j++) {
    if (big[j]) {
      bigIds[b] = id[j];
      bigBoxes[4 * b] = x0[j];
      bigBoxes[4 * b + 1] = y0[j];
      bigBoxes[4 * b + 2] = x1[j];
      bigBoxes[4 * b++ + 3] = y1[j];
      continue;
    }
    for (let r = range[4 * j + 2]; r <= range[4 * j + 3]; r++) {
      for (let c = range[4 * j]; c <= range[4 * j + 1]; c++) {
        ids[sizes[r * cols + c]++] = id[j];
      }
    }
  }
  return { count, cols, rows, cell, start, ids, bigIds, bigBoxes };
}

/** The column (row) of the cells that `v` falls in, clamped to the `n` of the grid. */
function cellOf(v: number, cell: number, n: number): number {
  return Math.max(0, Math.min(n - 1, Math.floor(v / cell)));
}

/** Calls `visit(c)` for each cell c that the box meets (clamped to the grid). */
function visitCells(
  g: { cols: number; rows: number; cell: number },
  x0: number,
  y0: number,
  x1: number,
  y1: number,
  visit: (c: number) => void
): void {
  const c0 = cellOf(x0, g.cell, g.cols);
  const c1 = cellOf(x1, g.cell, g.cols);
  const r0 = cellOf(y0, g.cell, g.rows);
  const r1 = cellOf(y1, g.cell, g.rows);
  for (let r = r0; r <= r1; r++) {
    for (let c = c0; c <= c1; c++) {
      visit(r * g.cols + c);
    }
  }
}

export class SpatialGrid {
  /** The last query that saw each thing: each is reported once per query. */
  private readonly stamp: Int32Array;
  private query = 0;

  constructor(readonly cells: GridCells) {
    this.stamp = new Int32Array(cells.count);
  }

  /** The things whose boxes meet the rectangle (and a few near it), in increasing order. */
  within(x0: number, y0: number, x1: number, y1: number): number[] {
    const q = ++this.query;
    const out: number[] = [];
    const { bigIds, bigBoxes: b, start, ids } = this.cells;
    for (let k = 0; k < bigIds.length; k++) {
      const id = bigIds[k];
      if (b[4 * k] <= x1 && b[4 * k + 1] <= y1 && b[4 * k + 2] >= x0 && b[4 * k + 3] >= y0 && this.stamp[id] !== q) {
        this.stamp[id] = q;
        out.push(id);
      }
    }
    visitCells(this.cells, x0, y0, x1, y1, c => {
      for (let k = start[c]; k < start[c + 1]; k++) {
        const id = ids[k];
        if (this.stamp[id] !== q) {
          this.stamp[id] = q;
          out.push(id);
        }
      }
    });
    return out.sort((a, b) => a - b);
  }
}
