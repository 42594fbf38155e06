/** What a layout worker runs: Graphviz (WebAssembly) off the page's main thread. Answers
 * `{id, dot}` with `{id, svg}`, or `{id, error}` when Graphviz rejects the DOT, or
 * `{id, error, fatal: true}` when Graphviz cannot be loaded here at all. Shared by the
 * JupyterLab extension's worker chunk and the standalone viewer, whose one script is also
 * its own worker. */

import type { Viz } from '@viz-js/viz';

import type { LayoutReply, LayoutRequest } from './layout';
import { LayeredInput, LayeredOutput, layered } from './layered';
import { SceneIndex, indexBuffers, sceneIndexOf } from './sceneindex';

export interface WorkerScope {
  onmessage: ((ev: { data: LayoutRequest }) => void) | null;
  postMessage(message: LayoutReply, transfer?: Transferable[]): void;
}

/** A view laid out by the layered layout, with what the canvas looks things up in. */
export interface LaidScene {
  layout: LayeredOutput;
  index: SceneIndex;
}

/** The layered layout of `input` and its index (in the worker, or on the page where no
 * worker runs). */
export function layOutScene(input: LayeredInput, progress?: (done: number, total: number) => void): LaidScene {
  const layout = layered(input, progress);
  return { layout, index: sceneIndexOf(input, layout) };
}

/** The buffers of a laid-out scene: transferred to the page, not copied. */
function sceneBuffers({ layout, index }: LaidScene): ArrayBuffer[] {
  const { itemX, itemY, clusterX, clusterY, clusterW, clusterH, routeStart, routePoints } = layout;
  const arrays = [itemX, itemY, clusterX, clusterY, clusterW, clusterH, routeStart, routePoints];
  return [...new Set([...arrays.map(a => a.buffer as ArrayBuffer), ...indexBuffers(index)])];
}

export function serveLayouts(scope: WorkerScope): void {
  let vizPromise: Promise<Viz> | null = null;
  const viz = (): Promise<Viz> => {
    if (!vizPromise) {
      vizPromise = import('@viz-js/viz').then(m => m.instance());
    }
    return vizPromise;
  };
  scope.onmessage = async ev => {
    const { id, dot } = ev.data;
    if (ev.data.layered) {
      answerLayered(scope, id, ev.data);
      return;
    }
    let instance: Viz;
    try {
      instance = await viz();
    } catch (err) {
      scope.postMessage({ id, error: `Graphviz did not load: ${(err as Error).message ?? err}`, fatal: true });
      return;
    }
    try {
      scope.postMessage({ id, svg: instance.renderString(dot ?? '', { engine: 'dot', format: 'svg' }) });
    } catch (err) {
      scope.postMessage({ id, error: (err as Error).message ?? String(err) });
    }
  };
}

/** A layout quicker than this (ms) tells no progress: the page has other work meanwhile. */
const QUIET_MS = 100;

/** The layered layout needs no Graphviz: answered at once, with progress on the way (at
 * most every 5 %, once it has taken `QUIET_MS`). */
function answerLayered(scope: WorkerScope, id: number, request: LayoutRequest): void {
  let told = 0;
  const t0 = performance.now();
  try {
    const laid = layOutScene(request.layered!, (done, total) => {
      if (done / total - told >= 0.05 && performance.now() - t0 > QUIET_MS) {
        told = done / total;
        scope.postMessage({ id, progress: told });
      }
    });
    scope.postMessage({ id, layered: laid.layout, index: laid.index }, sceneBuffers(laid));
  } catch (err) {
    scope.postMessage({ id, error: (err as Error).message ?? String(err) });
  }
}
