/** The page's one layout pipeline: an LRU cache in front of a Web Worker running Graphviz,
 * or, where no worker can run, Graphviz on the main thread. */

import { viewToDot } from './dot';
import { LayoutCache, LayoutMode, WorkerLayout, WorkerLike, renderOnThisThread } from './layout';
import { loopsBreakRows, rowsProblem } from './ranks';
import { View, visibleCount } from './visible';

function spawnChunk(): WorkerLike {
  // Written out literally so that webpack 5 emits the worker as its own chunk, loaded from
  // the extension's static folder (its public path is found at run time: `publicPath: 'auto'`).
  // A stable chunk name in dev and production builds (tests and CSP rules can find it).
  return new Worker(
    /* webpackChunkName: "jaxviz_layout_worker" */ new URL('./layout.worker.js', import.meta.url)
  ) as unknown as WorkerLike;
}

let spawn: () => WorkerLike = spawnChunk;

/** Where the worker comes from outside JupyterLab (the standalone viewer: from its own
 * script); set before the first layout. */
export function setWorkerSpawn(spawner: () => WorkerLike): void {
  spawn = spawner;
}

export const layouter = new WorkerLayout(() => spawn(), renderOnThisThread);

const cache = new LayoutCache(dot => layouter.render(dot));

/** Where the last layout ran ('worker' or 'main'), undefined before the first. */
export function layoutMode(): LayoutMode | undefined {
  return layouter.lastMode;
}

/** The laid-out SVG's text (for drawings that are changed before they are shown). */
export function layoutText(dot: string): Promise<string> {
  return cache.svg(dot);
}

/** The most items of a view whose rows are held: the anchors make dot several times
 * slower on a view opened far past its first view (and a view found with its rows
 * broken is laid out twice), where a first view is a few hundred items at most. */
export const ROWS_HELD_MAX = 400;

/** A view laid out: its drawing's text and its DOT. */
export interface LaidText {
  text: string;
  dot: string;
}

/** The drawing of `view`, the program's inputs on the top row and its outputs on the
 * bottom row (on the left and the right, drawn left to right) whatever the view: as dot
 * lays it out, unless that breaks the rows (an open loop's cycle does, known from the
 * view; an item fed by nothing can, seen once laid out), then laid out with them held
 * (`ranks.ts`). The anchors are left out where they are not needed: they would move
 * every item of a drawing whose rows hold already, and each is an edge across the ranks
 * that dot orders as one node per rank (a view of 1,216 items, 512 anchors, lays out
 * about 4x slower). A function of the view and the direction: the same view is drawn
 * the same way however it was reached. */
export async function layoutView(view: View, rankdir: 'TB' | 'LR'): Promise<LaidText> {
  const small = visibleCount(view) <= ROWS_HELD_MAX;
  const held = small && loopsBreakRows(view);
  const dot = viewToDot(view, { rankdir, rows: held });
  const text = await layoutText(dot);
  if (held || !small || !rowsProblem(text, view, rankdir)) {
    return { text, dot };
  }
  const anchored = viewToDot(view, { rankdir, rows: true });
  return { text: await layoutText(anchored), dot: anchored };
}
