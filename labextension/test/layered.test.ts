import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';

import { boxAttrs, clusterAttrs, legendOf, nodeAttrs } from '../src/graph/dot';
import { CLUSTER_PAD, LayeredInput, LayeredOutput, assignLayers, layered } from '../src/graph/layered';
import { sceneOf } from '../src/graph/scene';
import { sceneIndexOf } from '../src/graph/sceneindex';
import { sceneSvg } from '../src/graph/scenesvg';
import { SpatialGrid } from '../src/graph/spatialgrid';
import { GraphIndex, buildView, visibleCount } from '../src/graph/visible';
import { repeatGraph, smallGraph } from './fixtures';

type Box = { x: number; y: number; w: number; h: number };

function itemBox(input: LayeredInput, out: LayeredOutput, k: number): Box {
  return { x: out.itemX[k], y: out.itemY[k], w: input.itemW[k], h: input.itemH[k] };
}

function clusterBox(out: LayeredOutput, c: number): Box {
  return { x: out.clusterX[c], y: out.clusterY[c], w: out.clusterW[c], h: out.clusterH[c] };
}

const overlap = (a: Box, b: Box) => a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;
const inside = (a: Box, b: Box) => a.x >= b.x && a.y >= b.y && a.x + a.w <= b.x + b.w && a.y + a.h <= b.y + b.h;

/** A chain of `n` items in `groups` nested clusters of `n / groups` each, with skip edges. */
function chain(n: number, groups: number): LayeredInput {
  const per = n / groups;
  const edges: [number, number][] = [];
  for (let i = 0; i + 1 < n; i++) {
    edges.push([i, i + 1]);
    if (i + 3 < n && i % 5 === 0) {
      edges.push([i, i + 3]);
    }
  }
  return {
    itemW: new Float64Array(n).fill(60),
    itemH: new Float64Array(n).fill(20),
    itemParent: Int32Array.from({ length: n }, (_, i) => Math.floor(i / per)),
    itemRank: new Uint8Array(n),
    clusterParent: new Int32Array(groups).fill(-1),
    labelW: new Float64Array(groups).fill(40),
    labelH: new Float64Array(groups).fill(14),
    edgeSrc: Int32Array.from(edges, e => e[0]),
    edgeDst: Int32Array.from(edges, e => e[1]),
    rankdir: 'TB'
  };
}

describe('layered layout', () => {
  it('layers by longest path, a cycle broken, forced ranks first and last', () => {
    // 0 → 1 → 2 → 0 (a cycle), 3 free, 4 an input (rank 1), 5 an output (rank 2)
    const succ = [[1], [2], [0], [], [0], []];
    const layer = assignLayers(6, succ, [0, 0, 0, 0, 1, 2]);
    assert.equal(layer[4], 0);
    assert.ok(layer[0] < layer[1] && layer[1] < layer[2]);
    assert.equal(layer[5], Math.max(...layer));
    assert.ok(layer[3] >= 1);
  });

  it('places every item inside its cluster, downstream of its inputs, without overlaps', () => {
    const input = chain(60, 3);
    const out = layered(input);
    for (let e = 0; e < input.edgeSrc.length; e++) {
      const a = itemBox(input, out, input.edgeSrc[e]);
      const b = itemBox(input, out, input.edgeDst[e]);
      if (input.itemParent[input.edgeSrc[e]] === input.itemParent[input.edgeDst[e]]) {
        assert.ok(b.y >= a.y + a.h, `edge ${e} points up`);
      }
    }
    for (let k = 0; k < 60; k++) {
      const c = clusterBox(out, input.itemParent[k]);
      assert.ok(inside(itemBox(input, out, k), c), `item ${k} outside its cluster`);
      assert.ok(out.itemY[k] >= c.y + CLUSTER_PAD + input.labelH[input.itemParent[k]], 'under the label');
      for (let j = k + 1; j < 60; j++) {
        assert.ok(!overlap(itemBox(input, out, k), itemBox(input, out, j)), `items ${k} and ${j} overlap`);
      }
    }
    for (let c = 0; c < 3; c++) {
      for (let d = c + 1; d < 3; d++) {
        assert.ok(!overlap(clusterBox(out, c), clusterBox(out, d)), `clusters ${c} and ${d} overlap`);
      }
    }
    // The clusters follow one another along the edges between them.
    assert.ok(out.clusterY[1] > out.clusterY[0] && out.clusterY[2] > out.clusterY[1]);
  });

  it('is stable: the same view is drawn the same way; left to right swaps the axes', () => {
    const a = layered(chain(40, 4));
    const b = layered(chain(40, 4));
    assert.deepEqual([...a.itemX], [...b.itemX]);
    assert.deepEqual([...a.itemY], [...b.itemY]);
    const lr = layered({ ...chain(40, 4), rankdir: 'LR' });
    assert.ok(lr.width > lr.height && a.height > a.width);
  });

  it('grows about linearly with the items', () => {
    // Work, not time: 10x the items lay out to 10x the extent along the ranks, as a chain.
    const small = layered(chain(500, 5));
    const big = layered(chain(5000, 50));
    assert.ok(big.height > 8 * small.height && big.height < 12 * small.height);
  });

  it('tells its progress, one cluster at a time', () => {
    const told: number[] = [];
    layered(chain(40, 4), (done, total) => told.push(done / total));
    assert.equal(told.length, 5);
    assert.equal(told[told.length - 1], 1);
  });
});

describe('scene', () => {
  it('draws a view with the DOT’s labels and colours, items in their open groups', () => {
    const graph = smallGraph();
    const index = new GraphIndex(graph);
    const view = buildView(index, [0, 2]);
    const scene = sceneOf(view, 'TB');
    assert.equal(scene.items.length, visibleCount(view));
    assert.deepEqual(scene.clusters, [2]);
    const legend = legendOf(graph);
    scene.items.forEach((id, k) => {
      const num = Number(id.slice(1));
      const attrs = id[0] === 'g' ? boxAttrs(graph, num) : nodeAttrs(graph, num, legend);
      assert.equal(scene.itemLooks[k].fill, attrs.fillcolor);
      assert.deepEqual(scene.itemLooks[k].lines, attrs.label.split('\n'));
      const holder = id[0] === 'g' ? graph.groups[num].parent : graph.nodes[num].group;
      assert.equal(scene.layout.itemParent[k], holder === 0 ? -1 : scene.clusters.indexOf(holder!));
    });
    assert.equal(scene.clusterLooks[0].lines[0], clusterAttrs(graph, 2).label);
    assert.equal(scene.edgeSrc.length, view.edges.length);
    assert.ok([...scene.edgeSrc, ...scene.edgeDst].every(k => k >= 0));
  });

  it('indexes with the layout what a rectangle meets: the same items and edge points as a search of all', () => {
    const input = chain(300, 6);
    const out = layered(input);
    const index = sceneIndexOf(input, out);
    const items = new SpatialGrid(index.items);
    const segments = new SpatialGrid(index.segments);
    for (const [x, y, s] of [
      [0, 0, 50],
      [out.width / 2, out.height / 3, 400],
      [out.width / 3, out.height - 200, 120]
    ]) {
      const found = new Set(items.within(x, y, x + s, y + s));
      for (let k = 0; k < 300; k++) {
        const b = itemBox(input, out, k);
        if (b.x <= x + s && b.y <= y + s && b.x + b.w >= x && b.y + b.h >= y) {
          assert.ok(found.has(k), `item ${k} meets the rectangle but was not found`);
        }
      }
      const runs = segments.within(x, y, x + s, y + s);
      const inRun = (k: number) => runs.some(r => index.runs[2 * r] <= k && k < index.runs[2 * r + 1]);
      let meeting = 0;
      for (let e = 0; e < input.edgeSrc.length; e++) {
        const line = edgePolyline(input, out, e);
        line.forEach(([px, py], i) => {
          const k = index.edges.start[e] + i;
          assert.deepEqual([index.edges.pts[2 * k], index.edges.pts[2 * k + 1]], [px, py]);
          const q = line[i + 1];
          if (
            q &&
            Math.min(px, q[0]) <= x + s &&
            Math.max(px, q[0]) >= x &&
            Math.min(py, q[1]) <= y + s &&
            Math.max(py, q[1]) >= y
          ) {
            meeting++;
            assert.ok(inRun(k), `segment ${i} of edge ${e} meets the rectangle but was not found`);
          }
        });
      }
      assert.ok(found.size > 0 && meeting > 0, 'the rectangle meets something');
    }
  });

  it('writes the scene as SVG: every item with its label and fill, every group and edge', () => {
    const graph = smallGraph();
    const view = buildView(new GraphIndex(graph), [0, 2]);
    const scene = sceneOf(view, 'TB');
    const svg = sceneSvg(scene, layered(scene.layout));
    assert.ok(svg.startsWith('<?xml') && svg.trimEnd().endsWith('</svg>'));
    const nodes = [...svg.matchAll(/<g class="node" id="([^"]+)"><path d="[^"]+" fill="([^"]+)"/g)];
    assert.deepEqual(
      nodes.map(m => m[1]),
      scene.items
    );
    nodes.forEach((m, k) => assert.equal(m[2], scene.itemLooks[k].fill));
    for (const l of scene.itemLooks) {
      for (const line of l.lines.filter(t => t.trim())) {
        assert.ok(
          svg.includes(`>${line.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')}</text>`),
          line
        );
      }
    }
    assert.equal([...svg.matchAll(/<g class="cluster" id="cluster_g2">/g)].length, 1);
    assert.equal([...svg.matchAll(/<g class="edge">/g)].length, scene.edgeSrc.length);
  });

  it('lays out a folded repeat opened with every layer, nested clusters holding their items', () => {
    const graph = repeatGraph();
    const index = new GraphIndex(graph);
    const view = buildView(index, index.expandToDepth(10));
    const scene = sceneOf(view, 'TB');
    const out = layered(scene.layout);
    scene.clusters.forEach((gid, c) => {
      const parent = scene.layout.clusterParent[c];
      if (parent >= 0) {
        assert.ok(inside(clusterBox(out, c), clusterBox(out, parent)), `cluster_g${gid} outside its parent`);
      }
    });
  });

  it('lays out a view the same way again, from the clusters it remembers', () => {
    const input = chain(120, 6);
    const first = layered(input);
    const again = layered(input);
    assert.deepEqual({ ...again, fresh: first.fresh }, first);
    assert.equal(again.fresh, 0, 'every cluster taken from before');
    // One cluster changed (an item grew): the others keep their places inside.
    const grown = { ...input, itemW: input.itemW.slice() };
    grown.itemW[0] = 200;
    const changed = layered(grown);
    for (let k = 20; k < 120; k++) {
      const c = input.itemParent[k];
      assert.equal(changed.itemX[k] - changed.clusterX[c], first.itemX[k] - first.clusterX[c], `item ${k}`);
    }
  });

  it('routes an edge that passes layers through their gaps, clear of every other box', () => {
    for (const rankdir of ['TB', 'LR'] as const) {
      const base = chain(60, 3);
      // And edges from the first cluster into the middle of the others, which they enter
      // through their first layer.
      const input = {
        ...base,
        rankdir,
        edgeSrc: Int32Array.from([...base.edgeSrc, 2, 2, 7]),
        edgeDst: Int32Array.from([...base.edgeDst, 31, 47, 55])
      };
      const out = layered(input);
      let routed = 0;
      for (let e = 0; e < input.edgeSrc.length; e++) {
        const [a, b] = [input.edgeSrc[e], input.edgeDst[e]];
        const pts = edgePolyline(input, out, e);
        routed += pts.length > 2 ? 1 : 0;
        for (let k = 0; k < input.itemW.length; k++) {
          if (k === a || k === b) {
            continue;
          }
          const box = itemBox(input, out, k);
          for (let s = 0; s + 1 < pts.length; s++) {
            assert.ok(!segmentHitsBox(pts[s], pts[s + 1], box), `${rankdir}: edge ${a}→${b} crosses item ${k}`);
          }
        }
      }
      assert.ok(routed >= 10, `${rankdir}: ${routed} edges routed`);
    }
  });
});

/** An edge as drawn: out of its source's bottom (right), through its bends, into its
 * target's top (left). */
function edgePolyline(input: LayeredInput, out: LayeredOutput, e: number): [number, number][] {
  const a = itemBox(input, out, input.edgeSrc[e]);
  const b = itemBox(input, out, input.edgeDst[e]);
  const tb = input.rankdir === 'TB';
  const pts: [number, number][] = [tb ? [a.x + a.w / 2, a.y + a.h] : [a.x + a.w, a.y + a.h / 2]];
  for (let k = out.routeStart[e]; k < out.routeStart[e + 1]; k++) {
    pts.push([out.routePoints[2 * k], out.routePoints[2 * k + 1]]);
  }
  pts.push(tb ? [b.x + b.w / 2, b.y] : [b.x, b.y + b.h / 2]);
  return pts;
}

/** Whether the segment p–q passes through the inside of the box (sampled every px). */
function segmentHitsBox(p: [number, number], q: [number, number], box: Box): boolean {
  const steps = Math.max(1, Math.ceil(Math.hypot(q[0] - p[0], q[1] - p[1])));
  for (let i = 0; i <= steps; i++) {
    const x = p[0] + ((q[0] - p[0]) * i) / steps;
    const y = p[1] + ((q[1] - p[1]) * i) / steps;
    if (x > box.x + 0.5 && x < box.x + box.w - 0.5 && y > box.y + 0.5 && y < box.y + box.h - 0.5) {
      return true;
    }
  }
  return false;
}
