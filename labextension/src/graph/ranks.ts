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

/** Whether an open loop's cycle breaks the rows (`loopEdges`): dot then draws the loop's
 * node below its body and the program's inputs beside it. Elsewhere dot keeps the rows
 * by itself unless an item fed by nothing stands above the inputs (`rowsProblem`). */
export function loopsBreakRows(view: View): boolean {
  return loopEdges(view).back.size > 0;
}

type Box = { lo: number; hi: number };

/** The extent along the rank direction (y for TB, x for LR) of each node, box and open
 * group of a Graphviz SVG drawing, by id, from the coordinates of its shapes. */
function rankExtents(svg: string, rankdir: 'TB' | 'LR'): Map<string, Box> {
  const out = new Map<string, Box>();
  const axis = rankdir === 'LR' ? 0 : 1;
  const item = /<g id="([^"]+)" class="(?:node|cluster)\b[^"]*">([\s\S]*?)<\/g>/g;
  for (const [, id, body] of svg.matchAll(item)) {
    const values: number[] = [];
    for (const [, list] of body.matchAll(/\s(?:points|d)="([^"]*)"/g)) {
      const pairs = list.match(/-?\d+(?:\.\d+)?,-?\d+(?:\.\d+)?/g) ?? [];
      pairs.forEach(p => values.push(Number(p.split(',')[axis])));
    }
    for (const [, cx, cy, rx, ry] of body.matchAll(
      /<ellipse[^>]*cx="([^"]+)" cy="([^"]+)" rx="([^"]+)" ry="([^"]+)"/g
    )) {
      const [c, r] = axis ? [Number(cy), Number(ry)] : [Number(cx), Number(rx)];
      values.push(c - r, c + r);
    }
    if (values.length) {
      out.set(id, { lo: Math.min(...values), hi: Math.max(...values) });
    }
  }
  return out;
}

/** Where a drawing of `view` (Graphviz SVG text) breaks the rows: the inputs (top row,
 * `edgeRows`) that reach past the start of what else is drawn (its top, drawn top to
 * bottom; its left, drawn left to right) and the outputs that stand before its end;
 * null when none does. */
export function rowsProblem(svg: string, view: View, rankdir: 'TB' | 'LR' = 'TB'): string | null {
  const rows = edgeRows(view);
  const at = rankExtents(svg, rankdir);
  const drawn = [...at.entries()].filter(([id]) => /^(cluster_)?[ng]\d+$/.test(id));
  const rest = drawn.filter(([id]) => !rows.source.has(id) && !rows.sink.has(id)).map(([, b]) => b);
  if (!rest.length) {
    return null;
  }
  const start = Math.min(...rest.map(b => b.lo));
  const end = Math.max(...rest.map(b => b.hi));
  const late = drawn.filter(([id, b]) => rows.source.has(id) && b.hi > start + 1).map(([id]) => id);
  const early = drawn.filter(([id, b]) => rows.sink.has(id) && b.lo < end - 1).map(([id]) => id);
  return late.length || early.length ? `inputs off the first row ${late}, outputs off the last ${early}` : null;
}
