/** The layout worker: Graphviz (WebAssembly) off the page's main thread. Answers
 * `{id, dot}` with `{id, svg}`, or `{id, error}` when Graphviz rejects the DOT, or
 * `{id, error, fatal: true}` when Graphviz cannot be loaded here at all. */

import type { Viz } from '@viz-js/viz';

import type { LayoutReply, LayoutRequest } from './layout';

interface WorkerScope {
  onmessage: ((ev: { data: LayoutRequest }) => void) | null;
  postMessage(message: LayoutReply): void;
}

const scope = self as unknown as WorkerScope;

let vizPromise: Promise<Viz> | null = null;

function viz(): Promise<Viz> {
  if (!vizPromise) {
    vizPromise = import('@viz-js/viz').then(m => m.instance());
  }
  return vizPromise;
}

scope.onmessage = async ev => {
  const { id, dot } = ev.data;
  let instance: Viz;
  try {
    instance = await viz();
  } catch (err) {
    scope.postMessage({ id, error: `Graphviz did not load: ${(err as Error).message ?? err}`, fatal: true });
    return;
  }
  try {
    scope.postMessage({ id, svg: instance.renderString(dot, { engine: 'dot', format: 'svg' }) });
  } catch (err) {
    scope.postMessage({ id, error: (err as Error).message ?? String(err) });
  }
};
