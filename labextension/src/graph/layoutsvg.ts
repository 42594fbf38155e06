/** The page's one layout pipeline: an LRU cache in front of a Web Worker running Graphviz,
 * or, where no worker can run, Graphviz on the main thread. */

import { LayoutCache, LayoutMode, WorkerLayout, WorkerLike, renderOnThisThread } from './layout';

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
