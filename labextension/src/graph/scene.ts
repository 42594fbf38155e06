/**
 * A view as a scene for the canvas: its items, open groups and edges with the looks that
 * the DOT gives them (the same attribute functions, `dot.ts`: the same labels, colours
 * and shapes at every size), sized as Graphviz would size them, and the structure that the
 * layered layout (`layered.ts`) needs. No DOM: built on the page, laid out in the worker.
 */

import { GraphJSON } from '../shared/payload';
import { boxAttrs, chainClusterAttrs, legendOf, nodeAttrs } from './dot';
import { PT_TO_PX } from './geometry';
import { LayeredInput } from './layered';
import { CANVAS_FILL, CANVAS_LINE, DOT_EDGE, DOT_NODE, HEAT_DARK_TEXT } from '../shared/visual';
import { ItemId, View, edgeIsWeak, groupItem, nodeItem, openChain, visibleItems } from './visible';

/** How an item or an open group is drawn. */
export interface Look {
  lines: string[];
  fill: string;
  font: string;
  /** Outline colour and width (px at zoom 1). */
  stroke: string;
  lineWidth: number;
  /** Font size, px at zoom 1. */
  fontPx: number;
  shape: string;
  rounded: boolean;
  dashed: boolean;
  peripheries: number;
}

export interface Scene {
  /** `n<id>` / `g<id>` of each item; `cluster_g<id>` of each cluster (an open group, or the
   * outermost of a chain of open groups that only wrap one another, as the DOT draws it). */
  items: ItemId[];
  itemLooks: Look[];
  /** Each item's kind: a node's (`eqn`, `input`, …) or a box's group kind. */
  itemKinds: string[];
  clusters: number[];
  /** The open groups each cluster draws, outermost first (one, but for a chain). */
  clusterChains: number[][];
  clusterLooks: Look[];
  /** Edges between items (indices), and whether each is weakly typed. */
  edgeSrc: Int32Array;
  edgeDst: Int32Array;
  edgeWeak: Uint8Array;
  /** Indices into the view's edges, per scene edge. */
  layout: LayeredInput;
}

const NODE_FONT_PX = parseFloat(DOT_NODE.fontsize) * PT_TO_PX;
const NODE_MIN_H = parseFloat(DOT_NODE.height) * 72 * PT_TO_PX;
const [MARGIN_X, MARGIN_Y] = DOT_NODE.margin.split(',').map(m => parseFloat(m) * 72 * PT_TO_PX);
/** Helvetica's mean advance per character (em): the widths are estimates, text that would
 * overflow is narrowed when drawn. */
const CHAR_EM = 0.58;
export const LINE_HEIGHT = 1.2;
export const EDGE_COLOR = DOT_EDGE.color;

function look(a: { [key: string]: string }, fontPx: number): Look {
  const style = a.style ?? '';
  return {
    lines: (a.label ?? '').split('\n'),
    fill: a.fillcolor ?? CANVAS_FILL,
    font: a.fontcolor ?? HEAT_DARK_TEXT,
    stroke: a.color ?? CANVAS_LINE,
    lineWidth: parseFloat(a.penwidth ?? '1') * PT_TO_PX * 0.75,
    fontPx: a.fontsize ? parseFloat(a.fontsize) * PT_TO_PX : fontPx,
    shape: a.shape ?? 'box',
    rounded: style.includes('rounded'),
    dashed: style.includes('dashed'),
    peripheries: parseInt(a.peripheries ?? '1', 10)
  };
}

/** A text's width (px) at `fontPx`, as estimated for layout. */
export function textWidth(text: string, fontPx: number): number {
  return text.length * CHAR_EM * fontPx;
}

function itemSize(l: Look): { w: number; h: number } {
  const width = Math.max(...l.lines.map(t => textWidth(t, l.fontPx)));
  const extra = l.shape === 'box3d' ? 4 : l.shape.includes('house') ? l.fontPx : 0;
  return {
    w: Math.max(NODE_MIN_H * 1.5, width + 2 * MARGIN_X + extra),
    h: Math.max(NODE_MIN_H, l.lines.length * l.fontPx * LINE_HEIGHT + 2 * MARGIN_Y + extra)
  };
}

type Sized = { look: Look; w: number; h: number };

/** Each graph's looks and sizes, by node, by group (as a box) and by chain of open groups
 * (`>`-joined ids): they depend on the graph alone, so a view opened from another reuses
 * them (opening a group in place then costs what it shows anew). By index where the key
 * is a number: ten thousand items a view, not ten thousand strings made and hashed. */
const looksOf = new WeakMap<GraphJSON, { nodes: Sized[]; groups: Sized[]; chains: Map<string, Sized> }>();

function looksOfGraph(graph: GraphJSON): { nodes: Sized[]; groups: Sized[]; chains: Map<string, Sized> } {
  let looks = looksOf.get(graph);
  if (!looks) {
    looks = { nodes: [], groups: [], chains: new Map() };
    looksOf.set(graph, looks);
  }
  return looks;
}

function sizedLook(attrs: { [key: string]: string }): Sized {
  const l = look(attrs, NODE_FONT_PX);
  return { look: l, ...itemSize(l) };
}

/** How a chain of open groups is drawn, as a cluster (kept in `kept`). */
function chainLook(graph: GraphJSON, kept: Map<string, Sized>, chain: number[]): Look {
  const key = chain.join('>');
  let found = kept.get(key);
  if (!found) {
    found = sizedLook(chainClusterAttrs(graph, chain));
    kept.set(key, found);
  }
  return found.look;
}

/** The open groups drawn as clusters, parents first, as the DOT draws them (`dot.ts`):
 * a chain of open groups that only wrap one another (`openChain`) is one cluster, the
 * outermost's, holding what the innermost holds. Each open group's cluster index. */
function chainClusters(view: View): { clusters: number[]; chains: number[][]; clusterIndex: Map<number, number> } {
  const groups = view.index.graph.groups;
  const root = view.index.graph.root ?? 0;
  const clusters: number[] = [];
  const chains: number[][] = [];
  const clusterIndex = new Map<number, number>();
  const stack = [root];
  while (stack.length) {
    let gid = stack.pop()!;
    if (gid !== root) {
      const chain = openChain(view, gid);
      chain.forEach(g => clusterIndex.set(g, clusters.length));
      clusters.push(gid);
      chains.push(chain);
      gid = chain[chain.length - 1];
    }
    const kids = groups[gid].groups.filter(c => view.expanded.has(c));
    stack.push(...kids.reverse());
  }
  return { clusters, chains, clusterIndex };
}

/** Which band a root-level item of this kind is ranked in: 1 the inputs (first), 2 the
 * outputs (last), 0 the rest. */
function rootRankOf(kind: string): number {
  return kind === 'inputs' || kind === 'input' || kind === 'const' ? 1 : kind.startsWith('output') ? 2 : 0;
}

/** Each item's size, holding cluster and (at the root) rank band into `layout`. */
function fillItemPlacement(
  layout: LayeredInput,
  graph: GraphJSON,
  items: ItemId[],
  sized: { w: number; h: number }[],
  holder: (gid: number | null) => number
): void {
  const root = graph.root ?? 0;
  items.forEach((id, k) => {
    layout.itemW[k] = sized[k].w;
    layout.itemH[k] = sized[k].h;
    const isGroup = id[0] === 'g';
    const num = Number(id.slice(1));
    const parent = isGroup ? graph.groups[num].parent : graph.nodes[num].group;
    layout.itemParent[k] = holder(parent);
    if (parent === root) {
      layout.itemRank[k] = rootRankOf(isGroup ? graph.groups[num].kind : graph.nodes[num].kind);
    }
  });
}

/** Each edge's item ends into `layout` (-1 for an end not drawn); which edges are weak. */
function fillEdgeEnds(layout: LayeredInput, view: View, itemIndex: Map<ItemId, number>): Uint8Array {
  const edgeWeak = new Uint8Array(view.edges.length);
  view.edges.forEach((e, k) => {
    layout.edgeSrc[k] = itemIndex.get(e.src) ?? -1;
    layout.edgeDst[k] = itemIndex.get(e.dst) ?? -1;
    edgeWeak[k] = edgeIsWeak(e) ? 1 : 0;
  });
  return edgeWeak;
}

/** The scene of a view: the items in DOT order, the open groups parents first. */
export function sceneOf(view: View, rankdir: 'TB' | 'LR'): Scene {
  const graph: GraphJSON = view.index.graph;
  let legend: ReturnType<typeof legendOf> | null = null;
  const root = graph.root ?? 0;
  const { nodes, groups } = visibleItems(view);
  const items: ItemId[] = [...groups.map(groupItem), ...nodes.map(nodeItem)];
  const looks = looksOfGraph(graph);
  const sized = [
    ...groups.map(g => (looks.groups[g] ??= sizedLook(boxAttrs(graph, g)))),
    ...nodes.map(n => (looks.nodes[n] ??= sizedLook(nodeAttrs(graph, n, (legend ??= legendOf(graph))))))
  ];
  const itemLooks = sized.map(s => s.look);
  const itemKinds = [...groups.map(g => graph.groups[g].kind), ...nodes.map(n => graph.nodes[n].kind)];
  const { clusters, chains, clusterIndex } = chainClusters(view);
  const clusterLooks = chains.map(chain => chainLook(graph, looks.chains, chain));
  const holder = (gid: number | null) => (gid === null || gid === root ? -1 : (clusterIndex.get(gid) ?? -1));
  const n = items.length;
  const layout: LayeredInput = {
    itemW: new Float64Array(n),
    itemH: new Float64Array(n),
    itemParent: new Int32Array(n),
    itemRank: new Uint8Array(n),
    clusterParent: Int32Array.from(clusters, g => holder(graph.groups[g].parent)),
    labelW: Float64Array.from(clusterLooks, l => textWidth(l.lines[0], l.fontPx)),
    labelH: Float64Array.from(clusterLooks, l => l.fontPx * LINE_HEIGHT),
    edgeSrc: new Int32Array(view.edges.length),
    edgeDst: new Int32Array(view.edges.length),
    rankdir
  };
  fillItemPlacement(layout, graph, items, sized, holder);
  const edgeWeak = fillEdgeEnds(layout, view, new Map(items.map((id, k) => [id, k])));
  return {
    items,
    itemLooks,
    itemKinds,
    clusters,
    clusterChains: chains,
    clusterLooks,
    edgeSrc: layout.edgeSrc,
    edgeDst: layout.edgeDst,
    edgeWeak,
    layout
  };
}
