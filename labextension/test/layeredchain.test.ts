import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';

import { chainClusterAttrs, viewToDot } from '../src/graph/dot';
import { LayeredInput, LayeredOutput, forgetLayouts, layered } from '../src/graph/layered';
import { sceneOf } from '../src/graph/scene';
import { GraphIndex, buildView, clusterOf } from '../src/graph/visible';
import { repeatGraph, smallGraph } from './fixtures';

/** smallGraph with its group 1 wrapped in a `forward` group (4) that holds nothing else. */
function wrapped() {
  const graph = smallGraph();
  graph.groups[0].groups = [4, 2];
  graph.groups[1].parent = 4;
  graph.groups.push({ ...graph.groups[1], id: 4, name: 'forward', kind: 'phase', parent: 0, groups: [1], nodes: [] });
  return graph;
}

const dotClusters = (dot: string) => [...dot.matchAll(/subgraph "(cluster_g\d+)"/g)].map(m => m[1]);

describe('the canvas scene draws the clusters the DOT draws', () => {
  it('a chain of open groups that only wrap one another is one cluster titled by its path', () => {
    const graph = wrapped();
    const view = buildView(new GraphIndex(graph), [0, 4, 1]);
    const scene = sceneOf(view, 'TB');
    assert.deepEqual(
      scene.clusters.map(g => `cluster_g${g}`),
      dotClusters(viewToDot(view))
    );
    assert.deepEqual(scene.clusters, [4]);
    assert.deepEqual(scene.clusterChains, [[4, 1]]);
    assert.equal(scene.clusterLooks[0].lines[0], chainClusterAttrs(graph, [4, 1]).label);
    // The innermost group's items are held by the chain's cluster.
    scene.items.forEach((id, k) => {
      const inner = id[0] === 'n' && graph.nodes[Number(id.slice(1))].group === 1;
      assert.equal(scene.layout.itemParent[k], inner ? 0 : -1, id);
    });
    const out = layered(scene.layout);
    assert.equal(out.clusterW.length, 1);
  });

  it('the same clusters as the DOT on every view of a folded repeat', () => {
    const index = new GraphIndex(repeatGraph());
    for (let depth = 0; depth <= 10; depth++) {
      const view = buildView(index, index.expandToDepth(depth));
      const scene = sceneOf(view, 'TB');
      assert.deepEqual(
        scene.clusters.map(g => `cluster_g${g}`),
        dotClusters(viewToDot(view)),
        `depth ${depth}`
      );
    }
  });
});

/** A column of `depth` items in a cluster, fed from outside by `inputs` program inputs
 * (rank 1), input i into the column's item i mod depth: a stack of blocks and its
 * parameters. Items 0 .. inputs - 1 are the inputs, then the column. */
function column(depth: number, inputs: number): LayeredInput {
  const n = inputs + depth;
  const edges: [number, number][] = [];
  for (let k = 0; k + 1 < depth; k++) {
    edges.push([inputs + k, inputs + k + 1]);
  }
  for (let i = 0; i < inputs; i++) {
    edges.push([i, inputs + (i % depth)]);
  }
  return {
    itemW: new Float64Array(n).fill(80),
    itemH: new Float64Array(n).fill(24),
    itemParent: Int32Array.from({ length: n }, (_, i) => (i < inputs ? -1 : 0)),
    itemRank: Uint8Array.from({ length: n }, (_, i) => (i < inputs ? 1 : 0)),
    clusterParent: Int32Array.of(-1),
    labelW: Float64Array.of(60),
    labelH: Float64Array.of(14),
    edgeSrc: Int32Array.from(edges, e => e[0]),
    edgeDst: Int32Array.from(edges, e => e[1]),
    rankdir: 'TB'
  };
}

describe('what comes down from the top (inputs, ports) follows what it feeds', () => {
  it('a column fed by hundreds of inputs stays straight, at the left of its cluster', () => {
    const depth = 12;
    const inputs = 240;
    const input = column(depth, inputs);
    const out = layered(input);
    const centres = Array.from({ length: depth }, (_, k) => out.itemX[inputs + k] + input.itemW[inputs + k] / 2);
    assert.ok(Math.max(...centres) - Math.min(...centres) < 1, `the column bends: ${centres.join(', ')}`);
    // Beside the strip of edges coming down, not under its middle.
    const left = out.itemX[inputs] - out.clusterX[0];
    assert.ok(left < 3 * input.itemW[inputs], `the column is ${left} px into a cluster ${out.clusterW[0]} px wide`);
  });
});

describe('opening a group lays out that group and those holding it, nothing else', () => {
  it('every other cluster is taken from before', () => {
    const graph = repeatGraph();
    const index = new GraphIndex(graph);
    const root = graph.root ?? 0;
    const before = index.expandToDepth(1);
    const shown = sceneOf(buildView(index, before), 'TB');
    layered(shown.layout);
    const boxes = shown.items.filter(id => id[0] === 'g').map(id => Number(id.slice(1)));
    assert.ok(boxes.length, 'a box to open');
    for (const gid of boxes) {
      const opened = buildView(index, index.expand(before, gid));
      const scene = sceneOf(opened, 'TB');
      const out = layered(scene.layout);
      // The opened group's cluster and those holding it, and the root.
      const holders = new Set<number>();
      for (let g: number | null = gid; g !== null && g !== root; g = graph.groups[g].parent) {
        holders.add(clusterOf(opened, g));
      }
      assert.ok(out.fresh <= holders.size + 1, `g${gid}: ${out.fresh} laid out, ${holders.size} hold it`);
      assert.ok(out.fresh >= 1, `g${gid}: the root is laid out again`);
    }
  });
});

describe('a layout taken from before is the layout made afresh', () => {
  const opened = (index: GraphIndex, before: Set<number>) =>
    sceneOf(buildView(index, before), 'TB')
      .items.filter(id => id[0] === 'g')
      .map(id => index.expand(before, Number(id.slice(1))));
  const fresh = (out: LayeredOutput) => ({ ...out, fresh: 0 });

  it('on opening any box at any depth, the clusters holding it placed again from their kept structure', () => {
    const graph = repeatGraph();
    const index = new GraphIndex(graph);
    let openings = 0;
    for (const depth of [1, 2, 3]) {
      const before = index.expandToDepth(depth);
      for (const expanded of opened(index, before)) {
        forgetLayouts();
        layered(sceneOf(buildView(index, before), 'TB').layout);
        const input = sceneOf(buildView(index, expanded), 'TB').layout;
        const kept = layered(input);
        forgetLayouts();
        assert.deepEqual(fresh(kept), fresh(layered(input)), `opening to ${[...expanded]}`);
        openings++;
      }
    }
    assert.ok(openings >= 3, `${openings} openings`);
  });
});
