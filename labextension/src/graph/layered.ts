/**
 * A layered layout that scales: about linear in the items and edges shown, for views too
 * big for Graphviz. After iongraph (SpiderMonkey's graph viewer): layers by longest path,
 * no crossing minimisation beyond a cheap barycentre sweep, and stable (the same view is
 * always drawn the same way; opening a group moves only what follows it in its layers).
 *
 * Compound: every open group is laid out on its own, innermost first, as a layered graph
 * of its children (items and open subgroups, whose size is known by then); an edge counts
 * in the group that holds both of its ends, between the children that hold them. Pure
 * data in, data out (no DOM): it runs in the layout worker and in the unit tests. Each
 * cluster's own layout is remembered by what it depends on: after opening a group, only
 * that group and those holding it are laid out again (the same output, sooner). What is
 * done for the whole view on every layout (lifting the edges into the clusters, moving
 * their kept local points onto the page) is a pass over typed arrays kept from layout to
 * layout: a click makes a few buffers' worth of garbage, not an object per edge or dummy.
 * Coordinates are CSS px at zoom 1, y downwards.
 */

/** What the layout needs to know about a view: sizes and structure only. */
export interface LayeredInput {
  /** Items (nodes, collapsed boxes): size, the cluster that holds it, its forced rank
   * (1: with the program's inputs on top, 2: with its outputs at the bottom, 0: free). */
  itemW: Float64Array;
  itemH: Float64Array;
  itemParent: Int32Array;
  itemRank: Uint8Array;
  /** Clusters (open groups): the one that holds it (-1: the root, which is not drawn as
   * a cluster), the size of its label. Parents come before their children. */
  clusterParent: Int32Array;
  labelW: Float64Array;
  labelH: Float64Array;
  /** Edges as item index pairs: src[i] → dst[i]. */
  edgeSrc: Int32Array;
  edgeDst: Int32Array;
  rankdir: 'TB' | 'LR';
}

/** Where everything goes: top-left corners and sizes. */
export interface LayeredOutput {
  itemX: Float64Array;
  itemY: Float64Array;
  clusterX: Float64Array;
  clusterY: Float64Array;
  clusterW: Float64Array;
  clusterH: Float64Array;
  width: number;
  height: number;
  /** Each edge's bends, where it passes layers between its ends (through the gaps
   * between their members, as dummy nodes route it): the points of edge e are
   * `routePoints[2 * k], routePoints[2 * k + 1]` for k from `routeStart[e]` to
   * `routeStart[e + 1]`. Edges that span one layer have none. */
  routeStart: Int32Array;
  routePoints: Float64Array;
  /** How many clusters (the root counted) were laid out afresh, not taken from before. */
  fresh: number;
}

/** Gaps (px): between layers, between neighbours in a layer, inside a cluster's border. */
export const RANK_GAP = 36;
export const NODE_GAP = 14;
export const CLUSTER_PAD = 10;
/** Across size of an edge passing a layer, and the gap between two such edges. */
export const DUMMY_W = 2;
export const DUMMY_GAP = 4;

/** A child of a cluster in its own layered graph: an item (k >= 0; a port, k >= the
 * number of items) or a cluster (~k). */
type Member = number;

/** A cluster as its own layout sees it: how many members it has, its local edges (as
 * member positions, deduplicated) and, once laid out, its local points. */
interface Local {
  n: number;
  edges: LocalEdges;
  routes: LocalRoutes;
}

/** A cluster's local points: local edge j's (by its place among the cluster's edges), those
 * of `pts` from `start[j]` to `start[j + 1]`: where it drops out of its source's layer and
 * into its target's (along), then its bends (x, y each); none for an edge that does not go
 * down the layers. Port v's, `ports[4v] .. ports[4v + 4]` (x, y where it enters its layer
 * and where it leaves), NaN for members that are no port. */
interface LocalRoutes {
  start: Int32Array;
  pts: Float64Array;
  ports: Float64Array;
}

const NO_ROUTES: LocalRoutes = { start: new Int32Array(1), pts: new Float64Array(0), ports: new Float64Array(0) };

/** The clusters' tree as the layout walks it; cluster index `root` (the number of
 * clusters) stands for the root. */
interface Tree {
  root: number;
  /** Each cluster's parent (the root's: -1), depth (the root's children 1, the root 0). */
  parent: Int32Array;
  depth: Int32Array;
  /** Each item's cluster. */
  container: Int32Array;
  /** Each item's position among its cluster's members, and each cluster's among its
   * parent's: the subclusters come first, then the items (the ports after both). */
  slot: Int32Array;
  clusterSlot: Int32Array;
  /** How many members each cluster has before its ports. */
  own: Int32Array;
}

/** The local edges that carry each edge, from its source's cluster out to the one that
 * holds both ends and in to its target's: edge e's are `hopCluster[h]`, `hopEdge[h]` for
 * h in `hopStart[e] .. hopStart[e + 1]`. An edge leaves a cluster through a port on its
 * last layer and enters one through a port on its first, so that inside a cluster it
 * passes layers through their gaps as any other edge does. The buffers are shared from
 * layout to layout: valid until the next. */
interface Lifted {
  hopStart: Int32Array;
  hopCluster: Int32Buffer;
  /** The hop's local edge: its place in its cluster's `edges` arrays (shared by all). */
  hopEdge: Int32Buffer;
  /** Each cluster's local edges. */
  edges: LocalEdges[];
  ports: PortTable;
}

export const PORT_IN = 3;
export const PORT_OUT = 4;

/** Lay out `input`; `progress(done, total)` is told as clusters are done. */
export function layered(input: LayeredInput, progress?: (done: number, total: number) => void): LayeredOutput {
  const nItems = input.itemW.length;
  const nClusters = input.clusterParent.length;
  const tree = clusterTree(input);
  const lifted = liftEdges(input, tree);
  const members = memberLists(tree, lifted.ports, nItems);
  const locals: Local[] = lifted.edges.map((edges, c) => ({
    n: members.start[c + 1] - members.start[c],
    edges,
    routes: NO_ROUTES
  }));
  // Items, then ports, then clusters.
  const nAll = nItems + lifted.ports.count;
  const { w, h } = memberSizes(input, nAll, nClusters);
  // Local positions (relative to the holding cluster's content) of every member.
  const lx = new Float64Array(nAll + nClusters);
  const ly = new Float64Array(nAll + nClusters);
  // Where each member's structure starts across, from its centre (0 but for clusters):
  // what an edge into it should line up with.
  const lead = new Float64Array(nAll + nClusters);
  const contentOrigin = { x: new Float64Array(nClusters + 1), y: new Float64Array(nClusters + 1) };
  const all: AllMembers = { w, h, lead, itemRank: input.itemRank, portRank: lifted.ports.rank.data, nItems, nAll };
  let done = 0;
  let fresh = 0;
  const rootSize = { w: 0, h: 0 };
  for (const c of deepestFirst(tree.depth)) {
    const local = locals[c];
    const { ranks, ...sizes } = memberScratch.of(members, c, all);
    const misses = placedMisses;
    const placed = placeCached(local, ranks, sizes, input.rankdir);
    fresh += placedMisses - misses;
    spread(placed, members, c, nAll, lx, ly);
    local.routes = placed.routes;
    const size = placed.size;
    if (c === tree.root) {
      rootSize.w = size.w;
      rootSize.h = size.h;
    } else {
      frameCluster(input, c, placed, nAll, { w, h, lead }, contentOrigin);
    }
    progress?.(++done, nClusters + 1);
  }
  const out = absolute(input, nAll, lx, ly, w, h, contentOrigin, tree, rootSize);
  routeEdges(input, out, locals, lifted, contentOrigin);
  out.fresh = fresh;
  return out;
}

/** The clusters' parents, depths and members' positions (`Tree`). */
function clusterTree(input: LayeredInput): Tree {
  const nItems = input.itemW.length;
  const nClusters = input.clusterParent.length;
  const root = nClusters;
  const tree: Tree = {
    root,
    parent: new Int32Array(nClusters + 1),
    depth: new Int32Array(nClusters + 1),
    container: new Int32Array(nItems),
    slot: new Int32Array(nItems),
    clusterSlot: new Int32Array(nClusters),
    own: new Int32Array(nClusters + 1)
  };
  tree.parent[root] = -1;
  for (let c = 0; c < nClusters; c++) {
    const p = input.clusterParent[c] < 0 ? root : input.clusterParent[c];
    tree.parent[c] = p;
    tree.depth[c] = p === root ? 1 : tree.depth[p] + 1;
    tree.clusterSlot[c] = tree.own[p]++;
  }
  for (let i = 0; i < nItems; i++) {
    const p = input.itemParent[i] < 0 ? root : input.itemParent[i];
    tree.container[i] = p;
    tree.slot[i] = tree.own[p]++;
  }
  return tree;
}

/** The clusters, deepest first (the root last; at a depth, in order): each is laid out
 * after all it holds. */
function deepestFirst(depth: Int32Array): Int32Array {
  let deepest = 0;
  for (let c = 0; c < depth.length; c++) {
    deepest = Math.max(deepest, depth[c]);
  }
  const start = new Int32Array(deepest + 2);
  for (let c = 0; c < depth.length; c++) {
    start[deepest - depth[c] + 1]++;
  }
  for (let d = 0; d <= deepest; d++) {
    start[d + 1] += start[d];
  }
  const order = new Int32Array(depth.length);
  for (let c = 0; c < depth.length; c++) {
    order[start[deepest - depth[c]]++] = c;
  }
  return order;
}

/** The members of every cluster, one after another: cluster c's are `list[start[c] ..
 * start[c + 1]]`, its subclusters (~k), then its items, then its ports (`nItems + p`). */
interface MemberLists {
  start: Int32Array;
  list: Int32Array;
}

function memberLists(tree: Tree, ports: PortTable, nItems: number): MemberLists {
  const nClusters = tree.clusterSlot.length;
  const start = new Int32Array(nClusters + 2);
  for (let c = 0; c <= nClusters; c++) {
    start[c + 1] = start[c] + tree.own[c] + ports.made[c];
  }
  const list = new Int32Array(start[nClusters + 1]);
  for (let c = 0; c < nClusters; c++) {
    list[start[tree.parent[c]] + tree.clusterSlot[c]] = ~c;
  }
  for (let i = 0; i < nItems; i++) {
    list[start[tree.container[i]] + tree.slot[i]] = i;
  }
  for (let p = 0; p < ports.count; p++) {
    list[start[ports.cluster.data[p]] + ports.at.data[p]] = nItems + p;
  }
  return { start, list };
}

/** Where a member's sizes, lead and local position are kept: items, then ports, then
 * clusters. */
const memberKey = (m: Member, nAll: number) => (m >= 0 ? m : nAll + ~m);

/** Cluster c's members' local positions, from its layout, into `lx`, `ly`. */
function spread(
  placed: Placed,
  members: MemberLists,
  c: number,
  nAll: number,
  lx: Float64Array,
  ly: Float64Array
): void {
  const from = members.start[c];
  const n = members.start[c + 1] - from;
  for (let k = 0; k < n; k++) {
    const at = memberKey(members.list[from + k], nAll);
    lx[at] = placed.x[k];
    ly[at] = placed.y[k];
  }
}

/** Sizes of items, then ports, then clusters (theirs set as each is laid out). */
function memberSizes(input: LayeredInput, nAll: number, nClusters: number): { w: Float64Array; h: Float64Array } {
  const nItems = input.itemW.length;
  const w = new Float64Array(nAll + nClusters);
  const h = new Float64Array(nAll + nClusters);
  w.set(input.itemW);
  h.set(input.itemH);
  // A port is as thin as an edge passing a layer, and takes no room along the layers.
  const tb = input.rankdir === 'TB';
  w.fill(tb ? DUMMY_W : 0, nItems, nAll);
  h.fill(tb ? 0 : DUMMY_W, nItems, nAll);
  return { w, h };
}

/** Cluster c's box around its laid-out content (padding, label band, at least as wide as
 * its label, the content centred in it), where its content starts in it, and its lead. */
function frameCluster(
  input: LayeredInput,
  c: number,
  placed: Placed,
  nAll: number,
  member: { w: Float64Array; h: Float64Array; lead: Float64Array },
  contentOrigin: { x: Float64Array; y: Float64Array }
): void {
  const { w, h, lead } = member;
  const size = placed.size;
  const labelBand = input.labelH[c] + 4;
  contentOrigin.x[c] = CLUSTER_PAD;
  contentOrigin.y[c] = CLUSTER_PAD + labelBand;
  w[nAll + c] = Math.max(size.w + 2 * CLUSTER_PAD, input.labelW[c] + 2 * CLUSTER_PAD);
  h[nAll + c] = size.h + 2 * CLUSTER_PAD + labelBand;
  if (size.w + 2 * CLUSTER_PAD < w[nAll + c]) {
    contentOrigin.x[c] += (w[nAll + c] - size.w - 2 * CLUSTER_PAD) / 2;
  }
  lead[nAll + c] =
    input.rankdir === 'TB'
      ? contentOrigin.x[c] + placed.anchor - w[nAll + c] / 2
      : contentOrigin.y[c] + placed.anchor - h[nAll + c] / 2;
}

/** Each edge's bends on the page: those of its local edges, each moved to its cluster's
 * content, with the ports it passes; where it leaves its source's layer and enters its
 * target's, straight below (after) the point before, above the point after. */
function routeEdges(
  input: LayeredInput,
  out: LayeredOutput,
  locals: Local[],
  lifted: Lifted,
  origin: { x: Float64Array; y: Float64Array }
): void {
  const nEdges = lifted.hopStart.length - 1;
  const tb = input.rankdir === 'TB';
  const start = new Int32Array(nEdges + 1);
  const { across: baseAcross, along: baseAlong } = contentBases(out, origin, tb);
  const all = routeBuffer;
  all.length = 0;
  const trace = edgeTrace;
  const { hopStart, hopCluster, hopEdge } = lifted;
  const routes = locals.map(local => local.routes);
  const edgeFrom = Int32Array.from(locals, local => local.edges.from);
  // Every cluster's local edges are in the same two arrays.
  const { src, dst } = lifted.edges[lifted.edges.length - 1];
  for (let e = 0; e < nEdges; e++) {
    if (hopStart[e + 1] > hopStart[e]) {
      trace.begin(centreAcross(input, out, input.edgeSrc[e]));
      for (let hop = hopStart[e]; hop < hopStart[e + 1]; hop++) {
        const c = hopCluster.data[hop];
        const i = hopEdge.data[hop];
        traceHop(trace, routes[c], i - edgeFrom[c], 4 * src[i], 4 * dst[i], baseAcross[c], baseAlong[c], tb);
      }
      trace.end(centreAcross(input, out, input.edgeDst[e]));
      pushBends(all, trace, tb);
    }
    start[e + 1] = all.length / 2;
  }
  out.routeStart = start;
  out.routePoints = all.done();
}

/** Where each cluster's content starts on the page, across and along the layers (the
 * root's, last: 0, 0). */
function contentBases(
  out: LayeredOutput,
  origin: { x: Float64Array; y: Float64Array },
  tb: boolean
): { across: Float64Array; along: Float64Array } {
  const nClusters = out.clusterX.length;
  const across = new Float64Array(nClusters + 1);
  const along = new Float64Array(nClusters + 1);
  for (let c = 0; c < nClusters; c++) {
    const bx = out.clusterX[c] + origin.x[c];
    const by = out.clusterY[c] + origin.y[c];
    across[c] = tb ? bx : by;
    along[c] = tb ? by : bx;
  }
  return { across, along };
}

/** Item i's centre across the layers on the page. */
function centreAcross(input: LayeredInput, out: LayeredOutput, i: number): number {
  return input.rankdir === 'TB' ? out.itemX[i] + input.itemW[i] / 2 : out.itemY[i] + input.itemH[i] / 2;
}

/** An edge's traced points into `all` as x, y, but those straight between their
 * neighbours (down a run of layers), which are no bend. */
function pushBends(all: PointBuffer, trace: EdgeTrace, tb: boolean): void {
  const { across, along, length } = trace;
  all.reserve(2 * length);
  const data = all.data;
  let at = all.length;
  for (let k = 0; k < length; k++) {
    if (k > 0 && k + 1 < length && across[k - 1] === across[k] && across[k] === across[k + 1]) {
      continue;
    }
    data[at++] = tb ? across[k] : along[k];
    data[at++] = tb ? along[k] : across[k];
  }
  all.length = at;
}

/** An edge's points on the page, across and along the layers, as `routeEdges` gathers
 * them (the first `length`). Where it drops out of a layer, it is straight below (after)
 * the point before; where it drops into one, straight above the point after: settled
 * as the next point comes, or the edge ends at its target. */
class EdgeTrace {
  across = new Float64Array(64);
  along = new Float64Array(64);
  length = 0;
  /** Across, the last point but the drops into a layer (at first, the source's centre). */
  private before = 0;
  /** The first of the drops into a layer that end the points so far (-1: none). */
  private waiting = -1;

  /** An edge from a source centred at `source` across. */
  begin(source: number): void {
    this.length = 0;
    this.before = source;
    this.waiting = -1;
  }

  /** The edge's end, into a target centred at `target` across. */
  end(target: number): void {
    this.settle(target);
  }

  /** Room for `extra` more points. */
  reserve(extra: number): void {
    if (this.length + extra <= this.across.length) {
      return;
    }
    const size = Math.max(2 * this.across.length, this.length + extra);
    const across = new Float64Array(size);
    const along = new Float64Array(size);
    across.set(this.across);
    along.set(this.along);
    this.across = across;
    this.along = along;
  }

  /** The drops into a layer waiting for the point after them: at `across`. */
  private settle(across: number): void {
    for (let k = this.waiting; k >= 0 && k < this.length; k++) {
      this.across[k] = across;
    }
    this.waiting = -1;
  }

  /** A drop out of a layer, at `along` (reserved before). */
  dropOut(along: number): void {
    this.settle(this.before);
    this.across[this.length] = this.before;
    this.along[this.length++] = along;
  }

  /** A drop into a layer, at `along` (reserved before). */
  dropIn(along: number): void {
    if (this.waiting < 0) {
      this.waiting = this.length;
    }
    this.along[this.length++] = along;
  }

  /** Local points `pts[from .. to]` (x, y each) of a cluster whose content starts at
   * (`across`, `along`) on the page (reserved before). */
  put(pts: Float64Array, from: number, to: number, across: number, along: number, tb: boolean): void {
    if (from >= to) {
      return;
    }
    const { across: as, along: ls } = this;
    let n = this.length;
    for (let k = from; k < to; k += 2) {
      as[n] = across + (tb ? pts[k] : pts[k + 1]);
      ls[n++] = along + (tb ? pts[k + 1] : pts[k]);
    }
    this.settle(as[this.length]);
    this.length = n;
    this.before = as[n - 1];
  }
}

/** Appends to `trace` the points of a cluster's local edge `j` (its place among the
 * cluster's, `routes` its local points) from its member `a / 4` to `b / 4`, the cluster's
 * content starting at (`across`, `along`) on the page: the port it leaves through, its
 * bends between the drop out of its source's layer and into its target's, the port it
 * enters through. */
function traceHop(
  trace: EdgeTrace,
  routes: LocalRoutes,
  j: number,
  a: number,
  b: number,
  across: number,
  along: number,
  tb: boolean
): void {
  const { start, pts, ports } = routes;
  // Two points a port, two drops and the bends between.
  trace.reserve(6 + (start[j + 1] - start[j]) / 2);
  if (!isNaN(ports[a])) {
    trace.put(ports, a, a + 4, across, along, tb);
  }
  if (start[j + 1] > start[j]) {
    trace.dropOut(along + pts[start[j]]);
    trace.put(pts, start[j] + 2, start[j + 1], across, along, tb);
    trace.dropIn(along + pts[start[j] + 1]);
  }
  if (!isNaN(ports[b])) {
    trace.put(ports, b, b + 4, across, along, tb);
  }
}

/** Numbers appended to a typed array that grows (a million points, without a JS array's
 * garbage). */
class PointBuffer {
  data: Float64Array;
  length = 0;

  constructor(capacity = 1 << 16) {
    this.data = new Float64Array(Math.max(2, capacity));
  }

  /** Room for `extra` more numbers. */
  reserve(extra: number): void {
    if (this.length + extra > this.data.length) {
      const bigger = new Float64Array(Math.max(this.data.length * 2, this.length + extra));
      bigger.set(this.data);
      this.data = bigger;
    }
  }

  push(x: number, y: number): void {
    this.reserve(2);
    this.data[this.length++] = x;
    this.data[this.length++] = y;
  }

  done(): Float64Array {
    return this.data.slice(0, this.length);
  }
}

/** Kept from layout to layout (the worker lays out one view after another), emptied for
 * each: an edge's points as traced, and all edges' bends (copied out when done). */
const edgeTrace = new EdgeTrace();
const routeBuffer = new PointBuffer();

/** A cluster's own layout: its members' local corners, its size, its edges' bends. */
interface Placed {
  x: Float64Array;
  y: Float64Array;
  size: { w: number; h: number };
  /** Across, the centre of the first member of its structure (not of what passes by). */
  anchor: number;
  routes: LocalRoutes;
}

/** Members' sizes, and where their structure starts across, from their centre. */
interface Sizes {
  widths: Float64Array;
  heights: Float64Array;
  leads: Float64Array;
}

type MemberData = Sizes & { ranks: Float64Array };

/** Members' forced ranks (0 free, 1 first, 2 last, PORT_IN, PORT_OUT). */
type Ranks = ArrayLike<number>;

/** Every member's sizes and lead (at `memberKey`), and what forced ranks are read from. */
interface AllMembers {
  w: Float64Array;
  h: Float64Array;
  lead: Float64Array;
  itemRank: Uint8Array;
  portRank: Int32Array;
  nItems: number;
  nAll: number;
}

/** Where each cluster's members' ranks and sizes are gathered: the same arrays, grown as
 * needed, for every cluster (the layout of a cluster keeps none of them). */
class MemberScratch {
  private data = [0, 1, 2, 3].map(() => new Float64Array(256));

  /** The ranks, sizes and leads of cluster c's members. */
  of(members: MemberLists, c: number, all: AllMembers): MemberData {
    const from = members.start[c];
    const n = members.start[c + 1] - from;
    if (this.data[0].length < n) {
      this.data = this.data.map(() => new Float64Array(2 * n));
    }
    const [ranks, widths, heights, leads] = this.data;
    for (let k = 0; k < n; k++) {
      const m = members.list[from + k];
      const at = memberKey(m, all.nAll);
      ranks[k] = m < 0 ? 0 : m < all.nItems ? all.itemRank[m] : all.portRank[m - all.nItems];
      widths[k] = all.w[at];
      heights[k] = all.h[at];
      leads[k] = all.lead[at];
    }
    const view = (a: Float64Array) => a.subarray(0, n);
    return { ranks: view(ranks), widths: view(widths), heights: view(heights), leads: view(leads) };
  }
}
const memberScratch = new MemberScratch();

/** What was worked out before, by all that it depends on as a signature (`signatureOf`):
 * found by a hash of the signature, then checked against it word for word. Bounded by
 * weight (what `weigh` says a value holds), in two generations: what is put or found
 * goes into the young one; when that is full, the old one is dropped and the young one
 * becomes old. So what the views shown lately use stays, and the worker's heap does not
 * grow with every view laid out (a heap of hundreds of MB made each collection slow). */
class KeptBySignature<T> {
  private young = new Map<number, { signature: Int32Array; value: T }[]>();
  private old = new Map<number, { signature: Int32Array; value: T }[]>();
  private weight = 0;

  constructor(
    private readonly capacity: number,
    private readonly weigh: (value: T) => number
  ) {}

  get(signature: Int32Array, hash: number): T | undefined {
    const found = this.young.get(hash)?.find(entry => sameWords(entry.signature, signature));
    if (found) {
      return found.value;
    }
    const bucket = this.old.get(hash);
    const at = bucket ? bucket.findIndex(entry => sameWords(entry.signature, signature)) : -1;
    if (!bucket || at < 0) {
      return undefined;
    }
    const [entry] = bucket.splice(at, 1);
    this.keep(hash, entry);
    return entry.value;
  }

  put(signature: Int32Array, hash: number, value: T): void {
    this.keep(hash, { signature: signature.slice(), value });
  }

  private keep(hash: number, entry: { signature: Int32Array; value: T }): void {
    const weight = this.weigh(entry.value) + entry.signature.length;
    if (this.weight + weight > this.capacity) {
      this.old = this.young;
      this.young = new Map();
      this.weight = 0;
    }
    const bucket = this.young.get(hash) ?? [];
    bucket.push(entry);
    this.young.set(hash, bucket);
    this.weight += weight;
  }

  clear(): void {
    this.young.clear();
    this.old.clear();
    this.weight = 0;
  }
}

/** How much each generation of kept layouts and structures holds (numbers; a member or
 * dummy of a structure weighs 8: its layer, its inputs and outputs as arrays): several
 * times what a view of 20k items uses. */
const PLACED_KEPT = 2_000_000;
const STRUCTURES_KEPT = 6_000_000;

/** Layouts of clusters already laid out, by all that their layout depends on (members'
 * sizes and forced ranks, local edges in order, direction): opening a group lays out
 * that group and those holding it, and takes every other cluster's layout from here. */
const placedBefore = new KeptBySignature<Placed>(
  PLACED_KEPT,
  placed => placed.x.length + placed.routes.pts.length + placed.routes.ports.length
);
/** The structures of clusters laid out before, by their members' forced ranks and local
 * edges: a cluster that holds the opened group keeps its structure (its members' sizes
 * change, not its edges), so only its positions are worked out again. */
const structuresBefore = new KeptBySignature<Structure>(STRUCTURES_KEPT, structure => 8 * structure.graph.layer.length);
let placedMisses = 0;

/** Forget the clusters laid out before: the next layout works each one out afresh (what a
 * layout taken from before must equal). */
export function forgetLayouts(): void {
  placedBefore.clear();
  structuresBefore.clear();
}

/** Where signatures are written (grown as needed): one array for every cluster, not one each. */
let scratch = new Float64Array(1024);

/** All that a cluster's layout depends on, as numbers: the direction, the members'
 * forced ranks, sizes and leads, the local edges in order (with `sizes` null: all that
 * its structure depends on, the forced ranks and the edges); as 32-bit words (a view of
 * `scratch`, valid until the next call). */
function signatureOf(local: Local, ranks: Ranks, sizes: Sizes | null, rankdir: 'TB' | 'LR'): Int32Array {
  const n = ranks.length;
  const stride = sizes ? 4 : 1;
  const { src, dst, from, to } = local.edges;
  const length = 3 + stride * n + 2 * (to - from);
  if (scratch.length < length) {
    scratch = new Float64Array(2 * length);
  }
  const numbers = scratch;
  numbers[0] = sizes ? (rankdir === 'TB' ? 1 : 2) : 0;
  numbers[1] = n;
  for (let k = 0; k < n; k++) {
    numbers[2 + stride * k] = ranks[k];
    if (sizes) {
      numbers[3 + 4 * k] = sizes.widths[k];
      numbers[4 + 4 * k] = sizes.heights[k];
      numbers[5 + 4 * k] = sizes.leads[k];
    }
  }
  let at = 2 + stride * n;
  numbers[at++] = to - from;
  for (let k = from; k < to; k++) {
    numbers[at++] = src[k];
    numbers[at++] = dst[k];
  }
  return new Int32Array(numbers.buffer, 0, 2 * length);
}

/** A 32-bit hash of a signature (FNV-1a over its words). */
function hashOf(words: Int32Array): number {
  let h = 0x811c9dc5;
  for (let k = 0; k < words.length; k++) {
    h = Math.imul(h ^ words[k], 0x01000193);
  }
  return h;
}

function sameWords(a: Int32Array, b: Int32Array): boolean {
  if (a.length !== b.length) {
    return false;
  }
  for (let k = 0; k < a.length; k++) {
    if (a[k] !== b[k]) {
      return false;
    }
  }
  return true;
}

/** The structure of a cluster's layout, as worked out before where it was. */
function structureCached(local: Local, ranks: Ranks): Structure {
  const signature = signatureOf(local, ranks, null, 'TB');
  const hash = hashOf(signature);
  let found = structuresBefore.get(signature, hash);
  if (!found) {
    found = structureOf(local, ranks);
    structuresBefore.put(signature, hash, found);
  }
  return found;
}

function placeCached(local: Local, ranks: Ranks, sizes: Sizes, rankdir: 'TB' | 'LR'): Placed {
  const signature = signatureOf(local, ranks, sizes, rankdir);
  const hash = hashOf(signature);
  const found = placedBefore.get(signature, hash);
  if (found) {
    return found;
  }
  placedMisses++;
  const saved = signature.slice();
  const n = local.n;
  const placed: Placed = {
    x: new Float64Array(n),
    y: new Float64Array(n),
    size: { w: 0, h: 0 },
    anchor: 0,
    routes: NO_ROUTES
  };
  const structure = structureCached(local, ranks);
  const { w, h, anchor } = placeLocal(local, structure, ranks, sizes, rankdir, (k, x, y) => {
    placed.x[k] = x;
    placed.y[k] = y;
  });
  placed.size = { w, h };
  placed.anchor = anchor;
  placed.routes = local.routes;
  placedBefore.put(saved, hash, placed);
  return placed;
}

/** A cluster's local edges: member positions `src[k] → dst[k]` for k in `from .. to`
 * (arrays shared by all clusters), each once, in the order first met. */
interface LocalEdges {
  src: Int32Array;
  dst: Int32Array;
  from: number;
  to: number;
}

/** A cluster's local edges by source, the sources in the order first met, each one's
 * targets in the order met. */
function bySource(edges: LocalEdges, n: number): { src: Int32Array; dst: Int32Array } {
  const { from, to } = edges;
  const firstMet = new Int32Array(n).fill(-1);
  const count = new Int32Array(n + 1);
  let sources = 0;
  for (let k = from; k < to; k++) {
    const a = edges.src[k];
    if (firstMet[a] < 0) {
      firstMet[a] = sources++;
    }
    count[firstMet[a] + 1]++;
  }
  for (let r = 0; r < sources; r++) {
    count[r + 1] += count[r];
  }
  const src = new Int32Array(to - from);
  const dst = new Int32Array(to - from);
  for (let k = from; k < to; k++) {
    const at = count[firstMet[edges.src[k]]]++;
    src[at] = edges.src[k];
    dst[at] = edges.dst[k];
  }
  return { src, dst };
}

/** Int32 numbers appended to an array that grows. */
class Int32Buffer {
  data = new Int32Array(1024);
  length = 0;

  push(v: number): void {
    if (this.length === this.data.length) {
      const bigger = new Int32Array(2 * this.data.length);
      bigger.set(this.data);
      this.data = bigger;
    }
    this.data[this.length++] = v;
  }
}

/** An Int32Array of at least `n` numbers: `kept` where it is long enough. */
function atLeast(kept: Int32Array, n: number): Int32Array {
  return kept.length >= n ? kept : new Int32Array(Math.max(n, 2 * kept.length));
}

/** The local edges of all clusters as they are met, each once (cluster, source, target):
 * a hash set in typed arrays (not a Set per member: tens of thousands of objects a layout),
 * dealt out to the clusters at the end, each one's in the order met. Kept from layout to
 * layout, emptied for each. */
class EdgeSet {
  private readonly c = new Int32Buffer();
  private readonly a = new Int32Buffer();
  private readonly b = new Int32Buffer();
  /** Open addressing: an index into the edges, -1 where free. */
  private table = new Int32Array(4096).fill(-1);
  /** What `deal` writes: the clusters' edges (shared arrays), where each edge went. */
  private src = new Int32Array(0);
  private dst = new Int32Array(0);
  private placeOf = new Int32Array(0);

  clear(): void {
    this.c.length = this.a.length = this.b.length = 0;
    this.table.fill(-1);
  }

  /** Adds the edge where it is new; its number (in the order met). */
  add(c: number, a: number, b: number): number {
    const mask = this.table.length - 1;
    let h = hashTriple(c, a, b) & mask;
    for (let k = this.table[h]; k >= 0; k = this.table[h]) {
      if (this.c.data[k] === c && this.a.data[k] === a && this.b.data[k] === b) {
        return k;
      }
      h = (h + 1) & mask;
    }
    const added = this.c.length;
    this.table[h] = added;
    this.c.push(c);
    this.a.push(a);
    this.b.push(b);
    if (2 * this.c.length > this.table.length) {
      this.rehash();
    }
    return added;
  }

  private rehash(): void {
    this.table = new Int32Array(2 * this.table.length).fill(-1);
    const mask = this.table.length - 1;
    for (let k = 0; k < this.c.length; k++) {
      let h = hashTriple(this.c.data[k], this.a.data[k], this.b.data[k]) & mask;
      while (this.table[h] >= 0) {
        h = (h + 1) & mask;
      }
      this.table[h] = k;
    }
  }

  /** Each of `nLocals` clusters' edges (the root's last), grouped by cluster, in the order
   * met; where each edge (by its number) went (valid until the next `clear`). */
  deal(nLocals: number): { edges: LocalEdges[]; placeOf: Int32Array } {
    const n = this.c.length;
    const start = new Int32Array(nLocals + 1);
    for (let k = 0; k < n; k++) {
      start[this.c.data[k] + 1]++;
    }
    for (let c = 0; c < nLocals; c++) {
      start[c + 1] += start[c];
    }
    const src = (this.src = atLeast(this.src, n));
    const dst = (this.dst = atLeast(this.dst, n));
    const placeOf = (this.placeOf = atLeast(this.placeOf, n));
    const edges = Array.from({ length: nLocals }, (_, c) => ({ src, dst, from: start[c], to: start[c] }));
    for (let k = 0; k < n; k++) {
      const local = edges[this.c.data[k]];
      const i = local.to++;
      src[i] = this.a.data[k];
      dst[i] = this.b.data[k];
      placeOf[k] = i;
    }
    return { edges, placeOf };
  }
}

function hashTriple(c: number, a: number, b: number): number {
  let h = Math.imul(c ^ 0x9e3779b9, 0x85ebca6b);
  h = Math.imul(h ^ a ^ (h >>> 15), 0xc2b2ae35);
  h = Math.imul(h ^ b ^ (h >>> 13), 0x27d4eb2f);
  return (h ^ (h >>> 16)) >>> 0;
}

/** The ports made so far: the p-th is item `nItems + p`, at position `at[p]` among the
 * members of cluster `cluster[p]` (after those it has of its own: `made[c]` ports made
 * there), on its first layer (`rank` PORT_IN) or its last (PORT_OUT). One port per
 * cluster, way and source item: what one value feeds inside fans out there. Found by a
 * hash in typed arrays; kept from layout to layout, emptied for each. */
class PortTable {
  count = 0;
  readonly cluster = new Int32Buffer();
  readonly at = new Int32Buffer();
  readonly rank = new Int32Buffer();
  /** Each port's source item and way, `2 * item + (PORT_OUT ? 1 : 0)`. */
  private readonly name = new Int32Buffer();
  made = new Int32Array(0);
  /** Open addressing: a port, -1 where free. */
  private table = new Int32Array(4096).fill(-1);

  clear(nLocals: number): void {
    this.count = this.cluster.length = this.at.length = this.rank.length = this.name.length = 0;
    this.made = atLeast(this.made, nLocals);
    this.made.fill(0, 0, nLocals);
    this.table.fill(-1);
  }

  /** The member position in cluster c of its port for edges from item a that leave
   * (PORT_OUT) or enter (PORT_IN) it, made on first use after the `own` members. */
  of(c: number, a: number, rank: number, own: Int32Array): number {
    const name = 2 * a + (rank === PORT_OUT ? 1 : 0);
    const mask = this.table.length - 1;
    let h = hashTriple(c, name, 0) & mask;
    for (let p = this.table[h]; p >= 0; p = this.table[h]) {
      if (this.cluster.data[p] === c && this.name.data[p] === name) {
        return this.at.data[p];
      }
      h = (h + 1) & mask;
    }
    const at = own[c] + this.made[c]++;
    this.table[h] = this.count++;
    this.cluster.push(c);
    this.name.push(name);
    this.at.push(at);
    this.rank.push(rank);
    if (2 * this.count > this.table.length) {
      this.rehash();
    }
    return at;
  }

  private rehash(): void {
    this.table = new Int32Array(2 * this.table.length).fill(-1);
    const mask = this.table.length - 1;
    for (let p = 0; p < this.count; p++) {
      let h = hashTriple(this.cluster.data[p], this.name.data[p], 0) & mask;
      while (this.table[h] >= 0) {
        h = (h + 1) & mask;
      }
      this.table[h] = p;
    }
  }
}

/** What the lift works in, kept from layout to layout (a layout a click: a few buffers
 * emptied, not tens of thousands of arrays and maps made and dropped). */
const liftScratch = {
  edges: new EdgeSet(),
  ports: new PortTable(),
  hopCluster: new Int32Buffer(),
  hopEdge: new Int32Buffer(),
  /** An edge's hops out from its source and in from its target. */
  out: new Int32Buffer(),
  into: new Int32Buffer()
};

/** Adds the local edge sa → sb to cluster c's, and its hop to `hops`. */
function linkLocal(edges: EdgeSet, c: number, sa: number, sb: number, hops: Int32Buffer): void {
  hops.push(c);
  hops.push(edges.add(c, sa, sb));
}

/** Appends edge e's hops: those out to the common cluster (`out`, in order), then those in
 * to its target (`into`, gathered from the target outwards). */
function appendHops(lifted: Lifted, e: number, out: Int32Buffer, into: Int32Buffer): void {
  for (let k = 0; k < out.length; k += 2) {
    lifted.hopCluster.push(out.data[k]);
    lifted.hopEdge.push(out.data[k + 1]);
  }
  for (let k = into.length - 2; k >= 0; k -= 2) {
    lifted.hopCluster.push(into.data[k]);
    lifted.hopEdge.push(into.data[k + 1]);
  }
  lifted.hopStart[e + 1] = lifted.hopCluster.length;
}

/** Each edge counts in the cluster holding both ends, between the children holding them. */
function liftEdges(input: LayeredInput, tree: Tree): Lifted {
  const { edges, ports, out, into } = liftScratch;
  edges.clear();
  ports.clear(tree.own.length);
  liftScratch.hopCluster.length = liftScratch.hopEdge.length = 0;
  const { container, slot, clusterSlot, parent, depth, own } = tree;
  const lifted: Lifted = {
    hopStart: new Int32Array(input.edgeSrc.length + 1),
    hopCluster: liftScratch.hopCluster,
    hopEdge: liftScratch.hopEdge,
    edges: [],
    ports
  };
  for (let e = 0; e < input.edgeSrc.length; e++) {
    const a = input.edgeSrc[e];
    const b = input.edgeDst[e];
    lifted.hopStart[e + 1] = lifted.hopStart[e];
    if (a < 0 || b < 0) {
      continue;
    }
    let pa = container[a];
    let pb = container[b];
    let sa = slot[a];
    let sb = slot[b];
    out.length = 0;
    into.length = 0;
    while (pa !== pb) {
      if (depth[pa] >= depth[pb]) {
        linkLocal(edges, pa, sa, ports.of(pa, a, PORT_OUT, own), out);
        sa = clusterSlot[pa];
        pa = parent[pa];
      } else {
        linkLocal(edges, pb, ports.of(pb, a, PORT_IN, own), sb, into);
        sb = clusterSlot[pb];
        pb = parent[pb];
      }
    }
    if (sa === sb) {
      continue;
    }
    linkLocal(edges, pa, sa, sb, out);
    appendHops(lifted, e, out, into);
  }
  const dealt = edges.deal(own.length);
  lifted.edges = dealt.edges;
  for (let h = 0; h < lifted.hopEdge.length; h++) {
    lifted.hopEdge.data[h] = dealt.placeOf[lifted.hopEdge.data[h]];
  }
  return lifted;
}

/** Layers by longest path from the sources (back edges of a depth-first search ignored),
 * members without inputs pulled down next to their first consumer; forced ranks first and
 * last. */
export function assignLayers(n: number, succ: number[][], ranks: Ranks): Int32Array {
  const topo = topoOrder(n, succ);
  const pos = new Int32Array(n);
  topo.forEach((v, k) => (pos[v] = k));
  const layer = new Int32Array(n);
  const hasPred = new Uint8Array(n);
  for (const v of topo) {
    for (const s of succ[v]) {
      if (pos[s] > pos[v]) {
        layer[s] = Math.max(layer[s], layer[v] + 1);
        hasPred[s] = 1;
      }
    }
  }
  for (let k = topo.length - 1; k >= 0; k--) {
    const v = topo[k];
    if (hasPred[v] || !succ[v].length || ranks[v]) {
      continue;
    }
    let first = Infinity;
    for (const s of succ[v]) {
      if (pos[s] > pos[v]) {
        first = Math.min(first, layer[s]);
      }
    }
    if (isFinite(first) && first - 1 > layer[v]) {
      layer[v] = first - 1;
    }
  }
  const sources = Array.prototype.some.call(ranks, r => r === 1) ? 1 : 0;
  let last = 0;
  for (let v = 0; v < n; v++) {
    if (ranks[v] === 1 || ranks[v] === PORT_IN) {
      layer[v] = 0;
    } else if (ranks[v] !== 2 && ranks[v] !== PORT_OUT) {
      layer[v] += sources;
      last = Math.max(last, layer[v]);
    }
  }
  const sinks = Array.prototype.some.call(ranks, r => r === 2) ? 1 : 0;
  for (let v = 0; v < n; v++) {
    if (ranks[v] === 2 || ranks[v] === PORT_OUT) {
      layer[v] = last + sinks;
    }
  }
  return layer;
}

/** A topological order of the members, by an iterative depth-first search from each in
 * turn (edges that close a cycle are left out). */
function topoOrder(n: number, succ: number[][]): number[] {
  const state = new Uint8Array(n); // 0 new, 1 on the stack, 2 done
  const post: number[] = [];
  for (let start = 0; start < n; start++) {
    if (state[start]) {
      continue;
    }
    const stack: [number, number][] = [[start, 0]];
    state[start] = 1;
    while (stack.length) {
      const top = stack[stack.length - 1];
      const [v, k] = top;
      if (k < succ[v].length) {
        top[1]++;
        const s = succ[v][k];
        if (!state[s]) {
          state[s] = 1;
          stack.push([s, 0]);
        }
      } else {
        state[v] = 2;
        post.push(v);
        stack.pop();
      }
    }
  }
  return post.reverse();
}

/** What a cluster's layout takes from its structure alone (its members' forced ranks and
 * its local edges, not their sizes): the members' graph with its dummies, what passes by,
 * the order of each layer. */
interface Structure {
  graph: DummyGraph;
  passing: Uint8Array;
  layers: Rows;
}

/** The structure of a cluster's layout: layers, dummies, order. */
function structureOf(local: Local, ranks: Ranks): Structure {
  const n = local.n;
  const { succ, pred } = adjacency(n, local.edges);
  const layer = assignLayers(n, succ, ranks);
  const graph = withDummies(n, layer, { succ, pred }, local.edges);
  const passing = passingBy(n, ranks, graph);
  const layers = orderLayers(graph, passing);
  return { graph, passing, layers };
}

/** Sizes across and along the layers of the members, then of the dummies (thin, no
 * length along). */
function extents(n: number, total: number, sizes: Sizes, rankdir: 'TB' | 'LR'): Extents {
  const across = new Float64Array(total).fill(DUMMY_W);
  const along = new Float64Array(total);
  const [a, b] = rankdir === 'TB' ? [sizes.widths, sizes.heights] : [sizes.heights, sizes.widths];
  for (let v = 0; v < n; v++) {
    across[v] = a[v];
    along[v] = b[v];
  }
  return { across, along, thick: new Float64Array(total - n) };
}

/** Lay out one cluster's members, whose structure is `structure`; `put(k, x, y)` receives
 * their top-left corners. */
function placeLocal(
  local: Local,
  structure: Structure,
  ranks: Ranks,
  sizes: Sizes,
  rankdir: 'TB' | 'LR',
  put: (k: number, x: number, y: number) => void
): { w: number; h: number; anchor: number } {
  const n = local.n;
  if (!n) {
    return { w: 0, h: 0, anchor: 0 };
  }
  const { graph, passing, layers } = structure;
  const g: Extents & DummyGraph = { ...graph, ...extents(n, graph.layer.length, sizes, rankdir) };
  const lead = (v: number) => (v < n ? sizes.leads[v] : 0);
  const centre = crossPositions(layers, g, { n, ranks, leads: sizes.leads, passing });
  const first = firstOfStructure(layers, passing);
  const ports = new Float64Array(4 * n).fill(NaN);
  const rows = placeRows(layers, g, centre, n, (v, a, r, thick) => {
    if (ranks[v] >= PORT_IN) {
      // A port: where its edges cross its layer, straight through.
      const tb = rankdir === 'TB';
      ports[4 * v] = tb ? centre[v] : r;
      ports[4 * v + 1] = tb ? r : centre[v];
      ports[4 * v + 2] = tb ? centre[v] : r + thick;
      ports[4 * v + 3] = tb ? r + thick : centre[v];
    }
    if (rankdir === 'TB') {
      put(v, a, r);
    } else {
      put(v, r, a);
    }
  });
  const { start, pts } = routeLocalEdges(local, g, centre, rows, n, rankdir);
  local.routes = { start, pts, ports };
  const { offset, extent } = rows;
  const length = Math.max(0, offset - RANK_GAP);
  const anchor = first < 0 ? extent / 2 : centre[first] + lead(first);
  return rankdir === 'TB' ? { w: extent, h: length, anchor } : { w: length, h: extent, anchor };
}

/** The first member of the first layer that does not only pass by (-1: none). */
function firstOfStructure(layers: Rows, passing: Uint8Array): number {
  const { start, list } = layers;
  for (let r = 0; r + 1 < start.length; r++) {
    if (start[r + 1] > start[r] && !passing[list[start[r]]]) {
      return list[start[r]];
    }
  }
  return -1;
}

/** Each member's inputs and outputs, from a cluster's local edges (by source: each one's
 * inputs in the order their sources were first met). */
function adjacency(n: number, edges: LocalEdges): { succ: number[][]; pred: number[][] } {
  const succ: number[][] = Array.from({ length: n }, () => []);
  const pred: number[][] = Array.from({ length: n }, () => []);
  const { src, dst } = bySource(edges, n);
  for (let k = 0; k < src.length; k++) {
    succ[src[k]].push(dst[k]);
    pred[dst[k]].push(src[k]);
  }
  return { succ, pred };
}

/** The members of each layer in order: layer r's are `list[start[r] .. start[r + 1]]`. */
interface Rows {
  start: Int32Array;
  list: Int32Array;
}

/** Where the layers go along: each as thick as its thickest member, `offset` past the
 * last; `extent` across; where each member's layer starts and ends, each dummy's layer
 * starts (`bendAt`, by dummy; its thickness into `g.thick`). */
interface Placement {
  bendAt: Float64Array;
  rowStart: Float64Array;
  rowEnd: Float64Array;
  offset: number;
  extent: number;
}

/** The layers one after another, `put(v, across, along, thick)` told each member's corner
 * (and its layer's thickness). */
function placeRows(
  layers: Rows,
  g: Extents,
  centre: Float64Array,
  n: number,
  put: (v: number, a: number, r: number, thick: number) => void
): Placement {
  const rows: Placement = {
    bendAt: new Float64Array(g.across.length - n),
    rowStart: new Float64Array(n),
    rowEnd: new Float64Array(n),
    offset: 0,
    extent: 0
  };
  const { start, list } = layers;
  const { across, along } = g;
  let { offset, extent } = rows;
  for (let r = 0; r + 1 < start.length; r++) {
    let thick = 0;
    for (let k = start[r]; k < start[r + 1]; k++) {
      thick = Math.max(thick, along[list[k]]);
    }
    for (let k = start[r]; k < start[r + 1]; k++) {
      const v = list[k];
      const a = centre[v] - across[v] / 2;
      extent = Math.max(extent, a + across[v]);
      if (v >= n) {
        rows.bendAt[v - n] = offset;
        g.thick[v - n] = thick;
        continue;
      }
      rows.rowStart[v] = offset;
      rows.rowEnd[v] = offset + thick;
      // At the start of its layer: beside a cluster thousands of px long, an item stays
      // by its inputs, not halfway down.
      put(v, a, offset, thick);
    }
    offset += thick + RANK_GAP;
  }
  rows.offset = offset;
  rows.extent = extent;
  return rows;
}

/** Each edge down: first (along the layers' axis) to the end of its source's layer, then
 * straight through each layer it passes, in its gap, then in at the start of its target's
 * layer. A member shorter than its layer has nothing under it in the layer. Their points,
 * as `LocalRoutes` has them. */
function routeLocalEdges(
  local: Local,
  g: DummyGraph & Extents,
  centre: Float64Array,
  rows: Placement,
  n: number,
  rankdir: 'TB' | 'LR'
): { start: Int32Array; pts: Float64Array } {
  const { src, dst, from, to } = local.edges;
  const { layer, chainOf } = g;
  const start = new Int32Array(to - from + 1);
  // Two numbers an edge, four a dummy: all that is written.
  const pts = new PointBuffer(2 * (to - from) + 4 * g.thick.length);
  for (let k = from; k < to; k++) {
    const a = src[k];
    const b = dst[k];
    if (layer[b] > layer[a]) {
      pts.push(rows.rowEnd[a], rows.rowStart[b]);
      // The edge's dummies, one a layer passed, numbered in a row from its first. A
      // dummy's top and bottom, but where the dummies before and after are in line with
      // it: a bend between two points straight across from it is no bend.
      const first = chainOf[k - from];
      const dummies = first < 0 ? 0 : layer[b] - layer[a] - 1;
      for (let i = 0; i < dummies; i++) {
        const d = first + i;
        const c = centre[d];
        const r0 = rows.bendAt[d - n];
        if (i === 0 || centre[d - 1] !== c) {
          pts.push(rankdir === 'TB' ? c : r0, rankdir === 'TB' ? r0 : c);
        }
        if (i + 1 === dummies || centre[d + 1] !== c) {
          const r1 = r0 + g.thick[d - n];
          pts.push(rankdir === 'TB' ? c : r1, rankdir === 'TB' ? r1 : c);
        }
      }
    }
    start[k - from + 1] = pts.length;
  }
  return { start, pts: pts.done() };
}

/** The members' graph with a dummy member in every layer that an edge passes (after the
 * members, each edge's in a row, in the order of their sources and of each one's
 * outputs), the edge split along them, in typed arrays: v's outputs are `succ[succStart[v]
 * .. succStart[v + 1]]`, its inputs `pred[predStart[v] .. predStart[v + 1]]`, in the order
 * of the members' graph (a dummy has one of each); local edge j's first dummy is
 * `chainOf[j]` (-1: it passes no layer). Arrays, not an array a member: a cluster fed by
 * a thousand ports has tens of thousands of dummies. */
interface DummyGraph {
  layer: Int32Array;
  succStart: Int32Array;
  succ: Int32Array;
  predStart: Int32Array;
  pred: Int32Array;
  chainOf: Int32Array;
}

/** The members' own graph (inputs, outputs), as `adjacency` makes it. */
interface MemberGraph {
  succ: number[][];
  pred: number[][];
}

function withDummies(n: number, layer: Int32Array, members: MemberGraph, edges: LocalEdges): DummyGraph {
  const { succ, pred } = members;
  const { succStart, predStart, total } = dummyStarts(n, layer, members);
  const g: DummyGraph = {
    layer: new Int32Array(total),
    succStart,
    succ: new Int32Array(succStart[total]),
    predStart,
    pred: new Int32Array(predStart[total]),
    chainOf: new Int32Array(edges.to - edges.from).fill(-1)
  };
  g.layer.set(layer);
  for (let v = 0; v < n; v++) {
    g.pred.set(pred[v], predStart[v]);
  }
  // Each output's first dummy (-1: none), by its place in `g.succ`.
  const firstAt = new Int32Array(succStart[n]).fill(-1);
  let next = n;
  for (let a = 0; a < n; a++) {
    for (let k = 0; k < succ[a].length; k++) {
      const b = succ[a][k];
      g.succ[succStart[a] + k] = b;
      if (layer[b] - layer[a] > 1) {
        firstAt[succStart[a] + k] = next;
        next = splitEdge(g, a, succStart[a] + k, b, next);
      }
    }
  }
  chainsOfEdges(g, firstAt, edges);
  return g;
}

/** Where each member's and dummy's outputs and inputs start in a `DummyGraph`. */
function dummyStarts(
  n: number,
  layer: Int32Array,
  members: MemberGraph
): { succStart: Int32Array; predStart: Int32Array; total: number } {
  let total = n;
  for (let a = 0; a < n; a++) {
    for (const b of members.succ[a]) {
      total += Math.max(0, layer[b] - layer[a] - 1);
    }
  }
  const succStart = new Int32Array(total + 1);
  const predStart = new Int32Array(total + 1);
  for (let v = 0; v < total; v++) {
    succStart[v + 1] = succStart[v] + (v < n ? members.succ[v].length : 1);
    predStart[v + 1] = predStart[v] + (v < n ? members.pred[v].length : 1);
  }
  return { succStart, predStart, total };
}

/** Splits the edge a → b (a's output at `g.succ[at]`), which passes layers, along a new
 * dummy in each layer it passes, numbered from `next`; the next number free. */
function splitEdge(g: DummyGraph, a: number, at: number, b: number, next: number): number {
  let prev = a;
  for (let i = 1; i < g.layer[b] - g.layer[a]; i++) {
    const d = next++;
    g.layer[d] = g.layer[a] + i;
    g.pred[g.predStart[d]] = prev;
    if (prev === a) {
      g.succ[at] = d;
    } else {
      g.succ[g.succStart[prev]] = d;
    }
    prev = d;
  }
  g.succ[g.succStart[prev]] = b;
  // b's input from a is now from the last dummy, where a was among b's inputs.
  const inputs = g.pred.subarray(g.predStart[b], g.predStart[b + 1]);
  inputs[inputs.indexOf(a)] = prev;
  return next;
}

/** Each local edge's first dummy (`chainOf`), from each output's (`firstAt`): the local
 * edges of a source are its outputs in their order. */
function chainsOfEdges(g: DummyGraph, firstAt: Int32Array, edges: LocalEdges): void {
  const n = g.succStart.length - 1;
  const seen = new Int32Array(n);
  for (let k = edges.from; k < edges.to; k++) {
    const a = edges.src[k];
    g.chainOf[k - edges.from] = firstAt[g.succStart[a] + seen[a]++];
  }
}

/** Members' and dummies' sizes across and along the layers, and (written as the layers
 * are placed) how thick each dummy's layer is. */
interface Extents {
  across: Float64Array;
  along: Float64Array;
  thick: Float64Array;
}

/** What passes by: the members forced onto the first layer (the program's inputs, the
 * ports where edges enter a cluster) or the last (its outputs, the ports where edges
 * leave), and the dummies of the edges from the first or to the last. Rows of hundreds
 * of them are wider than what they pass: they follow it, never pull or push it sideways. */
function passingBy(n: number, ranks: Ranks, g: DummyGraph): Uint8Array {
  const total = g.layer.length;
  const aside = new Uint8Array(total);
  for (let v = 0; v < n; v++) {
    aside[v] = ranks[v] === 1 || ranks[v] === PORT_IN || ranks[v] === 2 || ranks[v] === PORT_OUT ? 1 : 0;
  }
  const top = (v: number) => ranks[v] === 1 || ranks[v] === PORT_IN;
  const bottom = (v: number) => ranks[v] === 2 || ranks[v] === PORT_OUT;
  // A dummy's one input comes before it in its chain, its one output after it.
  const fromTop = new Uint8Array(total);
  for (let d = n; d < total; d++) {
    const u = g.pred[g.predStart[d]];
    fromTop[d] = u < n ? (top(u) ? 1 : 0) : fromTop[u];
  }
  const toBottom = new Uint8Array(total);
  for (let d = total - 1; d >= n; d--) {
    const w = g.succ[g.succStart[d]];
    toBottom[d] = w < n ? (bottom(w) ? 1 : 0) : toBottom[w];
    aside[d] = fromTop[d] | toBottom[d];
  }
  return aside;
}

/** The members of each layer in order: the program's order first, then one sweep down by
 * the barycentre of each member's inputs, one up by that of its outputs (stable); what
 * passes by (`passingBy`) after the rest, beside it. */
function orderLayers(g: DummyGraph, passing: Uint8Array): Rows {
  const rows = rowsByLayer(g.layer);
  const { start, list } = rows;
  const total = list.length;
  const depth = start.length - 1;
  // Each one's place in its layer, and its barycentre.
  const index = new Float64Array(total);
  const bary = new Float64Array(total);
  const scratch = new Int32Array(total);
  for (let r = 0; r < depth; r++) {
    numberRow(list, start[r], start[r + 1], index);
  }
  const sweep = (r: number, ends: Int32Array, neighbours: Int32Array) => {
    for (let k = start[r]; k < start[r + 1]; k++) {
      const v = list[k];
      bary[v] = barycentre(index, neighbours, ends[v], ends[v + 1], index[v]);
    }
    sortByKey(list, start[r], start[r + 1], bary, scratch);
    numberRow(list, start[r], start[r + 1], index);
  };
  for (let r = 1; r < depth; r++) {
    sweep(r, g.predStart, g.pred);
  }
  for (let r = depth - 2; r >= 0; r--) {
    sweep(r, g.succStart, g.succ);
  }
  for (let r = 0; r < depth; r++) {
    passersLast(list, start[r], start[r + 1], passing, scratch);
  }
  return rows;
}

/** Members and dummies by layer, each layer in order of number. */
function rowsByLayer(layer: Int32Array): Rows {
  let depth = 0;
  for (let v = 0; v < layer.length; v++) {
    depth = Math.max(depth, layer[v] + 1);
  }
  const start = new Int32Array(depth + 1);
  for (let v = 0; v < layer.length; v++) {
    start[layer[v] + 1]++;
  }
  for (let r = 0; r < depth; r++) {
    start[r + 1] += start[r];
  }
  const list = new Int32Array(layer.length);
  const at = start.slice(0, depth);
  for (let v = 0; v < layer.length; v++) {
    list[at[layer[v]]++] = v;
  }
  return { start, list };
}

/** `index[v]`: v's place in the row `list[from .. to]`. */
function numberRow(list: Int32Array, from: number, to: number, index: Float64Array): void {
  for (let k = from; k < to; k++) {
    index[list[k]] = k - from;
  }
}

/** The mean place of neighbours `ns[from .. to]` (`own` where there are none). */
function barycentre(index: Float64Array, ns: Int32Array, from: number, to: number, own: number): number {
  if (from === to) {
    return own;
  }
  let s = 0;
  for (let k = from; k < to; k++) {
    s += index[ns[k]];
  }
  return s / (to - from);
}

/** Sorts `list[from .. to]` by `key`, stably (a merge sort: a row in order, as most are
 * after the first sweep, is about one pass). */
function sortByKey(list: Int32Array, from: number, to: number, key: Float64Array, scratch: Int32Array): void {
  if (to - from <= 16) {
    insertionSort(list, from, to, key);
    return;
  }
  const mid = (from + to) >>> 1;
  sortByKey(list, from, mid, key, scratch);
  sortByKey(list, mid, to, key, scratch);
  if (key[list[mid - 1]] <= key[list[mid]]) {
    return;
  }
  scratch.set(list.subarray(from, mid), from);
  let i = from;
  let j = mid;
  let k = from;
  while (i < mid && j < to) {
    list[k++] = key[list[j]] < key[scratch[i]] ? list[j++] : scratch[i++];
  }
  while (i < mid) {
    list[k++] = scratch[i++];
  }
}

/** Sorts a few, `list[from .. to]`, by `key`, stably. */
function insertionSort(list: Int32Array, from: number, to: number, key: Float64Array): void {
  for (let i = from + 1; i < to; i++) {
    const v = list[i];
    let j = i;
    while (j > from && key[list[j - 1]] > key[v]) {
      list[j] = list[j - 1];
      j--;
    }
    list[j] = v;
  }
}

/** The row `list[from .. to]` with what passes by after the rest, each in its order. */
function passersLast(list: Int32Array, from: number, to: number, passing: Uint8Array, scratch: Int32Array): void {
  let k = from;
  let aside = 0;
  for (let i = from; i < to; i++) {
    if (passing[list[i]]) {
      scratch[aside++] = list[i];
    } else {
      list[k++] = list[i];
    }
  }
  list.set(scratch.subarray(0, aside), k);
}

/** What crossing positions are worked out from, besides the graph: the members (the
 * first n; ports, dummies and what passes by are thin), their forced ranks and leads. */
interface Crossing {
  n: number;
  ranks: Ranks;
  leads: Float64Array;
  passing: Uint8Array;
}

/** Centres across the layers: each layer packed in order, each member as near the mean of
 * its neighbours in the layer above (for the first layer: below) as its neighbours in the
 * row allow, the row shifted as a whole to where it sits best (by what does not pass by,
 * where the row has any). */
function crossPositions(layers: Rows, g: DummyGraph & Extents, members: Crossing): Float64Array {
  const packing = packingOf(g, members);
  const { start, list } = layers;
  const depth = start.length - 1;
  for (let r = 0; r < depth; r++) {
    packRow(list, start[r], start[r + 1], packing, false);
  }
  // The first layers (inputs, constants) over what they feed.
  if (depth > 1) {
    packRow(list, start[0], start[1], packing, true);
  }
  alignLeft(layers, packing.centre, g.across, members.passing);
  return packing.centre;
}

/** What packing a row reads and writes: the graph, sizes across, where structure starts
 * (a member's lead, 0 for dummies), which are thin (ports and dummies: packed closer),
 * which pass by, centres so far, which are placed. By member and dummy. */
interface Packing {
  graph: DummyGraph;
  across: Float64Array;
  lead: Float64Array;
  thin: Uint8Array;
  passing: Uint8Array;
  centre: Float64Array;
  placed: Uint8Array;
}

function packingOf(g: DummyGraph & Extents, members: Crossing): Packing {
  const total = g.across.length;
  const { n, ranks, leads } = members;
  const thin = new Uint8Array(total).fill(1);
  for (let v = 0; v < n; v++) {
    thin[v] = ranks[v] >= PORT_IN ? 1 : 0;
  }
  const lead = new Float64Array(total);
  lead.set(leads.subarray(0, n));
  const centre = new Float64Array(total);
  return { graph: g, across: g.across, lead, thin, passing: members.passing, centre, placed: new Uint8Array(total) };
}

/** Where v would be: the mean of the centres (at their structure's start) of its inputs
 * (`below`: its outputs) that are placed; what passes by is placed by what it passes,
 * the rest by the rest. NaN: nowhere in particular. */
function wishOf(ctx: Packing, v: number, below: boolean): number {
  const { graph, placed, passing, centre, lead } = ctx;
  const ns = below ? graph.succ : graph.pred;
  const ends = below ? graph.succStart : graph.predStart;
  const fromAbove = below || passing[v] === 1;
  let s = 0;
  let k = 0;
  for (let i = ends[v]; i < ends[v + 1]; i++) {
    const u = ns[i];
    if (placed[u] && (fromAbove || !passing[u])) {
      s += centre[u] + lead[u];
      k++;
    }
  }
  return k ? s / k : NaN;
}

/** Packs the row `list[from .. to]` in order, each member as near where it wishes to be
 * (`wishOf`) as the ones before it allow, then shifts the row as a whole by the mean of
 * how far its members would rather be. */
function packRow(list: Int32Array, from: number, to: number, ctx: Packing, below: boolean): void {
  const { across, centre, passing, thin, lead } = ctx;
  let right = -Infinity;
  // How far the row would rather be, by what passes by (1) and the rest (0).
  let shift0 = 0;
  let shift1 = 0;
  let wanted0 = 0;
  let wanted1 = 0;
  let last = -1;
  let allPass = true;
  for (let k = from; k < to; k++) {
    const v = list[k];
    const wish = wishOf(ctx, v, below);
    // Wished for its structure's start (a wide cluster's column, not its middle).
    const d = wish - lead[v];
    const gap = last >= 0 && thin[v] && thin[last] ? DUMMY_GAP : NODE_GAP;
    last = v;
    const half = across[v] / 2;
    const lo = right + gap + half;
    const c = Number.isNaN(wish) ? (isFinite(right) ? lo : half) : Math.max(d, lo);
    centre[v] = c;
    right = c + half;
    allPass &&= passing[v] === 1;
    if (Number.isNaN(wish)) {
      continue;
    } else if (passing[v]) {
      shift1 += d - c;
      wanted1++;
    } else {
      shift0 += d - c;
      wanted0++;
    }
  }
  // Members with no wish of their own stay packed from the left: what passes by them
  // does not move them either.
  const shift = allPass ? shift1 : shift0;
  const wanted = allPass ? wanted1 : wanted0;
  for (let k = from; k < to; k++) {
    if (wanted) {
      centre[list[k]] += shift / wanted;
    }
    ctx.placed[list[k]] = 1;
  }
}

/** Moves the structure's left edge to 0: a row of what passes by, wider than what it
 * feeds, is moved to start there rather than widen the cluster to the left. */
function alignLeft(layers: Rows, centre: Float64Array, across: Float64Array, passing: Uint8Array): void {
  const n = across.length;
  const { start, list } = layers;
  let min = Infinity;
  for (let v = 0; v < n; v++) {
    if (!passing[v]) {
      min = Math.min(min, centre[v] - across[v] / 2);
    }
  }
  if (min === Infinity) {
    for (let v = 0; v < n; v++) {
      min = Math.min(min, centre[v] - across[v] / 2);
    }
  }
  for (let r = 0; r + 1 < start.length; r++) {
    let left = Infinity;
    let allPass = true;
    for (let k = start[r]; k < start[r + 1]; k++) {
      left = Math.min(left, centre[list[k]] - across[list[k]] / 2);
      allPass &&= passing[list[k]] === 1;
    }
    if (left < min && allPass) {
      for (let k = start[r]; k < start[r + 1]; k++) {
        centre[list[k]] += min - left;
      }
    }
  }
  for (let v = 0; v < n; v++) {
    centre[v] -= min;
  }
}

/** Local positions to page ones, from the root down. */
function absolute(
  input: LayeredInput,
  nAll: number,
  lx: Float64Array,
  ly: Float64Array,
  w: Float64Array,
  h: Float64Array,
  origin: { x: Float64Array; y: Float64Array },
  tree: Tree,
  rootSize: { w: number; h: number }
): LayeredOutput {
  const nItems = input.itemW.length;
  const nClusters = input.clusterParent.length;
  const out: LayeredOutput = {
    itemX: new Float64Array(nItems),
    itemY: new Float64Array(nItems),
    clusterX: new Float64Array(nClusters),
    clusterY: new Float64Array(nClusters),
    clusterW: w.slice(nAll),
    clusterH: h.slice(nAll),
    width: rootSize.w,
    height: rootSize.h,
    routeStart: new Int32Array(input.edgeSrc.length + 1),
    routePoints: new Float64Array(0),
    fresh: 0
  };
  // The content origin of each cluster on the page (the root's is 0, 0).
  const baseX = (c: number) => (c === nClusters ? 0 : out.clusterX[c] + origin.x[c]);
  const baseY = (c: number) => (c === nClusters ? 0 : out.clusterY[c] + origin.y[c]);
  for (let c = 0; c < nClusters; c++) {
    const p = tree.parent[c];
    out.clusterX[c] = baseX(p) + lx[nAll + c];
    out.clusterY[c] = baseY(p) + ly[nAll + c];
  }
  for (let i = 0; i < nItems; i++) {
    const p = tree.container[i];
    out.itemX[i] = baseX(p) + lx[i];
    out.itemY[i] = baseY(p) + ly[i];
  }
  return out;
}
