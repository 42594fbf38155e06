import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';

import { GraphJSON } from '../src/shared/payload';
import { GraphIndex, buildView } from '../src/graph/visible';
import { nodeJson, random, repeatGraph, smallGraph } from './fixtures';

/** A graph of `nGroups` groups nested up to a few levels, nodes spread over them, and
 * edges from earlier nodes to later ones (values flow forward, across groups). */
function nestedGraph(seed: number, nGroups = 40, nNodes = 160): GraphJSON {
  const rand = random(seed);
  const groups: GraphJSON['groups'] = [
    { id: 0, name: 'f', kind: 'root', parent: null, groups: [], nodes: [], n_eqns: 0, source: null, repeat: null }
  ];
  for (let id = 1; id < nGroups; id++) {
    const parent = Math.floor(rand() * id);
    groups.push({
      id,
      name: `g${id}`,
      kind: 'call',
      parent,
      groups: [],
      nodes: [],
      n_eqns: 0,
      source: null,
      repeat: null
    });
    groups[parent].groups.push(id);
  }
  const aval = { shape: [2], dtype: 'float32', weak_type: false, text: 'f32[2]' };
  const nodes: GraphJSON['nodes'] = [];
  for (let id = 0; id < nNodes; id++) {
    const group = Math.floor(rand() * nGroups);
    nodes.push(nodeJson(id, 'eqn', 'add', group, { outputs: [aval] }));
    groups[group].nodes.push(id);
  }
  const edges: GraphJSON['edges'] = [];
  for (let dst = 1; dst < nNodes; dst++) {
    for (let k = 0; k < 2; k++) {
      const src = Math.floor(rand() * dst);
      edges.push({ src, dst, aval, var: `v${src}` });
    }
  }
  return { schema: 'jaxviz.graph', version: 1, name: 'f', legend: {}, root: 0, nodes, edges, groups } as GraphJSON;
}

describe('buildView', () => {
  it('gives the same view, edges in the same order, however the expansion was reached', () => {
    for (const [seed, graph] of [
      [1, nestedGraph(1)],
      [2, nestedGraph(2)],
      [3, smallGraph()],
      [4, repeatGraph()]
    ] as [number, GraphJSON][]) {
      const rand = random(seed);
      const walked = new GraphIndex(graph); // each view built from the one before
      let expanded = new Set<number>([0]);
      for (let step = 0; step < 60; step++) {
        const gid = Math.floor(rand() * graph.groups.length);
        expanded = expanded.has(gid) ? walked.collapse(expanded, gid) : walked.expand(expanded, gid);
        const view = buildView(walked, expanded);
        const fresh = buildView(new GraphIndex(graph), expanded); // a first view of that state
        const edges = (v: typeof view) => v.edges.map(e => [e.src, e.dst, e.vars.join(','), e.avals.length]);
        assert.deepEqual(edges(view), edges(fresh), `seed ${seed}, step ${step}, open ${[...expanded]}`);
        assert.deepEqual([...view.expanded].sort(), [...fresh.expanded].sort());
      }
    }
  });
});
