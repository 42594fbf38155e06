/**
 * The standalone viewer: the same interactive graph as the JupyterLab renderer, for pages
 * without the extension (VS Code, Colab, Notebook 7 without it, nbconvert HTML exports).
 * Bundled into one script (`jaxviz/static/viewer.js`, Graphviz WASM inlined) that the
 * kernel puts in a graph output's HTML once per page.
 *
 * The one script is also its own layout worker: on a page it keeps its source and starts a
 * worker from it (a Blob URL); in that worker it only answers layouts. The page part is
 * imported lazily, so that the worker never evaluates DOM code.
 */

import { WorkerScope, serveLayouts } from '../graph/layoutserver';

declare const JAXVIZ_VERSION: string;

if (typeof document === 'undefined') {
  serveLayouts(self as unknown as WorkerScope);
} else {
  // Read now: `currentScript` is only set while this script runs.
  const source = document.currentScript?.textContent || null;
  void import('./viewer').then(m => m.install(JAXVIZ_VERSION, source));
}
