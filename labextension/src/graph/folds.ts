/**
 * The model's repeated layers as a view shows them: folds (`Block ×12`) and loops named
 * after their step with a trip count (`_update_step ×3 (scan)`). The kernel's rule
 * (`Graph.is_fold` in jaxviz/graph.py) on the same payload: the first view is chosen so
 * that they are on its first screen, and the viewer opens on them (`viewport.ts`).
 */

import { GraphJSON } from '../shared/payload';

/** Whether a group reads as repeated layers: a fold of layers (not of source lines, nor
 * of one operation: `where ×3`), or a loop named after the function it runs, with its
 * trip count. */
export function isFold(graph: GraphJSON, gid: number): boolean {
  const g = graph.groups[gid];
  if (g.kind === 'repeat') {
    const layer = g.groups.length > 0 ? graph.groups[g.groups[0]] : undefined;
    return layer !== undefined && layer.kind !== 'line' && operations(layer) > 1;
  }
  const holder = g.holder;
  if (holder === undefined || holder === null) {
    return false;
  }
  const node = graph.nodes[holder];
  return !!node && g.name !== node.primitive && node.params?.length !== undefined;
}

/** The operations a group computes: one for a call of JAX's helper (`where`, whatever it
 * does inside), else its equations but the one it is drawn for (its holder: a
 * `custom_jvp_call`'s); `Graph.operations`. */
function operations(g: GraphJSON['groups'][number]): number {
  if (g.helper) {
    return 1;
  }
  return g.n_eqns - (g.holder === undefined || g.holder === null ? 0 : 1);
}

/** The folds a view with `expanded` open shows (as open groups or as boxes), outermost
 * first, each before the folds inside it. */
export function shownFolds(graph: GraphJSON, expanded: ReadonlySet<number>): number[] {
  const root = graph.root ?? 0;
  const folds: number[] = [];
  const visit = (gid: number): void => {
    for (const child of graph.groups[gid].groups) {
      if (isFold(graph, child)) {
        folds.push(child);
      }
      if (expanded.has(child)) {
        visit(child);
      }
    }
  };
  if (expanded.has(root)) {
    visit(root);
  }
  return folds;
}
