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
 * that group and those holding it are laid out again (the same output, sooner).
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

/** A child of a cluster in its own layered graph: an item (k >= 0) or a cluster (~k). */
type Member = number;

interface Local {
  members: Member[];
  /** Local edges, as member positions (deduplicated). */
  edges: LocalEdges;
  /** Where the local edges pass layers, and the ports cross theirs: local points. */
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

/** The local edges that carry each edge, from its source's cluster out to the one that
 * holds both ends and in to its target's: edge e's are `hopCluster[h]`, `hopEdge[h]` for
 * h in `hopStart[e] .. hopStart[e + 1]`. An edge leaves a cluster through a port on its
 * last layer and enters one through a port on its first, so that inside a cluster it
 * passes layers through their gaps as any other edge does. */
interface Lifted {
  hopStart: Int32Array;
  hopCluster: Int32Buffer;
  /** The hop's local edge: its place in its cluster's `edges` arrays (shared by all). */
  hopEdge: Int32Buffer;
  /** Ports: the i-th is item `nItems + i`, on the first (3) or last (4) layer. */
  portRank: number[];
}

/** A local edge's key: its ends' member positions. */
const edgeKey = (a: number, b: number) => a * 1048576 + b;
export const PORT_IN = 3;
export const PORT_OUT = 4;

/** Lay out `input`; `progress(done, total)` is told as clusters are done. */
export function layered(input: LayeredInput, progress?: (done: number, total: number) => void): LayeredOutput {
  const nItems = input.itemW.length;
  const nClusters = input.clusterParent.length;
  // Cluster index nClusters stands for the root.
  const root = nClusters;
  const parentOf = (c: number) => (input.clusterParent[c] < 0 ? root : input.clusterParent[c]);
  const depth = clusterDepths(input.clusterParent);
  const { locals, slot, clusterSlot } = membersOf(input, parentOf, root);
  const lifted = liftEdges(input, locals, slot, clusterSlot, parentOf, depth, root);

  // Items, then ports, then clusters.
  const nAll = nItems + lifted.portRank.length;
  const { w, h } = memberSizes(input, nAll, nClusters);
  // Local positions (relative to the holding cluster's content) of every member.
  const lx = new Float64Array(nAll + nClusters);
  const ly = new Float64Array(nAll + nClusters);
  // Where each member's structure starts across, from its centre (0 but for clusters):
  // what an edge into it should line up with.
  const lead = new Float64Array(nAll + nClusters);
  const contentOrigin = { x: new Float64Array(nClusters + 1), y: new Float64Array(nClusters + 1) };
  const order = [...Array(nClusters + 1).keys()].sort((a, b) => depth[b] - depth[a]);
  let done = 0;
  let fresh = 0;
  const rootSize = { w: 0, h: 0 };
  const key = (m: Member) => (m >= 0 ? m : nAll + ~m);
  const rankOf = (m: Member) => (m < 0 ? 0 : m < nItems ? input.itemRank[m] : lifted.portRank[m - nItems]);
  for (const c of order) {
    const local = locals[c];
    const { ranks, ...sizes } = memberScratch.of(local.members, key, rankOf, { w, h, lead });
    const misses = placedMisses;
    const placed = placeCached(local, ranks, sizes, input.rankdir);
    fresh += placedMisses - misses;
    local.members.forEach((m, k) => {
      lx[key(m)] = placed.x[k];
      ly[key(m)] = placed.y[k];
    });
    local.routes = placed.routes;
    const size = placed.size;
    if (c === root) {
      rootSize.w = size.w;
      rootSize.h = size.h;
    } else {
      frameCluster(input, c, placed, nAll, { w, h, lead }, contentOrigin);
    }
    progress?.(++done, nClusters + 1);
  }
  const out = absolute(input, nAll, lx, ly, w, h, contentOrigin, parentOf, rootSize);
  routeEdges(input, out, locals, lifted, contentOrigin, nClusters);
  out.fresh = fresh;
  return out;
}

/** Each cluster's depth (the root's children 1); the root, last, 0. */
function clusterDepths(clusterParent: Int32Array): Int32Array {
  const depth = new Int32Array(clusterParent.length + 1);
  for (let c = 0; c < clusterParent.length; c++) {
    depth[c] = clusterParent[c] < 0 ? 1 : depth[clusterParent[c]] + 1;
  }
  return depth;
}

/** Each cluster's members (its subclusters, then its items) and each one's position
 * there (`slot` for items, `clusterSlot` for clusters). */
function membersOf(
  input: LayeredInput,
  parentOf: (c: number) => number,
  root: number
): { locals: Local[]; slot: Int32Array; clusterSlot: Int32Array } {
  const nItems = input.itemW.length;
  const nClusters = input.clusterParent.length;
  const locals: Local[] = Array.from({ length: nClusters + 1 }, () => ({
    members: [],
    edges: NO_EDGES,
    routes: NO_ROUTES
  }));
  const slot = new Int32Array(nItems);
  const clusterSlot = new Int32Array(nClusters);
  for (let c = 0; c < nClusters; c++) {
    const local = locals[parentOf(c)];
    clusterSlot[c] = local.members.length;
    local.members.push(~c);
  }
  for (let i = 0; i < nItems; i++) {
    const p = input.itemParent[i] < 0 ? root : input.itemParent[i];
    slot[i] = locals[p].members.length;
    locals[p].members.push(i);
  }
  return { locals, slot, clusterSlot };
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
  origin: { x: Float64Array; y: Float64Array },
  nClusters: number
): void {
  const nEdges = lifted.hopStart.length - 1;
  const tb = input.rankdir === 'TB';
  const start = new Int32Array(nEdges + 1);
  const all = new PointBuffer();
  // Reused edge to edge.
  const trace = new EdgeTrace();
  for (let e = 0; e < nEdges; e++) {
    trace.length = 0;
    for (let hop = lifted.hopStart[e]; hop < lifted.hopStart[e + 1]; hop++) {
      const c = lifted.hopCluster.data[hop];
      const bx = c === nClusters ? 0 : out.clusterX[c] + origin.x[c];
      const by = c === nClusters ? 0 : out.clusterY[c] + origin.y[c];
      traceHop(trace, locals[c], lifted.hopEdge.data[hop], tb ? bx : by, tb ? by : bx, tb);
    }
    resolveDrops(input, out, e, trace);
    const { across, along, length } = trace;
    for (let k = 0; k < length; k++) {
      // A bend straight between its neighbours (down a run of layers) is no bend.
      if (k > 0 && k + 1 < length && across[k - 1] === across[k] && across[k] === across[k + 1]) {
        continue;
      }
      all.push(tb ? across[k] : along[k], tb ? along[k] : across[k]);
    }
    start[e + 1] = all.length / 2;
  }
  out.routeStart = start;
  out.routePoints = all.done();
}

/** An edge's points on the page, across and along the layers, as `routeEdges` gathers
 * them (the first `length`); a point of kind 1 (a drop out of a layer) or 2 (into one)
 * has its across NaN until `resolveDrops` takes it from the point before or after. */
class EdgeTrace {
  across = new Float64Array(64);
  along = new Float64Array(64);
  kind = new Uint8Array(64);
  length = 0;

  push(across: number, along: number, kind: number): void {
    if (this.length === this.kind.length) {
      this.grow();
    }
    this.across[this.length] = across;
    this.along[this.length] = along;
    this.kind[this.length++] = kind;
  }

  private grow(): void {
    const size = 2 * this.kind.length;
    const across = new Float64Array(size);
    const along = new Float64Array(size);
    const kind = new Uint8Array(size);
    across.set(this.across);
    along.set(this.along);
    kind.set(this.kind);
    Object.assign(this, { across, along, kind });
  }

  /** Local points `pts[from .. to]` of a cluster whose content starts at (`across`,
   * `along`) on the page. */
  put(pts: Float64Array, from: number, to: number, across: number, along: number, tb: boolean): void {
    for (let k = from; k < to; k += 2) {
      this.push(across + (tb ? pts[k] : pts[k + 1]), along + (tb ? pts[k + 1] : pts[k]), 0);
    }
  }
}

/** Appends to `trace` the points of the local edge `i` (its place in the shared `edges`
 * arrays) of a cluster whose content starts at (`across`, `along`) on the page: the port
 * it leaves through, its bends between the drop out of its source's layer and into its
 * target's, the port it enters through. */
function traceHop(trace: EdgeTrace, local: Local, i: number, across: number, along: number, tb: boolean): void {
  const { start, pts, ports } = local.routes;
  const j = i - local.edges.from;
  const a = 4 * local.edges.src[i];
  const b = 4 * local.edges.dst[i];
  if (!isNaN(ports[a])) {
    trace.put(ports, a, a + 4, across, along, tb);
  }
  if (start[j + 1] > start[j]) {
    trace.push(NaN, along + pts[start[j]], 1);
    trace.put(pts, start[j] + 2, start[j + 1], across, along, tb);
    trace.push(NaN, along + pts[start[j] + 1], 2);
  }
  if (!isNaN(ports[b])) {
    trace.put(ports, b, b + 4, across, along, tb);
  }
}

/** Numbers appended to a typed array that grows (a million points, without a JS array's
 * garbage). */
class PointBuffer {
  private data: Float64Array;
  length = 0;

  constructor(capacity = 1 << 16) {
    this.data = new Float64Array(Math.max(2, capacity));
  }

  push(x: number, y: number): void {
    if (this.length + 2 > this.data.length) {
      const bigger = new Float64Array(this.data.length * 2);
      bigger.set(this.data);
      this.data = bigger;
    }
    this.data[this.length++] = x;
    this.data[this.length++] = y;
  }

  done(): Float64Array {
    return this.data.slice(0, this.length);
  }
}

/** Drops take the across coordinate of the point before (kind 1) or after (kind 2): the
 * edge's source and target centres at its ends. */
function resolveDrops(input: LayeredInput, out: LayeredOutput, e: number, trace: EdgeTrace): void {
  const { across, kind, length } = trace;
  const tb = input.rankdir === 'TB';
  const a = input.edgeSrc[e];
  const b = input.edgeDst[e];
  const centre = (i: number) => (tb ? out.itemX[i] + input.itemW[i] / 2 : out.itemY[i] + input.itemH[i] / 2);
  let prev = length ? centre(a) : 0;
  for (let k = 0; k < length; k++) {
    if (kind[k] === 1) {
      across[k] = prev;
    }
    if (kind[k] !== 2) {
      prev = across[k];
    }
  }
  let next = length ? centre(b) : 0;
  for (let k = length - 1; k >= 0; k--) {
    if (kind[k] === 2) {
      across[k] = next;
    }
    next = across[k];
  }
}

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

/** Where each cluster's members' ranks and sizes are gathered: the same arrays, grown as
 * needed, for every cluster (the layout of a cluster keeps none of them). */
class MemberScratch {
  private data = [0, 1, 2, 3].map(() => new Float64Array(256));

  /** The ranks, sizes and leads of `members` (each member's sizes and lead at `key(m)`). */
  of(
    members: Member[],
    key: (m: Member) => number,
    rankOf: (m: Member) => number,
    all: { w: Float64Array; h: Float64Array; lead: Float64Array }
  ): MemberData {
    const n = members.length;
    if (this.data[0].length < n) {
      this.data = this.data.map(() => new Float64Array(2 * n));
    }
    const [ranks, widths, heights, leads] = this.data;
    for (let k = 0; k < n; k++) {
      const at = key(members[k]);
      ranks[k] = rankOf(members[k]);
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
  const n = local.members.length;
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

const NO_EDGES: LocalEdges = { src: new Int32Array(0), dst: new Int32Array(0), from: 0, to: 0 };

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

/** The local edges of all clusters as they are met, each once (cluster, source, target):
 * a hash set in typed arrays (not a Set per member: tens of thousands of objects a layout),
 * dealt out to the clusters at the end, each one's in the order met. */
class EdgeSet {
  private readonly c = new Int32Buffer();
  private readonly a = new Int32Buffer();
  private readonly b = new Int32Buffer();
  /** Open addressing: an index into the edges, -1 where free. */
  private table = new Int32Array(4096).fill(-1);

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

  /** Each cluster's edges (the root's last), grouped by cluster, in the order met; where
   * each edge (by its number) went. */
  deal(locals: Local[]): Int32Array {
    const n = this.c.length;
    const start = new Int32Array(locals.length + 1);
    for (let k = 0; k < n; k++) {
      start[this.c.data[k] + 1]++;
    }
    for (let c = 0; c < locals.length; c++) {
      start[c + 1] += start[c];
    }
    const src = new Int32Array(n);
    const dst = new Int32Array(n);
    const at = start.slice();
    const placeOf = new Int32Array(n);
    for (let k = 0; k < n; k++) {
      const i = at[this.c.data[k]]++;
      src[i] = this.a.data[k];
      dst[i] = this.b.data[k];
      placeOf[k] = i;
    }
    locals.forEach((local, c) => (local.edges = { src, dst, from: start[c], to: start[c + 1] }));
    return placeOf;
  }
}

function hashTriple(c: number, a: number, b: number): number {
  let h = Math.imul(c ^ 0x9e3779b9, 0x85ebca6b);
  h = Math.imul(h ^ a ^ (h >>> 15), 0xc2b2ae35);
  h = Math.imul(h ^ b ^ (h >>> 13), 0x27d4eb2f);
  return (h ^ (h >>> 16)) >>> 0;
}

/** `port(c, a, rank)`: the member position in cluster c of its port for edges from item a
 * that leave (PORT_OUT) or enter (PORT_IN) it, added on first use. One port per cluster,
 * way and source: what one value feeds inside fans out there. */
function portMaker(locals: Local[], lifted: Lifted, nItems: number): (c: number, a: number, rank: number) => number {
  // Per cluster, by source and way: small integers, which a Map hashes fastest.
  const ports: (Map<number, number> | undefined)[] = new Array(locals.length);
  return (c, a, rank) => {
    const name = a * 2 + (rank === PORT_OUT ? 1 : 0);
    const own = (ports[c] ??= new Map());
    let k = own.get(name);
    if (k === undefined) {
      k = locals[c].members.length;
      locals[c].members.push(nItems + lifted.portRank.length);
      lifted.portRank.push(rank);
      own.set(name, k);
    }
    return k;
  };
}

/** Adds the local edge sa → sb to cluster c's, and its hop to `hops`. */
function linkLocal(edges: EdgeSet, c: number, sa: number, sb: number, hops: Int32Buffer): void {
  hops.push(c);
  hops.push(edges.add(c, sa, sb));
}

/** Appends edge e's hops to `lifted`: those out to the common cluster (`out`, in order),
 * then those in to its target (`into`, gathered from the target outwards). */
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

function noHops(nEdges: number): Lifted {
  return {
    hopStart: new Int32Array(nEdges + 1),
    hopCluster: new Int32Buffer(),
    hopEdge: new Int32Buffer(),
    portRank: []
  };
}

/** Each edge counts in the cluster holding both ends, between the children holding them. */
function liftEdges(
  input: LayeredInput,
  locals: Local[],
  slot: Int32Array,
  clusterSlot: Int32Array,
  parentOf: (c: number) => number,
  depth: Int32Array,
  root: number
): Lifted {
  const containerOf = (i: number) => (input.itemParent[i] < 0 ? root : input.itemParent[i]);
  const lifted = noHops(input.edgeSrc.length);
  const port = portMaker(locals, lifted, input.itemW.length);
  const edges = new EdgeSet();
  // Hops out from the source and in from the target, reused edge to edge.
  const [out, into] = [new Int32Buffer(), new Int32Buffer()];
  for (let e = 0; e < input.edgeSrc.length; e++) {
    const a = input.edgeSrc[e];
    const b = input.edgeDst[e];
    lifted.hopStart[e + 1] = lifted.hopStart[e];
    if (a < 0 || b < 0) {
      continue;
    }
    let pa = containerOf(a);
    let pb = containerOf(b);
    let sa = slot[a];
    let sb = slot[b];
    out.length = 0;
    into.length = 0;
    while (pa !== pb) {
      if (depth[pa] >= depth[pb]) {
        linkLocal(edges, pa, sa, port(pa, a, PORT_OUT), out);
        sa = clusterSlot[pa];
        pa = parentOf(pa);
      } else {
        linkLocal(edges, pb, port(pb, a, PORT_IN), sb, into);
        sb = clusterSlot[pb];
        pb = parentOf(pb);
      }
    }
    if (sa === sb) {
      continue;
    }
    linkLocal(edges, pa, sa, sb, out);
    appendHops(lifted, e, out, into);
  }
  const placeOf = edges.deal(locals);
  for (let h = 0; h < lifted.hopEdge.length; h++) {
    lifted.hopEdge.data[h] = placeOf[lifted.hopEdge.data[h]];
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
  layers: number[][];
}

/** The structure of a cluster's layout: layers, dummies, order. */
function structureOf(local: Local, ranks: Ranks): Structure {
  const n = local.members.length;
  const { succ, pred } = adjacency(n, local.edges);
  const layer = assignLayers(n, succ, ranks);
  const graph = withDummies(n, layer, succ, pred);
  const passing = passingBy(n, ranks, graph.pred, graph.succ);
  const layers = orderLayers(graph.layer.length, graph.layer, graph.succ, graph.pred, passing);
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
  const n = local.members.length;
  if (!n) {
    return { w: 0, h: 0, anchor: 0 };
  }
  const { graph, passing, layers } = structure;
  const g = { ...graph, ...extents(n, graph.layer.length, sizes, rankdir) };
  const lead = (v: number) => (v < n ? sizes.leads[v] : 0);
  const centre = crossPositions(layers, g, v => v >= n || ranks[v] >= PORT_IN, passing, lead);
  const first = layers.find(row => row.length && !passing[row[0]])?.[0];
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
  local.routes = { ...routeLocalEdges(local, graph.layer, g, centre, rows, n, rankdir), ports };
  const { offset, extent } = rows;
  const length = Math.max(0, offset - RANK_GAP);
  const anchor = first === undefined ? extent / 2 : centre[first] + lead(first);
  return rankdir === 'TB' ? { w: extent, h: length, anchor } : { w: length, h: extent, anchor };
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

/** Where the layers go along: each as thick as its thickest member, `offset` past the
 * last; `extent` across; where each member's layer starts and ends, each dummy's layer
 * starts (`bendAt`, by dummy; its thickness into `g.thick`). */
interface Rows {
  bendAt: Float64Array;
  rowStart: Float64Array;
  rowEnd: Float64Array;
  offset: number;
  extent: number;
}

/** The layers one after another, `put(v, across, along, thick)` told each member's corner
 * (and its layer's thickness). */
function placeRows(
  layers: number[][],
  g: Extents,
  centre: Float64Array,
  n: number,
  put: (v: number, a: number, r: number, thick: number) => void
): Rows {
  const rows: Rows = {
    bendAt: new Float64Array(g.across.length - n),
    rowStart: new Float64Array(n),
    rowEnd: new Float64Array(n),
    offset: 0,
    extent: 0
  };
  for (const row of layers) {
    let thick = 0;
    for (const v of row) {
      thick = Math.max(thick, g.along[v]);
    }
    for (const v of row) {
      const a = centre[v] - g.across[v] / 2;
      rows.extent = Math.max(rows.extent, a + g.across[v]);
      if (v >= n) {
        rows.bendAt[v - n] = rows.offset;
        g.thick[v - n] = thick;
        continue;
      }
      rows.rowStart[v] = rows.offset;
      rows.rowEnd[v] = rows.offset + thick;
      // At the start of its layer: beside a cluster thousands of px long, an item stays
      // by its inputs, not halfway down.
      put(v, a, rows.offset, thick);
    }
    rows.offset += thick + RANK_GAP;
  }
  return rows;
}

/** Each edge down: first (along the layers' axis) to the end of its source's layer, then
 * straight through each layer it passes, in its gap, then in at the start of its target's
 * layer. A member shorter than its layer has nothing under it in the layer. Their points,
 * as `LocalRoutes` has them. */
function routeLocalEdges(
  local: Local,
  layer: Int32Array,
  g: { thick: Float64Array; chains: Map<number, number[]> },
  centre: Float64Array,
  rows: Rows,
  n: number,
  rankdir: 'TB' | 'LR'
): { start: Int32Array; pts: Float64Array } {
  const { src, dst, from, to } = local.edges;
  const start = new Int32Array(to - from + 1);
  // Two numbers an edge, four a dummy: all that is written.
  const pts = new PointBuffer(2 * (to - from) + 4 * g.thick.length);
  for (let k = from; k < to; k++) {
    const a = src[k];
    const b = dst[k];
    if (layer[b] > layer[a]) {
      pts.push(rows.rowEnd[a], rows.rowStart[b]);
      const chain = g.chains.get(edgeKey(a, b)) ?? [];
      // A dummy's top and bottom, but where the dummies before and after are in line
      // with it: a bend between two points straight across from it is no bend.
      for (let i = 0; i < chain.length; i++) {
        const d = chain[i];
        const c = centre[d];
        const r0 = rows.bendAt[d - n];
        if (i === 0 || centre[chain[i - 1]] !== c) {
          pts.push(rankdir === 'TB' ? c : r0, rankdir === 'TB' ? r0 : c);
        }
        if (i + 1 === chain.length || centre[chain[i + 1]] !== c) {
          const r1 = r0 + g.thick[d - n];
          pts.push(rankdir === 'TB' ? c : r1, rankdir === 'TB' ? r1 : c);
        }
      }
    }
    start[k - from + 1] = pts.length;
  }
  return { start, pts: pts.done() };
}

/** The members' graph with a dummy member in every layer that an edge passes (after
 * members `n`), the edge split along them: each chain by its edge's key `a * n + b`.
 * (`succ` and `pred` are grown in place.) */
function withDummies(n: number, layer: Int32Array, succ: number[][], pred: number[][]): DummyGraph {
  const grown: Growing = { layer: [...layer], succ, pred };
  const chains = new Map<number, number[]>();
  for (let a = 0; a < n; a++) {
    for (let k = 0; k < succ[a].length; k++) {
      const b = succ[a][k];
      if (layer[b] - layer[a] > 1) {
        chains.set(edgeKey(a, b), splitEdge(grown, a, k, b));
      }
    }
  }
  return { ...grown, layer: Int32Array.from(grown.layer), chains };
}

/** The members' graph as dummies are added to it. */
interface Growing {
  layer: number[];
  succ: number[][];
  pred: number[][];
}

/** The members' graph with its dummies. */
interface DummyGraph extends Omit<Growing, 'layer'> {
  layer: Int32Array;
  chains: Map<number, number[]>;
}

/** Members' and dummies' sizes across and along the layers, and (written as the layers
 * are placed) how thick each dummy's layer is. */
interface Extents {
  across: Float64Array;
  along: Float64Array;
  thick: Float64Array;
}

/** Splits the edge a → b (a's k-th output), which passes layers, along a new dummy in each
 * layer it passes; their chain, in order. */
function splitEdge(g: Growing, a: number, k: number, b: number): number[] {
  const chain: number[] = [];
  let prev = a;
  for (let i = 1; i < g.layer[b] - g.layer[a]; i++) {
    const d = g.layer.length;
    g.layer.push(g.layer[a] + i);
    g.succ.push([]);
    g.pred.push([prev]);
    if (prev === a) {
      g.succ[a][k] = d;
    } else {
      g.succ[prev].push(d);
    }
    chain.push(d);
    prev = d;
  }
  g.succ[prev].push(b);
  g.pred[b][g.pred[b].indexOf(a)] = prev;
  return chain;
}

/** What passes by: the members forced onto the first layer (the program's inputs, the
 * ports where edges enter a cluster) or the last (its outputs, the ports where edges
 * leave), and the dummies of the edges from the first or to the last. Rows of hundreds
 * of them are wider than what they pass: they follow it, never pull or push it sideways. */
function passingBy(n: number, ranks: Ranks, pred: number[][], succ: number[][]): Uint8Array {
  const aside = new Uint8Array(pred.length);
  for (let v = 0; v < n; v++) {
    aside[v] = ranks[v] === 1 || ranks[v] === PORT_IN || ranks[v] === 2 || ranks[v] === PORT_OUT ? 1 : 0;
  }
  const top = (v: number) => ranks[v] === 1 || ranks[v] === PORT_IN;
  const bottom = (v: number) => ranks[v] === 2 || ranks[v] === PORT_OUT;
  // A dummy's one input comes before it in its chain, its one output after it.
  const fromTop = new Uint8Array(pred.length);
  for (let d = n; d < pred.length; d++) {
    const u = pred[d][0];
    fromTop[d] = u < n ? (top(u) ? 1 : 0) : fromTop[u];
  }
  const toBottom = new Uint8Array(pred.length);
  for (let d = pred.length - 1; d >= n; d--) {
    const w = succ[d][0];
    toBottom[d] = w < n ? (bottom(w) ? 1 : 0) : toBottom[w];
    aside[d] = fromTop[d] | toBottom[d];
  }
  return aside;
}

/** The members of each layer in order: the program's order first, then one sweep down by
 * the barycentre of each member's inputs, one up by that of its outputs (stable); what
 * passes by (`passingBy`) after the rest, beside it. */
function orderLayers(
  n: number,
  layer: Int32Array,
  succ: number[][],
  pred: number[][],
  passing: Uint8Array
): number[][] {
  let depth = 0;
  for (let v = 0; v < n; v++) {
    depth = Math.max(depth, layer[v] + 1);
  }
  const layers: number[][] = Array.from({ length: depth }, () => []);
  for (let v = 0; v < n; v++) {
    layers[layer[v]].push(v);
  }
  const index = new Float64Array(n);
  const number = () => layers.forEach(row => row.forEach((v, k) => (index[v] = k)));
  number();
  const bary = new Float64Array(n);
  const sweep = (rows: number[][], neighbours: number[][]) => {
    for (const row of rows) {
      for (const v of row) {
        const ns = neighbours[v];
        bary[v] = ns.length ? ns.reduce((s, u) => s + index[u], 0) / ns.length : index[v];
      }
      row.sort((a, b) => bary[a] - bary[b] || index[a] - index[b]);
      row.forEach((v, k) => (index[v] = k));
    }
  };
  sweep(layers.slice(1), pred);
  sweep(layers.slice(0, -1).reverse(), succ);
  return layers.map(row => [...row.filter(v => !passing[v]), ...row.filter(v => passing[v])]);
}

/** Centres across the layers: each layer packed in order, each member as near the mean of
 * its neighbours in the layer above (for the first layer: below) as its neighbours in the
 * row allow, the row shifted as a whole to where it sits best (by what does not pass by,
 * where the row has any). */
function crossPositions(
  layers: number[][],
  g: { across: Float64Array; pred: number[][]; succ: number[][] },
  thin: (v: number) => boolean,
  passing: Uint8Array,
  lead: (v: number) => number
): Float64Array {
  const { across, pred, succ } = g;
  const n = across.length;
  const centre = new Float64Array(n);
  const placed = new Uint8Array(n);
  const packing: Packing = { across, centre, placed, passing, thin, lead };
  const pack = (row: number[], want: (v: number) => number | null) => packRow(row, want, packing);
  // What passes by is placed by what it passes; the rest by the rest.
  const mean = (ns: number[], fromAbove: boolean) => {
    let s = 0;
    let k = 0;
    for (const u of ns) {
      if (placed[u] && (fromAbove || !passing[u])) {
        s += centre[u] + lead(u);
        k++;
      }
    }
    return k ? s / k : null;
  };
  layers.forEach(row => pack(row, v => mean(pred[v], passing[v] === 1)));
  // The first layers (inputs, constants) over what they feed.
  if (layers.length > 1) {
    pack(layers[0], v => mean(succ[v], true));
  }
  alignLeft(layers, centre, across, passing);
  return centre;
}

/** What packing a row reads and writes: sizes across, centres so far, which members are
 * placed, which pass by, which are thin (ports, dummies), where structure starts. */
interface Packing {
  across: Float64Array;
  centre: Float64Array;
  placed: Uint8Array;
  passing: Uint8Array;
  thin: (v: number) => boolean;
  lead: (v: number) => number;
}

/** Packs a row in order, each member as near where it wishes to be (`want`, its centre;
 * null: no wish) as the ones before it allow, then shifts the row as a whole by the mean
 * of how far its members would rather be. */
function packRow(row: number[], want: (v: number) => number | null, ctx: Packing): void {
  let right = -Infinity;
  // How far the row would rather be, by what passes by (1) and the rest (0).
  const shift = [0, 0];
  const wanted = [0, 0];
  let last = -1;
  for (const v of row) {
    // Wished for its structure's start (a wide cluster's column, not its middle).
    const wish = want(v);
    const d = wish === null ? null : wish - ctx.lead(v);
    const gap = last >= 0 && ctx.thin(v) && ctx.thin(last) ? DUMMY_GAP : NODE_GAP;
    last = v;
    const lo = right + gap + ctx.across[v] / 2;
    const c = d === null ? (isFinite(right) ? lo : ctx.across[v] / 2) : Math.max(d, lo);
    ctx.centre[v] = c;
    right = c + ctx.across[v] / 2;
    if (d !== null) {
      shift[ctx.passing[v]] += d - c;
      wanted[ctx.passing[v]]++;
    }
  }
  // Members with no wish of their own stay packed from the left: what passes by them
  // does not move them either.
  const by = row.some(v => !ctx.passing[v]) ? 0 : 1;
  if (wanted[by]) {
    for (const v of row) {
      ctx.centre[v] += shift[by] / wanted[by];
    }
  }
  row.forEach(v => (ctx.placed[v] = 1));
}

/** Moves the structure's left edge to 0: a row of what passes by, wider than what it
 * feeds, is moved to start there rather than widen the cluster to the left. */
function alignLeft(layers: number[][], centre: Float64Array, across: Float64Array, passing: Uint8Array): void {
  const n = across.length;
  const leftOf = (vs: Iterable<number>) => {
    let min = Infinity;
    for (const v of vs) {
      min = Math.min(min, centre[v] - across[v] / 2);
    }
    return min;
  };
  let min = Infinity;
  for (let v = 0; v < n; v++) {
    if (!passing[v]) {
      min = Math.min(min, centre[v] - across[v] / 2);
    }
  }
  if (min === Infinity) {
    min = leftOf(centre.keys());
  }
  for (const row of layers) {
    const left = leftOf(row);
    if (left < min && row.every(v => passing[v])) {
      row.forEach(v => (centre[v] += min - left));
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
  parentOf: (c: number) => number,
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
    const p = parentOf(c);
    out.clusterX[c] = baseX(p) + lx[nAll + c];
    out.clusterY[c] = baseY(p) + ly[nAll + c];
  }
  for (let i = 0; i < nItems; i++) {
    const p = input.itemParent[i] < 0 ? nClusters : input.itemParent[i];
    out.itemX[i] = baseX(p) + lx[i];
    out.itemY[i] = baseY(p) + ly[i];
  }
  return out;
}
