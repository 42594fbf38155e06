import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';

import { LayeredInput, LayeredOutput, forgetLayouts, layered } from '../src/graph/layered';
import { sceneOf } from '../src/graph/scene';
import { GraphJSON } from '../src/shared/payload';
import { GraphIndex, buildView } from '../src/graph/visible';
import { nodeJson, random, repeatGraph } from './fixtures';

/** Groups nested a few deep, repeats of the same shape among them (so that clusters share
 * their layouts), nodes of every size spread over them, the program's inputs and outputs
 * at the root, and values that flow forward across groups: what the layout's ports, forced
 * ranks, dummies and kept layouts all meet. */
function nestedGraph(seed: number, nGroups = 30, nNodes = 150): GraphJSON {
  const rand = random(seed);
  const group = (id: number, parent: number | null) => ({
    id,
    name: `g${id % 4}`,
    kind: parent === null ? 'root' : 'call',
    parent,
    groups: [] as number[],
    nodes: [] as number[],
    n_eqns: 0,
    source: null,
    repeat: null
  });
  const groups: GraphJSON['groups'] = [group(0, null)];
  for (let id = 1; id < nGroups; id++) {
    const parent = Math.floor(rand() * rand() * id);
    groups.push(group(id, parent));
    groups[parent].groups.push(id);
  }
  const nodes: GraphJSON['nodes'] = [];
  for (let id = 0; id < nNodes; id++) {
    const kind = id < 4 ? 'input' : id >= nNodes - 2 ? 'output' : 'eqn';
    const g = kind === 'eqn' ? Math.floor(rand() * nGroups) : 0;
    const shape = [1 + Math.floor(rand() * 3), 1 + (id % 5) * 7];
    const aval = { shape, dtype: 'float32', weak_type: false, text: `f32[${shape.join(',')}]` };
    const label = ['add', 'dot_general', 'tanh', 'reduce_sum'][id % 4];
    nodes.push(nodeJson(id, kind, kind === 'eqn' ? label : `x${id}`, g, { outputs: [aval] }));
    groups[g].nodes.push(id);
  }
  const edges: GraphJSON['edges'] = [];
  for (let dst = 4; dst < nNodes; dst++) {
    for (let k = 0; k < 1 + Math.floor(rand() * 3); k++) {
      // Mostly from near before it, sometimes from far back (an input, a saved value).
      const src = rand() < 0.7 ? Math.max(0, dst - 1 - Math.floor(rand() * 6)) : Math.floor(rand() * dst);
      if (nodes[src].kind !== 'output') {
        edges.push({ src, dst, aval: nodes[src].outputs[0], var: `v${src}` });
      }
    }
  }
  return { schema: 'jaxviz.graph', version: 1, name: 'f', legend: {}, root: 0, nodes, edges, groups } as GraphJSON;
}

/** The layout's inputs along a walk that opens and closes one group at a time, as a user
 * clicking boxes does, from every group open. */
function walk(graph: GraphJSON, seed: number, steps: number, rankdir: 'TB' | 'LR'): LayeredInput[] {
  const rand = random(seed);
  const index = new GraphIndex(graph);
  let expanded = index.expandToDepth(Infinity);
  const inputs = [sceneOf(buildView(index, expanded), rankdir).layout];
  for (let step = 0; step < steps; step++) {
    const gid = 1 + Math.floor(rand() * (graph.groups.length - 1));
    expanded = expanded.has(gid) ? index.collapse(expanded, gid) : index.expand(expanded, gid);
    inputs.push(sceneOf(buildView(index, expanded), rankdir).layout);
  }
  return inputs;
}

/** Every array of a layout, number for number, and its size (not `fresh`: how much was
 * taken from before is what differs). */
function assertSameLayout(got: LayeredOutput, want: LayeredOutput, label: string): void {
  assert.equal(got.width, want.width, `${label}: width`);
  assert.equal(got.height, want.height, `${label}: height`);
  const fields = [
    'itemX',
    'itemY',
    'clusterX',
    'clusterY',
    'clusterW',
    'clusterH',
    'routeStart',
    'routePoints'
  ] as const;
  for (const field of fields) {
    const [a, b] = [got[field], want[field]];
    assert.equal(a.length, b.length, `${label}: ${field} length`);
    const k = a.findIndex((v, i) => !Object.is(v, b[i]));
    assert.equal(k, -1, `${label}: ${field}[${k}] is ${a[k]}, laid out afresh ${b[k]}`);
  }
}

describe('a layout along a walk of clicks is the layout made afresh', () => {
  const cases: [string, GraphJSON, number][] = [
    ['nested 1', nestedGraph(1), 40],
    ['nested 2', nestedGraph(2, 40, 220), 40],
    ['nested 3', nestedGraph(3, 12, 120), 30],
    ['repeat', repeatGraph(), 12]
  ];
  for (const rankdir of ['TB', 'LR'] as const) {
    it(`opening and closing groups one at a time, with the kept layouts of the walk (${rankdir})`, () => {
      for (const [name, graph, steps] of cases) {
        const inputs = walk(graph, name.length + steps, steps, rankdir);
        // Along the walk, each layout takes what it can from those before it.
        forgetLayouts();
        const kept = inputs.map(input => layered(input));
        const clusters = inputs.slice(1).reduce((sum, input) => sum + input.clusterParent.length + 1, 0);
        const fresh = kept.slice(1).reduce((sum, out) => sum + out.fresh, 0);
        assert.ok(fresh < clusters, `${name}: ${fresh} of ${clusters} clusters laid out afresh along the walk`);
        // Each view again, from nothing kept.
        inputs.forEach((input, step) => {
          forgetLayouts();
          assertSameLayout(kept[step], layered(input), `${name}, step ${step}`);
        });
      }
    });
  }
});
