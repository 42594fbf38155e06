import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';

import { legendKinds, quote, viewToDot } from '../src/graph/dot';
import { g3 } from '../src/shared/format';
import { MARK_STYLE } from '../src/shared/visual';
import { GraphIndex, buildView, clusterOf, openChain } from '../src/graph/visible';
import { smallGraph } from './fixtures';

// The Graphviz build the browser uses (WebAssembly), here in Node.
// eslint-disable-next-line @typescript-eslint/no-var-requires
const viz = require('@viz-js/viz') as typeof import('@viz-js/viz');

const ids = (svg: string, cls: string) =>
  [...svg.matchAll(new RegExp(`<g id="([^"]+)" class="${cls}[^"]*"`, 'g'))].map(m => m[1]).sort();

describe('quote', () => {
  it('escapes quotes and backslashes, keeps line breaks', () => {
    assert.equal(quote('a"b'), '"a\\"b"');
    assert.equal(quote('a\\nb'), '"a\\\\nb"');
    assert.equal(quote('a\nb'), '"a\\nb"');
  });
});

describe('a diff drawn in the browser', () => {
  it('colours what the kernel marked: a node filled, a removed one dashed, a group box, its note', () => {
    const graph = smallGraph();
    graph.marks = {
      nodes: { '3': 'added', '2': 'removed' },
      groups: { '1': 'changed' },
      notes: { g1: 'f32[2] → f32[4]' }
    };
    const dot = viewToDot(buildView(new GraphIndex(graph), [0]));
    const line = (id: string) => dot.split('\n').find(l => l.trimStart().startsWith(`"${id}" [`)) ?? '';
    assert.match(line('n3'), new RegExp(`fillcolor="${MARK_STYLE.added.fillcolor}"`));
    assert.match(line('n3'), /class="[^"]*jaxviz-added"/);
    assert.match(line('n2'), /style="filled,dashed"/);
    assert.match(line('g1'), new RegExp(`color="${MARK_STYLE.changed.color}"`));
    assert.match(line('g1'), /f32\[2\] → f32\[4\]/);
    assert.doesNotMatch(line('n0'), /jaxviz-(added|removed|changed)/, 'unmarked items keep their look');
  });
});

describe('viewToDot', () => {
  it('emits collapsed groups as boxes and expanded ones as clusters with kernel ids', () => {
    const idx = new GraphIndex(smallGraph());
    const dot = viewToDot(buildView(idx, [0]));
    assert.match(dot, /^digraph "f" \{/);
    assert.match(
      dot,
      /"g1" \[id="g1" class="jaxviz-group jaxviz-group-call" label="▸ layer 1\/1\\n2 eqns\\nnb.py:7" shape="box3d"/
    );
    assert.match(
      dot,
      /"n0" \[id="n0" class="jaxviz-input jaxviz-input-traced" label="x\\nf32\[2,3\]" shape="invhouse" style="filled" fillcolor="#4C9BE8"\]/
    );
    assert.match(dot, /"n2" \[.*fillcolor="#D9534F"/, 'captured inputs are red');
    assert.match(dot, /"n3" \[.*shape="house".*fillcolor="#5CB85C"/);
    assert.match(dot, /"g2" -> "n3" \[id="e_g2_n3" class="jaxviz-edge" label="2 values"\]/);
    assert.doesNotMatch(dot, /cluster_g/);

    const open = viewToDot(buildView(idx, [0, 1, 2]));
    assert.match(
      open,
      /subgraph "cluster_g1" \{\n {4}graph \[id="cluster_g1"[^\]]*label="▾ layer 1\/1 \(2 eqns\) · nb.py:7"/
    );
    assert.match(open, /"n4" \[id="n4" class="jaxviz-eqn" label="dot_general\\ncell line 2"/);
    assert.match(open, /"n7"|"g3"/);
    assert.match(open, /"n6" -> "g3" \[.*style="dashed" color="#9B59B6"/, 'weak edges are dashed purple');
  });

  it('leaves labels off when there are many edges, and names the legend kinds a graph uses', () => {
    const idx = new GraphIndex(smallGraph());
    const view = buildView(idx, [0]);
    assert.doesNotMatch(viewToDot(view, { edgeLabels: false }), /label="f32/);
    assert.deepEqual(legendKinds(smallGraph()), ['traced', 'static', 'captured', 'output', 'weak']);
  });

  it('is valid DOT that Graphviz (WebAssembly) lays out with the same ids', async () => {
    const graphviz = await viz.instance();
    const idx = new GraphIndex(smallGraph());
    for (const expanded of [[0], [0, 2], [0, 1, 2, 3]]) {
      const view = buildView(idx, expanded);
      const result = graphviz.render(viewToDot(view), { format: 'svg' });
      assert.equal(result.status, 'success', JSON.stringify(result.errors));
      const svg = result.output!;
      const nodes = ids(svg, 'node');
      const want = expanded.length === 1 ? ['g1', 'g2', 'n0', 'n1', 'n2', 'n3'] : null;
      if (want) {
        assert.deepEqual(nodes, want);
      }
      assert.equal(ids(svg, 'edge').length, view.edges.length);
      for (const g of expanded.filter(g => g !== 0)) {
        assert.ok(ids(svg, 'cluster').includes(`cluster_g${g}`), `cluster_g${g} in SVG`);
      }
      // Quotes and backslashes in user text come out as text, not as DOT syntax.
      assert.doesNotMatch(svg, /Error/);
    }
    const full = graphviz.renderString(viewToDot(buildView(idx, [0, 1, 2, 3])), { format: 'svg' });
    assert.match(full, /class="node jaxviz&#45;eqn"/); // Graphviz escapes "-"; the DOM decodes it
    assert.match(full, /cell line 2/);
  });
});

/** smallGraph with `layer` wrapped in a `forward` group that holds nothing else. */
function wrappedGraph() {
  const graph = smallGraph();
  graph.groups[0].groups = [4, 2];
  graph.groups[1].parent = 4;
  graph.groups.push({
    id: 4,
    name: 'forward',
    kind: 'phase',
    parent: 0,
    groups: [1],
    nodes: [],
    n_eqns: 2,
    source: null,
    repeat: null
  });
  return graph;
}

describe('open groups that only wrap one another (as render/dot.py)', () => {
  it('are one cluster, the outermost, titled by their path and holding what the innermost holds', async () => {
    const idx = new GraphIndex(wrappedGraph());
    const dot = viewToDot(buildView(idx, [0, 4, 1]));
    assert.match(
      dot,
      /graph \[id="cluster_g4" class="jaxviz-cluster jaxviz-group-phase" label="▾ forward › layer 1\/1 \(2 eqns\) · nb.py:7"/
    );
    assert.doesNotMatch(dot, /cluster_g1/);
    const svg = (await viz.instance()).renderString(dot, { format: 'svg' });
    assert.deepEqual(ids(svg, 'cluster'), ['cluster_g4']);
    assert.ok(ids(svg, 'node').includes('n4'), 'the innermost group’s nodes are drawn');
  });

  it('are found from any of their groups: the outermost’s cluster draws them', () => {
    const view = buildView(new GraphIndex(wrappedGraph()), [0, 4, 1, 2, 3]);
    assert.deepEqual(openChain(view, 4), [4, 1]);
    assert.deepEqual([clusterOf(view, 1), clusterOf(view, 4), clusterOf(view, 2), clusterOf(view, 3)], [4, 4, 2, 3]);
  });

  it('stop at a group that holds a box, a node or a fold', () => {
    const idx = new GraphIndex(wrappedGraph());
    const outer = viewToDot(buildView(idx, [0, 4]));
    assert.match(outer, /label="▾ forward \(2 eqns\)"/);
    assert.match(outer, /"g1" \[id="g1"/);
    const scan = viewToDot(buildView(idx, [0, 2, 3]));
    assert.match(scan, /subgraph "cluster_g2"[^]*subgraph "cluster_g3"/, 'scan holds its own node: two clusters');
  });
});

describe('g3', () => {
  it("rounds to three digits as Python's :.3g, ties to even (the kernel's cost labels)", () => {
    const python: [number, string][] = [
      [122.5, '122'],
      [123.5, '124'],
      [121.5, '122'],
      [1.125, '1.12'],
      [2.5, '2.5'],
      [0.0625, '0.0625'],
      [42.25, '42.2'],
      [-122.5, '-122'],
      [1.0005, '1'],
      [99.95, '100'],
      [0.1225, '0.122']
    ];
    assert.deepEqual(
      python.map(([v]) => [v, g3(v)]),
      python
    );
  });
});
