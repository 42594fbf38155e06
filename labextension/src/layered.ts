/**
 * A layered layout that scales: about linear in the items and edges shown, for views too
 * big for Graphviz. After iongraph (SpiderMonkey's graph viewer): layers by longest path,
 * no crossing minimisation beyond a cheap barycentre sweep, and stable (the same view is
 * always drawn the same way; opening a group moves only what follows it in its layers).
 *
 * Compound: every open group is laid out on its own, innermost first, as a layered graph
 * of its children (items and open subgroups, whose size is known by then); an edge counts
 * in the group that holds both of its ends, between the children that hold them. Pure
 * data in, data out (no DOM): it runs in the layout worker and in the unit tests.
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
  edges: Map<number, Set<number>>;
  /** Bends of the local edges that pass layers (key `a * members + b`): local points. */
  routes: Map<number, number[]>;
}

/** The local edge that stands for each edge: its cluster (-1: none) and its key there. */
interface Lifted {
  cluster: Int32Array;
  key: Float64Array;
}

/** Lay out `input`; `progress(done, total)` is told as clusters are done. */
export function layered(input: LayeredInput, progress?: (done: number, total: number) => void): LayeredOutput {
  const nItems = input.itemW.length;
  const nClusters = input.clusterParent.length;
  // Cluster index nClusters stands for the root.
  const root = nClusters;
  const parentOf = (c: number) => (input.clusterParent[c] < 0 ? root : input.clusterParent[c]);
  const depth = new Int32Array(nClusters + 1);
  for (let c = 0; c < nClusters; c++) {
    depth[c] = input.clusterParent[c] < 0 ? 1 : depth[input.clusterParent[c]] + 1;
  }
  const locals: Local[] = Array.from({ length: nClusters + 1 }, () => ({
    members: [],
    edges: new Map(),
    routes: new Map()
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
  const lifted = liftEdges(input, locals, slot, clusterSlot, parentOf, depth, root);

  const w = new Float64Array(nItems + nClusters);
  const h = new Float64Array(nItems + nClusters);
  w.set(input.itemW);
  h.set(input.itemH);
  // Local positions (relative to the holding cluster's content) of every member.
  const lx = new Float64Array(nItems + nClusters);
  const ly = new Float64Array(nItems + nClusters);
  const contentOrigin = { x: new Float64Array(nClusters + 1), y: new Float64Array(nClusters + 1) };
  const order = [...Array(nClusters + 1).keys()].sort((a, b) => depth[b] - depth[a]);
  let done = 0;
  const rootSize = { w: 0, h: 0 };
  for (const c of order) {
    const local = locals[c];
    const key = (m: Member) => (m >= 0 ? m : nItems + ~m);
    const ranks = local.members.map(m => (m >= 0 ? input.itemRank[m] : 0));
    const size = placeLocal(
      local,
      ranks,
      local.members.map(m => w[key(m)]),
      local.members.map(m => h[key(m)]),
      input.rankdir,
      (k, x, y) => {
        lx[key(local.members[k])] = x;
        ly[key(local.members[k])] = y;
      }
    );
    if (c === root) {
      rootSize.w = size.w;
      rootSize.h = size.h;
    } else {
      const labelBand = input.labelH[c] + 4;
      contentOrigin.x[c] = CLUSTER_PAD;
      contentOrigin.y[c] = CLUSTER_PAD + labelBand;
      w[nItems + c] = Math.max(size.w + 2 * CLUSTER_PAD, input.labelW[c] + 2 * CLUSTER_PAD);
      h[nItems + c] = size.h + 2 * CLUSTER_PAD + labelBand;
      if (size.w + 2 * CLUSTER_PAD < w[nItems + c]) {
        contentOrigin.x[c] += (w[nItems + c] - size.w - 2 * CLUSTER_PAD) / 2;
      }
    }
    progress?.(++done, nClusters + 1);
  }
  const out = absolute(input, lx, ly, w, h, contentOrigin, parentOf, rootSize);
  routeEdges(out, locals, lifted, contentOrigin, nClusters);
  return out;
}

/** Each edge's bends on the page: its local edge's, moved to its cluster's content. */
function routeEdges(
  out: LayeredOutput,
  locals: Local[],
  lifted: Lifted,
  origin: { x: Float64Array; y: Float64Array },
  nClusters: number
): void {
  const nEdges = lifted.cluster.length;
  const start = new Int32Array(nEdges + 1);
  for (let e = 0; e < nEdges; e++) {
    const c = lifted.cluster[e];
    const pts = c < 0 ? undefined : locals[c].routes.get(lifted.key[e]);
    start[e + 1] = start[e] + (pts ? pts.length / 2 : 0);
  }
  const points = new Float64Array(2 * start[nEdges]);
  for (let e = 0; e < nEdges; e++) {
    const c = lifted.cluster[e];
    const pts = c < 0 ? undefined : locals[c].routes.get(lifted.key[e]);
    if (!pts) {
      continue;
    }
    const bx = c === nClusters ? 0 : out.clusterX[c] + origin.x[c];
    const by = c === nClusters ? 0 : out.clusterY[c] + origin.y[c];
    for (let k = 0; k < pts.length; k += 2) {
      points[2 * start[e] + k] = bx + pts[k];
      points[2 * start[e] + k + 1] = by + pts[k + 1];
    }
  }
  out.routeStart = start;
  out.routePoints = points;
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
  const lifted: Lifted = {
    cluster: new Int32Array(input.edgeSrc.length).fill(-1),
    key: new Float64Array(input.edgeSrc.length)
  };
  for (let e = 0; e < input.edgeSrc.length; e++) {
    const a = input.edgeSrc[e];
    const b = input.edgeDst[e];
    if (a < 0 || b < 0) {
      continue;
    }
    let pa = containerOf(a);
    let pb = containerOf(b);
    let sa = slot[a];
    let sb = slot[b];
    while (pa !== pb) {
      if (depth[pa] >= depth[pb]) {
        sa = clusterSlot[pa];
        pa = parentOf(pa);
      } else {
        sb = clusterSlot[pb];
        pb = parentOf(pb);
      }
    }
    if (sa === sb) {
      continue;
    }
    const edges = locals[pa].edges;
    let out = edges.get(sa);
    if (!out) {
      out = new Set();
      edges.set(sa, out);
    }
    out.add(sb);
    lifted.cluster[e] = pa;
    lifted.key[e] = sa * locals[pa].members.length + sb;
  }
  return lifted;
}

/** Layers by longest path from the sources (back edges of a depth-first search ignored),
 * members without inputs pulled down next to their first consumer; forced ranks first and
 * last. */
export function assignLayers(n: number, succ: number[][], ranks: number[]): Int32Array {
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
  const sources = ranks.some(r => r === 1) ? 1 : 0;
  let last = 0;
  for (let v = 0; v < n; v++) {
    if (ranks[v] === 1) {
      layer[v] = 0;
    } else if (ranks[v] !== 2) {
      layer[v] += sources;
      last = Math.max(last, layer[v]);
    }
  }
  for (let v = 0; v < n; v++) {
    if (ranks[v] === 2) {
      layer[v] = last + 1;
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

/** Lay out one cluster's members; `put(k, x, y)` receives their top-left corners. */
function placeLocal(
  local: Local,
  ranks: number[],
  widths: number[],
  heights: number[],
  rankdir: 'TB' | 'LR',
  put: (k: number, x: number, y: number) => void
): { w: number; h: number } {
  const n = local.members.length;
  if (!n) {
    return { w: 0, h: 0 };
  }
  const succ: number[][] = Array.from({ length: n }, () => []);
  const pred: number[][] = Array.from({ length: n }, () => []);
  for (const [a, outs] of local.edges) {
    for (const b of outs) {
      succ[a].push(b);
      pred[b].push(a);
    }
  }
  const layer = assignLayers(n, succ, ranks);
  const g = withDummies(n, layer, succ, pred, rankdir === 'TB' ? widths : heights, rankdir === 'TB' ? heights : widths);
  const layers = orderLayers(g.across.length, g.layer, g.succ, g.pred);
  const centre = crossPositions(layers, g.across, g.pred, g.succ, n);
  const bendAt: number[] = new Array(g.across.length - n);
  let offset = 0;
  let extent = 0;
  for (const row of layers) {
    let thick = 0;
    for (const v of row) {
      thick = Math.max(thick, g.along[v]);
    }
    for (const v of row) {
      const a = centre[v] - g.across[v] / 2;
      extent = Math.max(extent, a + g.across[v]);
      if (v >= n) {
        bendAt[v - n] = offset;
        g.thick[v - n] = thick;
        continue;
      }
      const r = offset + (thick - g.along[v]) / 2;
      if (rankdir === 'TB') {
        put(v, a, r);
      } else {
        put(v, r, a);
      }
    }
    offset += thick + RANK_GAP;
  }
  // An edge passing a layer goes straight through it, in its gap: in at the layer's
  // start and out at its end.
  for (const [key, dummies] of g.chains) {
    const pts: number[] = [];
    for (const d of dummies) {
      const c = centre[d];
      const r0 = bendAt[d - n];
      const r1 = r0 + g.thick[d - n];
      if (rankdir === 'TB') {
        pts.push(c, r0, c, r1);
      } else {
        pts.push(r0, c, r1, c);
      }
    }
    local.routes.set(key, pts);
  }
  const length = Math.max(0, offset - RANK_GAP);
  return rankdir === 'TB' ? { w: extent, h: length } : { w: length, h: extent };
}

/** The members' graph with a dummy member in every layer that an edge passes (after
 * members `n`), the edge split along them: each chain by its edge's key `a * n + b`. */
function withDummies(
  n: number,
  layer: Int32Array,
  succ: number[][],
  pred: number[][],
  across: number[],
  along: number[]
): {
  layer: Int32Array;
  succ: number[][];
  pred: number[][];
  across: number[];
  along: number[];
  thick: number[];
  chains: Map<number, number[]>;
} {
  const layers = [...layer];
  const s2 = succ.map(list => [...list]);
  const p2 = pred.map(list => [...list]);
  const a2 = [...across];
  const l2 = [...along];
  const chains = new Map<number, number[]>();
  for (let a = 0; a < n; a++) {
    for (let k = 0; k < succ[a].length; k++) {
      const b = succ[a][k];
      const span = layer[b] - layer[a];
      if (span <= 1) {
        continue;
      }
      const chain: number[] = [];
      let prev = a;
      for (let i = 1; i < span; i++) {
        const d = layers.length;
        layers.push(layer[a] + i);
        a2.push(DUMMY_W);
        l2.push(0);
        s2.push([]);
        p2.push([prev]);
        if (prev === a) {
          s2[a][k] = d;
        } else {
          s2[prev].push(d);
        }
        chain.push(d);
        prev = d;
      }
      s2[prev].push(b);
      p2[b][p2[b].indexOf(a)] = prev;
      chains.set(a * n + b, chain);
    }
  }
  return {
    layer: Int32Array.from(layers),
    succ: s2,
    pred: p2,
    across: a2,
    along: l2,
    thick: new Array(a2.length - n).fill(0),
    chains
  };
}

/** The members of each layer in order: the program's order first, then one sweep down by
 * the barycentre of each member's inputs, one up by that of its outputs (stable). */
function orderLayers(n: number, layer: Int32Array, succ: number[][], pred: number[][]): number[][] {
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
  const sweep = (rows: number[][], neighbours: number[][]) => {
    for (const row of rows) {
      const bary = new Map<number, number>();
      for (const v of row) {
        const ns = neighbours[v];
        bary.set(v, ns.length ? ns.reduce((s, u) => s + index[u], 0) / ns.length : index[v]);
      }
      row.sort((a, b) => bary.get(a)! - bary.get(b)! || index[a] - index[b]);
      row.forEach((v, k) => (index[v] = k));
    }
  };
  sweep(layers.slice(1), pred);
  sweep(layers.slice(0, -1).reverse(), succ);
  return layers;
}

/** Centres across the layers: each layer packed in order, each member as near the mean of
 * its neighbours in the layer above (for the first layer: below) as its neighbours in the
 * row allow, the row shifted as a whole to where it sits best. */
function crossPositions(
  layers: number[][],
  across: number[],
  pred: number[][],
  succ: number[][],
  real: number
): Float64Array {
  const n = across.length;
  const centre = new Float64Array(n);
  const placed = new Uint8Array(n);
  const pack = (row: number[], want: (v: number) => number | null) => {
    let right = -Infinity;
    let shift = 0;
    let wanted = 0;
    let last = -1;
    for (const v of row) {
      const d = want(v);
      const gap = v >= real && last >= real ? DUMMY_GAP : NODE_GAP;
      last = v;
      const lo = right + gap + across[v] / 2;
      const c = d === null ? (isFinite(right) ? lo : across[v] / 2) : Math.max(d, lo);
      centre[v] = c;
      right = c + across[v] / 2;
      if (d !== null) {
        shift += d - c;
        wanted++;
      }
    }
    if (wanted) {
      for (const v of row) {
        centre[v] += shift / wanted;
      }
    }
    row.forEach(v => (placed[v] = 1));
  };
  const mean = (ns: number[]) => {
    let s = 0;
    let k = 0;
    for (const u of ns) {
      if (placed[u]) {
        s += centre[u];
        k++;
      }
    }
    return k ? s / k : null;
  };
  layers.forEach(row => pack(row, v => mean(pred[v])));
  // The first layers (inputs, constants) over what they feed.
  if (layers.length > 1) {
    pack(layers[0], v => mean(succ[v]));
  }
  let min = Infinity;
  for (let v = 0; v < n; v++) {
    min = Math.min(min, centre[v] - across[v] / 2);
  }
  for (let v = 0; v < n; v++) {
    centre[v] -= min;
  }
  return centre;
}

/** Local positions to page ones, from the root down. */
function absolute(
  input: LayeredInput,
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
    clusterW: w.slice(nItems),
    clusterH: h.slice(nItems),
    width: rootSize.w,
    height: rootSize.h,
    routeStart: new Int32Array(input.edgeSrc.length + 1),
    routePoints: new Float64Array(0)
  };
  // The content origin of each cluster on the page (the root's is 0, 0).
  const baseX = (c: number) => (c === nClusters ? 0 : out.clusterX[c] + origin.x[c]);
  const baseY = (c: number) => (c === nClusters ? 0 : out.clusterY[c] + origin.y[c]);
  for (let c = 0; c < nClusters; c++) {
    const p = parentOf(c);
    out.clusterX[c] = baseX(p) + lx[nItems + c];
    out.clusterY[c] = baseY(p) + ly[nItems + c];
  }
  for (let i = 0; i < nItems; i++) {
    const p = input.itemParent[i] < 0 ? nClusters : input.itemParent[i];
    out.itemX[i] = baseX(p) + lx[i];
    out.itemY[i] = baseY(p) + ly[i];
  }
  return out;
}
