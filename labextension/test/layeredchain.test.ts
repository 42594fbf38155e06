import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';

import { chainClusterAttrs, viewToDot } from '../src/dot';
import { layered } from '../src/layered';
import { sceneOf } from '../src/scene';
import { GraphIndex, buildView } from '../src/view';
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
