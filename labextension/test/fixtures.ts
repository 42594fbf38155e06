/** A small hand-made graph in the kernel's schema (see jaxviz/graph.py):
 *
 *   root (group 0): x (traced), s (static), c (captured), out
 *     group 1 "layer" (call): n4 dot_general, n5 tanh
 *     group 2 "scan" (eqn): n6 scan, group 3 "body" (jaxpr): n7 mul
 */

import { Aval, GraphJSON, ProgramPayload } from '../src/shared/payload';

type NodeJSON = GraphJSON['nodes'][number];

export const f32 = (shape: number[], weak = false): Aval => ({
  shape,
  dtype: 'float32',
  weak_type: weak,
  text: `${weak ? '~' : ''}f32[${shape.join(',')}]`
});

/** A node in the kernel's schema: an equation's primitive is its label, an input is
 * traced, its one output an f32[2,3] (`extra` overrides any of it). */
export function nodeJson(
  id: number,
  kind: string,
  label: string,
  group: number,
  extra: Partial<NodeJSON> = {}
): NodeJSON {
  return {
    id,
    kind: kind as NodeJSON['kind'],
    label,
    group,
    primitive: kind === 'eqn' ? label : null,
    input_kind: kind === 'input' ? 'traced' : null,
    params: {},
    outputs: [f32([2, 3])],
    literals: [],
    source: null,
    ...extra
  };
}

export function smallGraph(): GraphJSON {
  const node = (id: number, kind: string, label: string, group: number, extra: Partial<NodeJSON> = {}) =>
    nodeJson(id, kind, label, group, { input_kind: null, ...extra });
  return {
    schema: 'jaxviz.graph',
    version: 1,
    name: 'f',
    legend: {},
    root: 0,
    nodes: [
      node(0, 'input', 'x', 0, { input_kind: 'traced' }),
      node(1, 'input', 's', 0, { input_kind: 'static', outputs: [] }),
      node(2, 'input', 'c', 0, { input_kind: 'captured' }),
      node(3, 'output', 'out', 0),
      node(4, 'eqn', 'dot_general', 1, {
        params: { precision: 'None' },
        source: { file: '/tmp/a "quoted" \\ file.py', line: 3, function: 'layer', cell_line: 2, text: 'x @ w' }
      }),
      node(5, 'eqn', 'tanh', 1),
      node(6, 'eqn', 'scan', 2, { params: { length: '4' } }),
      node(7, 'eqn', 'mul', 3, { literals: ['2.0'] })
    ],
    edges: [
      { src: 0, dst: 4, aval: f32([2, 3]), var: 'x:float32[2,3]' },
      { src: 2, dst: 4, aval: f32([3, 3]), var: 'Var(id=1):float32[3,3]' },
      { src: 4, dst: 5, aval: f32([2, 3]), var: 'Var(id=2):float32[2,3]' },
      { src: 5, dst: 6, aval: f32([2, 3]), var: 'Var(id=3):float32[2,3]' },
      { src: 5, dst: 7, aval: f32([2, 3]), var: 'Var(id=3):float32[2,3]' },
      { src: 6, dst: 7, aval: f32([], true), var: 'Var(id=4):float32[]' },
      { src: 7, dst: 3, aval: f32([2, 3]), var: 'out:float32[2,3]' },
      { src: 6, dst: 3, aval: f32([2, 3]), var: 'Var(id=5):float32[2,3]' }
    ],
    groups: [
      {
        id: 0,
        name: 'f',
        kind: 'root',
        parent: null,
        groups: [1, 2],
        nodes: [0, 1, 2, 3],
        n_eqns: 4,
        source: null,
        repeat: null
      },
      {
        id: 1,
        name: 'layer',
        kind: 'call',
        parent: 0,
        groups: [],
        nodes: [4, 5],
        n_eqns: 2,
        source: { file: 'nb.py', line: 7, function: 'f', cell_line: null, text: null },
        repeat: 'layer 1/1'
      },
      { id: 2, name: 'scan', kind: 'eqn', parent: 0, groups: [3], nodes: [6], n_eqns: 2, source: null, repeat: null },
      { id: 3, name: 'body', kind: 'jaxpr', parent: 2, groups: [], nodes: [7], n_eqns: 1, source: null, repeat: null }
    ]
  };
}

export function smallPayload(expanded: number[] = [0]): ProgramPayload {
  return {
    schema: 'jaxviz.program',
    version: 1,
    name: 'f',
    summary: 'f: 4 equations',
    inputs: [],
    expanded,
    graph: smallGraph()
  };
}

/** Three identical layers folded by the kernel into a repeat group (see
 * `Graph._fold_repeats`): the repeat group gets the last id, after its members.
 *
 *   root (group 0): x (traced), out
 *     group 4 "layer ×3" (repeat)
 *       groups 1, 2, 3 "layer" (call, "layer k/3"): one dot_general (n2, n3, n4) and a tanh each
 */
export function repeatGraph(): GraphJSON {
  const nodes: GraphJSON['nodes'] = [];
  const add = (kind: string, label: string, group: number) => {
    nodes.push(nodeJson(nodes.length, kind, label, group));
    return nodes.length - 1;
  };
  const x = add('input', 'x', 0);
  const out = add('output', 'out', 0);
  const layers = [1, 2, 3].map(g => [add('eqn', 'dot_general', g), add('eqn', 'tanh', g)]);
  const edges: GraphJSON['edges'] = [];
  let prev = x;
  for (const [dot, tanh] of layers) {
    edges.push({ src: prev, dst: dot, aval: f32([2, 3]), var: `v${dot}` });
    edges.push({ src: dot, dst: tanh, aval: f32([2, 3]), var: `v${tanh}` });
    prev = tanh;
  }
  edges.push({ src: prev, dst: out, aval: f32([2, 3]), var: 'out' });
  const site = { file: 'nb.py', line: 9, function: 'f', cell_line: 4, text: 'x = layer(x, w)' };
  const layer = (id: number) => ({
    id,
    name: 'layer',
    kind: 'call',
    parent: 4,
    groups: [],
    nodes: layers[id - 1],
    n_eqns: 2,
    source: site,
    repeat: `layer ${id}/3`
  });
  return {
    schema: 'jaxviz.graph',
    version: 1,
    name: 'f',
    legend: {},
    root: 0,
    nodes,
    edges,
    groups: [
      {
        id: 0,
        name: 'f',
        kind: 'root',
        parent: null,
        groups: [4],
        nodes: [x, out],
        n_eqns: 6,
        source: null,
        repeat: null
      },
      layer(1),
      layer(2),
      layer(3),
      {
        id: 4,
        name: 'layer ×3',
        kind: 'repeat',
        parent: 0,
        groups: [1, 2, 3],
        nodes: [],
        n_eqns: 6,
        source: site,
        repeat: null
      }
    ]
  };
}

/** A deterministic pseudo-random sequence in [0, 1) (the tests' random walks). */
export function random(seed: number): () => number {
  let s = seed;
  return () => {
    s = (s * 1103515245 + 12345) % 2147483648;
    return s / 2147483648;
  };
}
