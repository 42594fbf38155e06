/**
 * Views of the graph model: which items are visible for a set of expanded groups,
 * and the edges between them, aggregated. A port of `Graph.view` in
 * `jaxviz/graph.py` (same items, same edges): expanded groups are clusters, collapsed
 * groups single boxes. Building a view touches only what is visible, so expanding one
 * group of a huge program stays cheap.
 *
 * Items are named like the DOT ids of the kernel's renderer: `n<node id>` for a
 * node, `g<group id>` for a collapsed group.
 */

import { Aval, GraphJSON } from '../shared/payload';

export type ItemId = string;

export function nodeItem(id: number): ItemId {
  return `n${id}`;
}

export function groupItem(id: number): ItemId {
  return `g${id}`;
}

export function parseItem(item: ItemId): { kind: 'n' | 'g'; id: number } {
  return { kind: item[0] as 'n' | 'g', id: Number(item.slice(1)) };
}

export interface VisibleEdge {
  src: ItemId;
  dst: ItemId;
  /** One per underlying value, deduplicated by (producer, variable). */
  avals: Aval[];
  vars: string[];
}

export function edgeLabel(e: VisibleEdge): string {
  return e.avals.length === 1 ? e.avals[0].text : `${e.avals.length} values`;
}

export function edgeIsWeak(e: VisibleEdge): boolean {
  return e.avals.length > 0 && e.avals.every(a => a.weak_type);
}

interface Bucket {
  a: ItemId;
  b: ItemId;
  edges: number[];
}

/** Per-graph index, built once: group depths and edges bucketed by their lowest
 * common group and the pair of its child items that hold the endpoints. */
export class GraphIndex {
  readonly graph: GraphJSON;
  readonly depth: number[];
  private readonly buckets: Map<string, Bucket>[];
  private readonly chains: number[][] = [];

  constructor(graph: GraphJSON) {
    this.graph = graph;
    const groups = graph.groups;
    this.depth = new Array(groups.length).fill(0);
    // Top down from the root: ids are not in tree order (the kernel appends the "×N"
    // repeat groups after the layers they hold).
    const stack = [graph.root ?? 0];
    while (stack.length) {
      const gid = stack.pop()!;
      for (const c of groups[gid].groups) {
        this.depth[c] = this.depth[gid] + 1;
        stack.push(c);
      }
    }
    this.buckets = groups.map(() => new Map<string, Bucket>());
    graph.edges.forEach((e, i) => {
      if (e.src === e.dst) {
        return;
      }
      const [lca, a, b] = this.lcaItems(e.src, e.dst);
      const key = `${a}>${b}`;
      let bucket = this.buckets[lca].get(key);
      if (!bucket) {
        bucket = { a, b, edges: [] };
        this.buckets[lca].set(key, bucket);
      }
      bucket.edges.push(i);
    });
  }

  /** Group ids from the node's own group up to the root. */
  chain(nodeId: number): number[] {
    const out: number[] = [];
    let g: number | null = this.graph.nodes[nodeId].group;
    while (g !== null && g !== undefined) {
      out.push(g);
      g = this.graph.groups[g].parent;
    }
    return out;
  }

  /** `chain(nodeId)`, made once per node: read only. */
  chainOf(nodeId: number): readonly number[] {
    return (this.chains[nodeId] ??= this.chain(nodeId));
  }

  /** Group ids from the group up to the root (the group itself first). */
  groupChain(groupId: number): number[] {
    const out: number[] = [];
    let g: number | null = groupId;
    while (g !== null && g !== undefined) {
      out.push(g);
      g = this.graph.groups[g].parent;
    }
    return out;
  }

  private lcaItems(src: number, dst: number): [number, ItemId, ItemId] {
    const ca = this.chain(src);
    const cb = this.chain(dst);
    const pos = new Map<number, number>();
    cb.forEach((g, j) => pos.set(g, j));
    for (let i = 0; i < ca.length; i++) {
      const j = pos.get(ca[i]);
      if (j !== undefined) {
        const a = i > 0 ? groupItem(ca[i - 1]) : nodeItem(src);
        const b = j > 0 ? groupItem(cb[j - 1]) : nodeItem(dst);
        return [ca[i], a, b];
      }
    }
    throw new Error('jaxviz: groups do not form a tree with one root');
  }

  /** All descendants of a group, itself included. */
  descendants(groupId: number): number[] {
    const out: number[] = [];
    const stack = [groupId];
    while (stack.length) {
      const g = stack.pop()!;
      out.push(g);
      stack.push(...this.graph.groups[g].groups);
    }
    return out;
  }

  /** A valid expansion state from requested group ids: the root and every
   * ancestor of a requested group are expanded too. */
  normalize(expanded: Iterable<number>): Set<number> {
    const out = new Set<number>([this.graph.root ?? 0]);
    for (const gid of expanded) {
      if (gid < 0 || gid >= this.graph.groups.length) {
        continue;
      }
      for (const g of this.groupChain(gid)) {
        out.add(g);
      }
    }
    return out;
  }

  /** Expand a group (and its ancestors). */
  expand(expanded: Set<number>, groupId: number): Set<number> {
    const out = new Set(expanded);
    for (const g of this.groupChain(groupId)) {
      out.add(g);
    }
    return out;
  }

  /** Collapse a group and everything inside it (the root stays expanded). */
  collapse(expanded: Set<number>, groupId: number): Set<number> {
    const out = new Set(expanded);
    if (groupId === (this.graph.root ?? 0)) {
      return out;
    }
    for (const g of this.descendants(groupId)) {
      out.delete(g);
    }
    return out;
  }

  /** Groups at depth <= `depth` (0: the top level, everything collapsed). */
  expandToDepth(depth: number): Set<number> {
    const out = new Set<number>();
    this.graph.groups.forEach(g => {
      if (this.depth[g.id] <= depth) {
        out.add(g.id);
      }
    });
    return out;
  }

  /** The visible item that stands for a node in an expansion state. */
  visibleItemOf(nodeId: number, expanded: Set<number>): ItemId {
    const chain = this.chain(nodeId);
    for (let i = chain.length - 1; i >= 0; i--) {
      if (!expanded.has(chain[i])) {
        return groupItem(chain[i]);
      }
    }
    return nodeItem(nodeId);
  }

  /** The visible item that stands for a group: itself when it is a collapsed box,
   * a collapsed ancestor when hidden, null when it is an expanded cluster. */
  visibleItemOfGroup(groupId: number, expanded: Set<number>): ItemId | null {
    const chain = this.groupChain(groupId);
    for (let i = chain.length - 1; i >= 0; i--) {
      if (!expanded.has(chain[i])) {
        return groupItem(chain[i]);
      }
    }
    return null;
  }

  view(expanded: Set<number>): View {
    return buildView(this, expanded);
  }

  bucketsOf(groupId: number): Iterable<Bucket> {
    return this.buckets[groupId].values();
  }
}

export interface View {
  index: GraphIndex;
  expanded: Set<number>;
  edges: VisibleEdge[];
}

function isLeaf(item: ItemId, expanded: Set<number>): boolean {
  return item[0] === 'n' || !expanded.has(Number(item.slice(1)));
}

function visibleBelow(index: GraphIndex, nodeId: number, top: ItemId, expanded: Set<number>): ItemId {
  if (isLeaf(top, expanded)) {
    return top;
  }
  const chain = index.chainOf(nodeId); // innermost first
  const idx = chain.indexOf(Number(top.slice(1)));
  for (let i = idx - 1; i >= 0; i--) {
    if (!expanded.has(chain[i])) {
      return groupItem(chain[i]);
    }
  }
  return nodeItem(nodeId);
}

/** Values on one visible edge, each once (by producer and variable, as Graph.view: the
 * label counts them all). */
interface Merged {
  src: ItemId;
  dst: ItemId;
  vals: Map<string, Aval>;
  vars: string[];
}

function addValue(graph: GraphJSON, m: Merged, edgeId: number): void {
  const e = graph.edges[edgeId];
  const vkey = `${e.src}:${e.var}`;
  if (!m.vals.has(vkey)) {
    m.vals.set(vkey, e.aval);
    m.vars.push(e.var);
  }
}

const mergedEdge = (m: Merged): VisibleEdge => ({ src: m.src, dst: m.dst, avals: [...m.vals.values()], vars: m.vars });

/** The visible edge of a bucket whose both ends are shown (not open): the same in every
 * view that shows them, made once per graph. Read only. */
const leafEdges = new WeakMap<Bucket, VisibleEdge>();

function leafEdge(graph: GraphJSON, bucket: Bucket): VisibleEdge {
  let edge = leafEdges.get(bucket);
  if (!edge) {
    const m: Merged = { src: bucket.a, dst: bucket.b, vals: new Map(), vars: [] };
    bucket.edges.forEach(i => addValue(graph, m, i));
    edge = mergedEdge(m);
    leafEdges.set(bucket, edge);
  }
  return edge;
}

/** The visible edges an open group holds: its buckets' edges, as the items shown below it
 * reach them. A bucket between two shown items is one edge of its own (no other bucket
 * meets the same pair: their lowest common group is the bucket's); those below open groups
 * merge by the pair of items they reach, in the place of the first. They depend on what is
 * open below the group only (no edge of another group meets the same pair of items). */
function groupEdges(index: GraphIndex, gid: number, expanded: Set<number>): VisibleEdge[] {
  const graph = index.graph;
  const edges: (VisibleEdge | Merged)[] = [];
  const merged = new Map<string, Merged>();
  for (const bucket of index.bucketsOf(gid)) {
    if (isLeaf(bucket.a, expanded) && isLeaf(bucket.b, expanded)) {
      edges.push(leafEdge(graph, bucket));
      continue;
    }
    for (const i of bucket.edges) {
      const e = graph.edges[i];
      const src = visibleBelow(index, e.src, bucket.a, expanded);
      const dst = visibleBelow(index, e.dst, bucket.b, expanded);
      const key = `${src}>${dst}`;
      let m = merged.get(key);
      if (!m) {
        m = { src, dst, vals: new Map(), vars: [] };
        merged.set(key, m);
        edges.push(m);
      }
      addValue(graph, m, i);
    }
  }
  return edges.map(e => ('vals' in e ? mergedEdge(e) : e));
}

/** The groups whose edges differ between two expansion states: each group opened or
 * closed, and every group above it. */
function groupsChanged(index: GraphIndex, before: Set<number>, after: Set<number>): Set<number> {
  const changed = new Set<number>();
  const mark = (gid: number) => {
    for (const g of index.groupChain(gid)) {
      if (changed.has(g)) {
        break;
      }
      changed.add(g);
    }
  };
  before.forEach(g => after.has(g) || mark(g));
  after.forEach(g => before.has(g) || mark(g));
  return changed;
}

/** Each open group's edges in the last view built from an index, for the next view to
 * take where nothing below a group changed (opening one group in a 20k-item view works
 * out the edges of that group and those above it only). Read only. */
const lastEdges = new WeakMap<GraphIndex, { expanded: Set<number>; byGroup: Map<number, VisibleEdge[]> }>();

/** The visible edges of an expansion state (as `Graph.view` in Python): each open
 * group's (`groupEdges`). */
export function buildView(index: GraphIndex, expandedIn: Iterable<number>): View {
  const expanded = index.normalize(expandedIn);
  const last = lastEdges.get(index);
  const changed = last ? groupsChanged(index, last.expanded, expanded) : null;
  const byGroup = new Map<number, VisibleEdge[]>();
  const edges: VisibleEdge[] = [];
  // In the order of the groups' ids, not of the set (which opening a group reorders):
  // the same view has its edges in the same order however it was reached.
  for (const gid of [...expanded].sort((a, b) => a - b)) {
    const kept = changed && !changed.has(gid) ? last?.byGroup.get(gid) : undefined;
    const own = kept ?? groupEdges(index, gid, expanded);
    byGroup.set(gid, own);
    for (const e of own) {
      edges.push(e);
    }
  }
  lastEdges.set(index, { expanded, byGroup });
  return { index, expanded, edges };
}

/** The visible items of a view, in DOT order: (visible nodes, collapsed groups). */
export function visibleItems(view: View): { nodes: number[]; groups: number[] } {
  const nodes: number[] = [];
  const groups: number[] = [];
  const graph = view.index.graph;
  const walk = (gid: number) => {
    const g = graph.groups[gid];
    for (const child of g.groups) {
      if (view.expanded.has(child)) {
        walk(child);
      } else {
        groups.push(child);
      }
    }
    nodes.push(...g.nodes);
  };
  walk(graph.root ?? 0);
  return { nodes, groups };
}

/** Number of visible items (nodes plus collapsed groups), as `View.visible_counts`. */
export function visibleCount(view: View): number {
  const { nodes, groups } = visibleItems(view);
  return nodes.length + groups.length;
}

/** How many items an expansion state shows (its edges not worked out). */
export function countShown(index: GraphIndex, expanded: Set<number>): number {
  return visibleCount({ index, expanded, edges: [] });
}

/** What a view shows, counted by kind (for the status line). */
export function itemCounts(view: View): { equations: number; groups: number; io: number } {
  const { nodes, groups } = visibleItems(view);
  const graph = view.index.graph;
  let equations = 0;
  for (const n of nodes) {
    if (graph.nodes[n].kind === 'eqn') {
      equations++;
    }
  }
  let io = nodes.length - equations;
  let boxes = 0;
  for (const g of groups) {
    const kind = graph.groups[g].kind;
    if (kind === 'inputs' || kind === 'outputs') {
      io++;
    } else {
      boxes++;
    }
  }
  return { equations, groups: boxes, io };
}

function plural(n: number, word: string): string {
  return `${n.toLocaleString('en-US')} ${word}${n === 1 ? '' : 's'}`;
}

/** "12 boxes, 30 equations, 5 inputs/outputs shown · program of 108 equations". */
export function statusText(view: View): string {
  const c = itemCounts(view);
  const parts: string[] = [];
  if (c.groups) {
    parts.push(plural(c.groups, 'group'));
  }
  if (c.equations) {
    parts.push(plural(c.equations, 'equation'));
  }
  if (c.io) {
    parts.push(`${c.io} inputs/outputs`);
  }
  const root = view.index.graph.groups[view.index.graph.root ?? 0];
  return `shown: ${parts.join(', ') || 'nothing'} · program of ${plural(root?.n_eqns ?? 0, 'equation')}`;
}

/** What a view would show after expanding `groupId`, without building it. */
export function countAfterExpand(index: GraphIndex, groupId: number): number {
  const g = index.graph.groups[groupId];
  return g.groups.length + g.nodes.length - 1;
}

// --------------------------------------------------------------------- search

export interface SearchHit {
  /** Nodes whose primitive, label or variables match. */
  nodes: number[];
}

/** Nodes matching a query: primitive or label (equations, inputs, outputs) or the
 * name of a variable they produce or consume. Case-insensitive substring match. */
export function searchNodes(graph: GraphJSON, query: string, limit = 5000): number[] {
  const q = query.trim().toLowerCase();
  if (!q) {
    return [];
  }
  const hits = new Set<number>();
  for (const n of graph.nodes) {
    if (hits.size >= limit) {
      break;
    }
    if ((n.primitive ?? '').toLowerCase().includes(q) || n.label.toLowerCase().includes(q)) {
      hits.add(n.id);
    }
  }
  for (const e of graph.edges) {
    if (hits.size >= limit) {
      break;
    }
    const name = variableName(e.var).toLowerCase();
    if (name && name.includes(q)) {
      hits.add(e.src);
      hits.add(e.dst);
    }
  }
  return [...hits].sort((a, b) => a - b);
}

/** The readable part of a variable name as the kernel sends it. */
export function variableName(v: string): string {
  const name = v.replace(/:[^:]*$/, '');
  // JAX's own variables have no user-visible name ("Var(id=...)", or the kernel's
  // short "v12"); only named ones (inputs, outputs, cell variables) are searchable.
  return /^Var\(id=\d+\)$/.test(name) || /^v\d+$/.test(name) ? '' : name;
}

/**
 * As `View.phase_order` in Python: for each two consecutive sibling phases (forward →
 * backward → update), the last items of the first and the first items of the second, so
 * that the DOT can stack the phases in that order.
 */
export function phaseOrder(view: View): [ItemId[], ItemId[]][] {
  const graph = view.index.graph;
  const out: [ItemId[], ItemId[]][] = [];
  for (const gid of [...view.expanded].sort((a, b) => a - b)) {
    const phases = graph.groups[gid].groups.filter(c => graph.groups[c].kind === 'phase');
    for (let i = 0; i + 1 < phases.length; i++) {
      out.push([
        phaseEnds(view, itemsBelow(view, phases[i]), true),
        phaseEnds(view, itemsBelow(view, phases[i + 1]), false)
      ]);
    }
  }
  return out;
}

function itemsBelow(view: View, gid: number): Set<ItemId> {
  if (!view.expanded.has(gid)) {
    return new Set([groupItem(gid)]);
  }
  const g = view.index.graph.groups[gid];
  const items = new Set<ItemId>(g.nodes.map(nodeItem));
  for (const c of g.groups) {
    itemsBelow(view, c).forEach(item => items.add(item));
  }
  return items;
}

/** The items with no edge out of (`last`) or into them from the others; all of them
 * when each has one (two boxes feeding each other: a user's line around a library call),
 * as `View._ends` in Python: else the phases would not be stacked at all. */
function phaseEnds(view: View, items: Set<ItemId>, last: boolean): ItemId[] {
  const linked = new Set<ItemId>();
  for (const e of view.edges) {
    if (items.has(e.src) && items.has(e.dst) && e.src !== e.dst) {
      linked.add(last ? e.src : e.dst);
    }
  }
  const ends = [...items].filter(item => !linked.has(item));
  return (ends.length ? ends : [...items]).sort();
}

/** Whether a visible item (`n<id>` or `g<id>`) lies inside group `groupId` (not the
 * group's own box). */
export function itemInGroup(index: GraphIndex, item: ItemId, groupId: number): boolean {
  const { kind, id } = parseItem(item);
  if (kind === 'n') {
    return index.chain(id).includes(groupId);
  }
  return id !== groupId && index.groupChain(id).includes(groupId);
}

/** An open group and the open groups it only wraps (`forward › loss_fn › GPT`: no node
 * and a single child each, no fold), outermost first: drawn as one cluster titled by
 * their path. The kernel's rule (`View.chain` in jaxviz/graph.py), on the same payload. */
export function openChain(view: View, groupId: number): number[] {
  const groups = view.index.graph.groups;
  const chain = [groupId];
  let g = groups[groupId];
  while (!g.nodes.length && g.groups.length === 1 && g.kind !== 'repeat' && view.expanded.has(g.groups[0])) {
    g = groups[g.groups[0]];
    chain.push(g.id);
  }
  return chain;
}

/** The open group whose cluster draws open group `groupId`: the outermost of the chain
 * it ends or lies in (`openChain`), itself when no open group only wraps it. For
 * finding an opened group in the drawing (`cluster_g<id>`). */
export function clusterOf(view: View, groupId: number): number {
  const groups = view.index.graph.groups;
  const root = view.index.graph.root ?? 0;
  let gid = groupId;
  for (let p = groups[gid].parent; p !== null && p !== root; p = groups[p].parent) {
    const parent = groups[p];
    if (parent.nodes.length || parent.groups.length !== 1 || parent.kind === 'repeat') {
      break;
    }
    gid = p;
  }
  return gid;
}
