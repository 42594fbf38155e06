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

/**
 * Laid-out SVG per DOT source, most recently used last. A view's DOT is a function of its
 * expansion state, so opening a group and closing it again (or going back to an earlier
 * state) shows the earlier layout at once, in the same place, instead of laying out again.
 */
export class LayoutCache {
  private readonly entries = new Map<string, string>();
  hits = 0;
  misses = 0;

  constructor(
    private readonly render: (dot: string) => string | Promise<string>,
    readonly capacity = 24
  ) {}

  async svg(dot: string): Promise<string> {
    const cached = this.entries.get(dot);
    if (cached !== undefined) {
      this.hits++;
      this.entries.delete(dot); // re-insert: most recently used last
      this.entries.set(dot, cached);
      return cached;
    }
    this.misses++;
    const svg = await this.render(dot);
    this.entries.set(dot, svg);
    while (this.entries.size > this.capacity) {
      this.entries.delete(this.entries.keys().next().value as string);
    }
    return svg;
  }

  get size(): number {
    return this.entries.size;
  }
}

const cache = new LayoutCache(async dot => (await graphviz()).renderString(dot, { engine: 'dot', format: 'svg' }));

export async function layoutSvg(dot: string): Promise<SVGSVGElement> {
  const text = await cache.svg(dot);
  const doc = new DOMParser().parseFromString(text, 'image/svg+xml');
  const error = doc.querySelector('parsererror');
  if (error) {
    throw new Error(`Graphviz returned SVG that does not parse: ${error.textContent ?? ''}`);
  }
  return doc.documentElement as unknown as SVGSVGElement;
}
