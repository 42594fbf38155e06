/** Graphviz (compiled to WebAssembly, bundled: no network, no `dot` needed) → SVG. */

import type { Viz } from '@viz-js/viz';

let vizPromise: Promise<Viz> | null = null;

/** The one Graphviz instance, loaded on first use (the module is large). */
export function graphviz(): Promise<Viz> {
  if (!vizPromise) {
    vizPromise = import(/* webpackChunkName: "viz" */ '@viz-js/viz').then(m => m.instance());
    vizPromise.catch(() => {
      vizPromise = null;
    });
  }
  return vizPromise;
}

export async function layoutSvg(dot: string): Promise<SVGSVGElement> {
  const viz = await graphviz();
  return viz.renderSVGElement(dot, { engine: 'dot' });
}
