/**
 * What keeps a view's dataflow reading top to bottom in dot's layout, as render/dot.py
 * writes it (`loop_edges`, `_emit_row_anchors`): an open loop's equation node is its
 * entry, and the program's inputs stand on the top row and its outputs on the bottom row.
 */

import { ItemId, View, VisibleEdge, itemInGroup, openChain, parseItem, visibleItems } from './visible';

/** The invisible nodes on the program's top row (its inputs) and bottom row (its outputs):
 * dot's `newrank` (which lets clusters share ranks) ignores `rank=source` and `rank=sink`,
 * so every other item is ranked below (above) the anchor by an edge. */
export const ROW_ANCHORS = { source: 'inputs_row', sink: 'outputs_row' } as const;

/** An open loop (a scan, a while, a pmap) whose equation's node feeds its body and takes
 * its results back is a cycle, which dot breaks where it likes: the equation lands below
 * its body, and the program's inputs beside it rather than on the top row. Its node is
 * the loop's entry: the edges of the results back into it do not rank (`back`, drawn
 * upward), and what reads the loop's results stands below its body (`exits`: per loop,
 * the items whose results go back and the items outside it that read its results). */
export function loopEdges(view: View): { back: Set<VisibleEdge>; exits: [ItemId[], ItemId[]][] } {
  const graph = view.index.graph;
  const holders = new Map<string, number>();
  for (const gid of view.expanded) {
    const holder = graph.groups[gid].holder;
    if (holder !== undefined && holder !== null) {
      holders.set(`n${holder}`, gid);
    }
  }
  const feeds = new Set<string>();
  const back = new Map<string, VisibleEdge[]>();
  const readers = new Map<string, Set<ItemId>>();
  for (const e of view.edges) {
    const fed = holders.get(e.src);
    if (fed !== undefined) {
      if (itemInGroup(view.index, e.dst, fed)) {
        feeds.add(e.src);
      } else {
        readers.set(e.src, (readers.get(e.src) ?? new Set()).add(e.dst));
      }
    }
    const taking = holders.get(e.dst);
    if (taking !== undefined && e.src !== e.dst && itemInGroup(view.index, e.src, taking)) {
      back.set(e.dst, [...(back.get(e.dst) ?? []), e]);
    }
  }
  const looping = [...back.keys()].filter(h => feeds.has(h));
  return {
    back: new Set(looping.flatMap(h => back.get(h)!)),
    exits: looping
      .filter(h => readers.has(h))
      .map(h => [[...new Set(back.get(h)!.map(e => e.src))].sort(), [...readers.get(h)!].sort()])
  };
}

/** The items of the program's top row (its inputs: nodes and closed boxes) and of its
 * bottom row (its outputs). */
export function edgeRows(view: View): { source: Set<ItemId>; sink: Set<ItemId> } {
  const graph = view.index.graph;
  const root = graph.groups[graph.root ?? 0];
  const rows = { source: new Set<ItemId>(), sink: new Set<ItemId>() };
  for (const n of root.nodes) {
    const kind = graph.nodes[n].kind;
    if (kind === 'input' || kind === 'const') {
      rows.source.add(`n${n}`);
    } else if (kind === 'output') {
      rows.sink.add(`n${n}`);
    }
  }
  for (const c of root.groups) {
    const kind = graph.groups[c].kind;
    if (!view.expanded.has(c) && (kind === 'inputs' || kind === 'outputs')) {
      rows[kind === 'inputs' ? 'source' : 'sink'].add(`g${c}`);
    }
  }
  return rows;
}

/** The `minlen` of an edge between the top or bottom row and `item` inside open groups: a
 * rank more per open group around it (a title and a margin each), so that the groups'
 * borders stay clear of the row; null for an item outside every open group. */
export function rowMinlen(view: View, item: ItemId): number | null {
  const graph = view.index.graph;
  const root = graph.root ?? 0;
  const { kind, id } = parseItem(item);
  let group: number | null = kind === 'n' ? graph.nodes[id].group : graph.groups[id].parent;
  let clusters = 0;
  while (group !== null && group !== root) {
    const parent: number | null = graph.groups[group].parent;
    // a group that only wraps its one open child is drawn as one cluster with it
    if (parent === null || parent === root || openChain(view, parent)[1] !== group) {
      clusters++;
    }
    group = parent;
  }
  return clusters ? 1 + clusters : null;
}

/** The invisible edges that put the inputs on the top row and the outputs on the bottom
 * row: from the top row's anchor into each item that no edge ranks below another, and
 * from each item with no edge out of it to the bottom row's anchor. */
export function rowAnchorEdges(view: View, back: Set<VisibleEdge>): [string, string][] {
  const rows = edgeRows(view);
  const { nodes, groups } = visibleItems(view);
  const items = [...nodes.map(n => `n${n}`), ...groups.map(g => `g${g}`)].sort();
  const ranked = view.edges.filter(e => !back.has(e) && e.src !== e.dst);
  const out: [string, string][] = [];
  if (rows.source.size) {
    const fed = new Set(ranked.map(e => e.dst));
    items.filter(i => !fed.has(i) && !rows.source.has(i)).forEach(i => out.push([ROW_ANCHORS.source, i]));
  }
  if (rows.sink.size) {
    const feeding = new Set(ranked.map(e => e.src));
    items.filter(i => !feeding.has(i) && !rows.sink.has(i)).forEach(i => out.push([i, ROW_ANCHORS.sink]));
  }
  return out;
}
