/** What the pointer is over: the tooltip of the item, edge or open group under it, in a
 * Graphviz drawing or on the canvas. */

import { GraphModel } from './model';
import { SceneCanvas } from './scenecanvas';
import { Tooltip, TooltipContent, clusterTooltip, edgeTooltip, itemTooltip } from './tooltip';

/** What the pointer is over on the canvas scene (null: nothing). */
export function sceneHit(scene: SceneCanvas | null, canvas: HTMLElement, ev: MouseEvent) {
  const c = canvas.getBoundingClientRect();
  return scene?.hit(ev.clientX - c.left, ev.clientY - c.top) ?? null;
}

/** The tooltip of what is under the pointer in a Graphviz drawing. */
export function drawingTip(model: GraphModel, ev: MouseEvent): TooltipContent | null {
  const target = ev.target as Element | null;
  const nodeEl = target?.closest('g.node');
  const edgeEl = nodeEl ? null : target?.closest('g.edge');
  const clusterId = nodeEl || edgeEl ? null : target?.closest('.jaxviz-cluster-label')?.getAttribute('data-cluster');
  if (nodeEl) {
    return itemTooltip(model, nodeEl.id);
  }
  if (edgeEl) {
    return edgeTooltip(model, edgeEl.id);
  }
  return clusterId ? clusterTooltip(model.index!, Number(clusterId.slice('cluster_g'.length))) : null;
}

/** The tooltip of what is under the pointer on the canvas; the pointer a hand over what
 * a click opens or closes. What is under it. */
export function hoverScene(
  model: GraphModel,
  scene: SceneCanvas,
  canvas: HTMLElement,
  tooltip: Tooltip,
  ev: MouseEvent
): ReturnType<typeof sceneHit> {
  const hit = sceneHit(scene, canvas, ev);
  const drawn = scene.scene;
  let content: TooltipContent | null = null;
  if (hit?.kind === 'item') {
    content = itemTooltip(model, hit.id);
  } else if (hit?.kind === 'label') {
    content = clusterTooltip(model.index!, hit.gid);
  } else if (hit?.kind === 'edge') {
    const src = drawn.items[drawn.edgeSrc[hit.index]];
    const dst = drawn.items[drawn.edgeDst[hit.index]];
    content = edgeTooltip(model, `e_${src}_${dst}`);
  }
  canvas.classList.toggle('jp-jaxviz-pointing', hit?.kind === 'item' ? hit.id[0] === 'g' : hit?.kind === 'label');
  tooltip.showOrHide(content, ev);
  return hit;
}
