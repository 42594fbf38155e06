/**
 * A grid of square cells over a scene, each listing the things (items, groups, edge
 * segments) whose box meets it: what is in a rectangle is found by visiting its cells
 * only, so a frame or a hit test costs what is in view, not what is in the scene.
 */

const BIG_CELLS = 16;

export class SpatialGrid {
  private readonly cols: number;
  private readonly rows: number;
  /** Things of each cell, packed: those of cell c at `ids[start[c]] .. ids[start[c + 1]]`. */
  private readonly start: Int32Array;
  private readonly ids: Int32Array;
  /** The last query that saw each thing: each is reported once per query. */
  private readonly stamp: Int32Array;
  private query = 0;
  /** Boxes that span more than `BIG_CELLS` cells a side (an edge down a layer a million
   * px long): kept in a list, each tested on every query, not in thousands of cells. */
  private readonly bigIds: number[] = [];
  private readonly bigBoxes: number[] = [];

  /** `boxes(add)` calls `add(id, x0, y0, x1, y1)` for each box of each thing (the
   * same twice: once to count, once to fill). */
  constructor(
    readonly count: number,
    width: number,
    height: number,
    readonly cell: number,
    boxes: (add: (id: number, x0: number, y0: number, x1: number, y1: number) => void) => void
  ) {
    this.cols = Math.max(1, Math.ceil(width / cell) + 1);
    this.rows = Math.max(1, Math.ceil(height / cell) + 1);
    const sizes = new Int32Array(this.cols * this.rows + 1);
    const big = (x0: number, y0: number, x1: number, y1: number) =>
      (x1 - x0) / cell > BIG_CELLS || (y1 - y0) / cell > BIG_CELLS;
    boxes((id, x0, y0, x1, y1) => {
      if (big(x0, y0, x1, y1)) {
        this.bigIds.push(id);
        this.bigBoxes.push(x0, y0, x1, y1);
      } else {
        this.cells(x0, y0, x1, y1, c => sizes[c + 1]++);
      }
    });
    for (let c = 0; c < this.cols * this.rows; c++) {
      sizes[c + 1] += sizes[c];
    }
    this.start = sizes.slice();
    this.ids = new Int32Array(sizes[this.cols * this.rows]);
    boxes((id, x0, y0, x1, y1) => {
      if (!big(x0, y0, x1, y1)) {
        this.cells(x0, y0, x1, y1, c => (this.ids[sizes[c]++] = id));
      }
    });
    this.stamp = new Int32Array(count);
  }

  private cells(x0: number, y0: number, x1: number, y1: number, visit: (c: number) => void): void {
    const c0 = this.clamp(Math.floor(x0 / this.cell), this.cols);
    const c1 = this.clamp(Math.floor(x1 / this.cell), this.cols);
    const r0 = this.clamp(Math.floor(y0 / this.cell), this.rows);
    const r1 = this.clamp(Math.floor(y1 / this.cell), this.rows);
    for (let r = r0; r <= r1; r++) {
      for (let c = c0; c <= c1; c++) {
        visit(r * this.cols + c);
      }
    }
  }

  private clamp(k: number, n: number): number {
    return Math.max(0, Math.min(n - 1, k));
  }

  /** The things whose boxes meet the rectangle (and a few near it), in increasing order. */
  within(x0: number, y0: number, x1: number, y1: number): number[] {
    const q = ++this.query;
    const out: number[] = [];
    const b = this.bigBoxes;
    for (let k = 0; k < this.bigIds.length; k++) {
      const id = this.bigIds[k];
      if (b[4 * k] <= x1 && b[4 * k + 1] <= y1 && b[4 * k + 2] >= x0 && b[4 * k + 3] >= y0 && this.stamp[id] !== q) {
        this.stamp[id] = q;
        out.push(id);
      }
    }
    this.cells(x0, y0, x1, y1, c => {
      for (let k = this.start[c]; k < this.start[c + 1]; k++) {
        const id = this.ids[k];
        if (this.stamp[id] !== q) {
          this.stamp[id] = q;
          out.push(id);
        }
      }
    });
    return out.sort((a, b) => a - b);
  }
}
