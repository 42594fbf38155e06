/**
 * What the graph widget shows, written on its element for tests and automation: the
 * open groups, the item count, the layout and how the drawing came to be (`data-jaxviz-*`),
 * and, on a canvas, where each item is and the text sizes drawn.
 */

import { SceneCanvas } from './scenecanvas';

export interface Shown {
  expanded: number[];
  items: number;
  layout: string;
  rankdir: string;
  arranged: string;
  /** The layered layout's time (canvas only). */
  layoutMs?: number;
}

export function reportShown(node: HTMLElement, shown: Shown): void {
  const data = node.dataset;
  data.jaxvizExpanded = shown.expanded.join(',');
  data.jaxvizItems = String(shown.items);
  data.jaxvizLayout = shown.layout;
  data.jaxvizRankdir = shown.rankdir;
  data.jaxvizArranged = shown.arranged;
  if (shown.layoutMs !== undefined) {
    data.jaxvizLayoutMs = shown.layoutMs.toFixed(1);
  }
}

/** On the canvas element: where an item is on the page, the text heights and the
 * time a frame takes to draw. */
export function addSceneHooks(drawn: SceneCanvas, pageRect: (id: string) => DOMRect | null): void {
  const hooks = drawn.element as unknown as {
    jaxvizRect: (id: string) => DOMRect | null;
    jaxvizTextHeights: () => number[];
    jaxvizDrawMs: () => number;
  };
  hooks.jaxvizRect = pageRect;
  hooks.jaxvizTextHeights = () => drawn.textHeights();
  hooks.jaxvizDrawMs = () => drawn.drawMs / Math.max(1, drawn.frames);
}
