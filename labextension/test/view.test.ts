import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';

import { GraphEdge, GraphGroup, GraphNode, inflatePayload, payloadProblem } from '../src/shared/payload';
import {
  GraphIndex,
  buildView,
  countAfterExpand,
  edgeIsWeak,
  edgeLabel,
  phaseOrder,
  searchNodes,
  variableName,
  visibleCount,
  visibleItems
} from '../src/graph/visible';
import { f32, nodeJson, repeatGraph, smallGraph, smallPayload } from './fixtures';

const edgeSet = (edges: { src: string; dst: string; avals: unknown[] }[]) =>
  new Set(edges.map(e => `${e.src}>${e.dst}:${e.avals.length}`));

describe('GraphIndex', () => {
  it('computes depths and chains', () => {
    const idx = new GraphIndex(smallGraph());
    assert.deepEqual(idx.depth, [0, 1, 1, 2]);
    assert.deepEqual(idx.chain(7), [3, 2, 0]);
    assert.deepEqual(idx.groupChain(3), [3, 2, 0]);
    assert.deepEqual(idx.descendants(2).sort(), [2, 3]);
  });

  it('normalizes, expands and collapses expansion states', () => {
    const idx = new GraphIndex(smallGraph());
    assert.deepEqual([...idx.normalize([3])].sort(), [0, 2, 3]);
    assert.deepEqual([...idx.normalize([99, -1])], [0]);
    const all = idx.expand(new Set([0]), 3);
    assert.deepEqual([...all].sort(), [0, 2, 3]);
    assert.deepEqual([...idx.collapse(all, 2)].sort(), [0]);
    assert.deepEqual([...idx.collapse(all, 0)].sort(), [0, 2, 3], 'the root never collapses');
    assert.deepEqual([...idx.expandToDepth(0)], [0]);
    assert.deepEqual([...idx.expandToDepth(1)].sort(), [0, 1, 2]);
  });

  it('finds the visible item standing for a node or group', () => {
    const idx = new GraphIndex(smallGraph());
    assert.equal(idx.visibleItemOf(7, new Set([0])), 'g2');
    assert.equal(idx.visibleItemOf(7, new Set([0, 2])), 'g3');
    assert.equal(idx.visibleItemOf(7, new Set([0, 2, 3])), 'n7');
    assert.equal(idx.visibleItemOf(0, new Set([0])), 'n0');
    assert.equal(idx.visibleItemOfGroup(3, new Set([0])), 'g2');
    assert.equal(idx.visibleItemOfGroup(2, new Set([0, 2])), null);
  });
});

describe('buildView', () => {
  it('collapsed: groups are boxes and edges are aggregated between visible items', () => {
    const idx = new GraphIndex(smallGraph());
    const view = buildView(idx, [0]);
    assert.deepEqual(visibleItems(view), { nodes: [0, 1, 2, 3], groups: [1, 2] });
    assert.equal(visibleCount(view), 6);
    assert.deepEqual(edgeSet(view.edges), new Set(['n0>g1:1', 'n2>g1:1', 'g1>g2:1', 'g2>n3:2']));
    // The same value consumed twice inside g2 (n6 and n7) is one value on g1>g2.
    const g1g2 = view.edges.find(e => e.src === 'g1' && e.dst === 'g2')!;
    assert.equal(edgeLabel(g1g2), 'f32[2,3]');
    assert.equal(edgeLabel(view.edges.find(e => e.src === 'g2')!), '2 values');
  });

  it('expanding a group shows its members and re-routes its edges', () => {
    const idx = new GraphIndex(smallGraph());
    const view = buildView(idx, [0, 2]);
    const items = visibleItems(view);
    assert.deepEqual(items.nodes.sort(), [0, 1, 2, 3, 6]);
    assert.deepEqual(items.groups.sort(), [1, 3]);
    assert.deepEqual(
      edgeSet(view.edges),
      new Set(['n0>g1:1', 'n2>g1:1', 'g1>n6:1', 'g1>g3:1', 'n6>g3:1', 'g3>n3:1', 'n6>n3:1'])
    );
    const weak = view.edges.find(e => e.src === 'n6' && e.dst === 'g3')!;
    assert.ok(edgeIsWeak(weak));
    assert.ok(!edgeIsWeak(view.edges.find(e => e.src === 'n0')!));
  });

  it('the same open groups give the same edges in the same order, however they were opened', () => {
    for (const graph of [smallGraph(), repeatGraph()]) {
      const idx = new GraphIndex(graph);
      const all = [...idx.expandToDepth(10)];
      const inOrder = buildView(idx, all);
      const reversed = buildView(idx, [...all].reverse());
      assert.deepEqual(reversed.edges, inOrder.edges);
      // A group closed and opened again (as a click does: it comes last in the set).
      for (const gid of all) {
        const opened = idx.expand(idx.collapse(new Set(all), gid), gid);
        const sorted = [...opened].sort((a, b) => a - b);
        assert.deepEqual(buildView(idx, opened).edges, buildView(idx, sorted).edges, `group ${gid} opened last`);
      }
    }
  });

  it('fully expanded: every edge of the model is visible', () => {
    const g = smallGraph();
    const idx = new GraphIndex(g);
    const view = buildView(idx, [0, 1, 2, 3]);
    assert.equal(view.edges.length, g.edges.length);
    assert.equal(visibleCount(view), g.nodes.length);
    assert.equal(countAfterExpand(idx, 2), 1);
  });

  it('stays cheap and correct on a large chain of groups', () => {
    // 2000 groups of 50 equations each, chained.
    const nodes: GraphNode[] = [];
    const edges: GraphEdge[] = [];
    const groups: GraphGroup[] = [
      { id: 0, name: 'big', kind: 'root', parent: null, groups: [], nodes: [], n_eqns: 0, source: null, repeat: null }
    ];
    let prev = -1;
    for (let gi = 1; gi <= 2000; gi++) {
      groups.push({
        id: gi,
        name: `block`,
        kind: 'call',
        parent: 0,
        groups: [],
        nodes: [],
        n_eqns: 50,
        source: null,
        repeat: null
      });
      groups[0].groups.push(gi);
      for (let k = 0; k < 50; k++) {
        const id = nodes.length;
        nodes.push(nodeJson(id, 'eqn', 'add', gi, { outputs: [] }));
        groups[gi].nodes.push(id);
        if (prev >= 0) {
          edges.push({
            src: prev,
            dst: id,
            aval: { shape: [], dtype: 'float32', weak_type: false, text: 'f32[]' },
            var: `Var(id=${id})`
          });
        }
        prev = id;
      }
    }
    const graph = {
      schema: 'jaxviz.graph' as const,
      version: 1,
      name: 'big',
      legend: {},
      root: 0,
      nodes,
      edges,
      groups
    };
    const t0 = Date.now();
    const idx = new GraphIndex(graph);
    const collapsed = buildView(idx, [0]);
    const one = buildView(idx, [0, 1000]);
    const ms = Date.now() - t0;
    assert.equal(collapsed.edges.length, 1999);
    assert.equal(visibleCount(one), 1999 + 50);
    assert.equal(one.edges.length, 1997 + 49 + 2);
    assert.ok(ms < 3000, `index + two views of 100k equations took ${ms} ms`);
  });
});

describe('search', () => {
  it('matches primitives, labels and named variables, not anonymous ones', () => {
    const g = smallGraph();
    assert.deepEqual(searchNodes(g, 'TANH'), [5]);
    assert.deepEqual(searchNodes(g, 'dot_'), [4]);
    assert.deepEqual(searchNodes(g, 'out'), [3, 7]);
    assert.deepEqual(searchNodes(g, 'id='), []);
    assert.deepEqual(searchNodes(g, '   '), []);
    assert.equal(variableName('Var(id=12):float32[3]'), '');
    assert.equal(variableName('v12'), '', 'the kernel names anonymous values v<n>');
    assert.equal(variableName("params['w']:float32[3]"), "params['w']");
  });
});

describe('payloadProblem', () => {
  it('accepts a program payload and explains what it cannot show', () => {
    assert.equal(payloadProblem(smallPayload()), null);
    assert.match(payloadProblem(null)!, /no jaxviz payload/);
    assert.match(payloadProblem({ ...smallPayload(), schema: 'other' })!, /unknown payload schema/);
    assert.match(payloadProblem({ ...smallPayload(), version: 2 })!, /newer/);
    assert.match(payloadProblem({ ...smallPayload(), graph: undefined })!, /no graph/);
  });
});

describe('inflatePayload', () => {
  it('inflates a gzip+base64 graph to the same JSON', async () => {
    // eslint-disable-next-line @typescript-eslint/no-var-requires
    const zlib = require('node:zlib');
    const payload = smallPayload();
    const text = JSON.stringify(payload.graph);
    const data = zlib.gzipSync(Buffer.from(text)).toString('base64');
    const shipped = { ...payload, graph: { encoding: 'gzip+base64', data, bytes: text.length } };
    const inflated = (await inflatePayload(shipped)) as typeof payload;
    assert.deepEqual(inflated.graph, payload.graph);
    assert.equal(payloadProblem(inflated), null);
    assert.equal(await inflatePayload(payload), payload, 'plain payloads pass through');
  });

  /** `full` with tables, as graphs traveled before columns: each distinct entry once, referred to by index. */
  function withTables(full: ReturnType<typeof smallPayload>['graph']) {
    const sources: unknown[] = [];
    const avals: unknown[] = [];
    const ref = (table: unknown[], value: unknown) => {
      const text = JSON.stringify(value);
      const found = table.findIndex(v => JSON.stringify(v) === text);
      return found >= 0 ? found : table.push(value) - 1;
    };
    const source = (s: unknown) => (s === null || s === undefined ? null : ref(sources, s));
    return {
      ...full,
      nodes: full.nodes.map(n => ({ ...n, source: source(n.source), outputs: n.outputs.map(a => ref(avals, a)) })),
      edges: full.edges.map(e => ({ ...e, aval: ref(avals, e.aval) })),
      groups: full.groups.map(g => ({ ...g, source: source(g.source) })),
      sources,
      avals
    };
  }

  /** `items` as Graph.to_columns writes them: one list per field. */
  function columns(items: object[]): Record<string, unknown[]> {
    const out: Record<string, unknown[]> = {};
    for (const field of Object.keys(items[0])) {
      out[field] = items.map(item => (item as Record<string, unknown>)[field]);
    }
    return out;
  }

  /** The payload with `graph` as a big one travels: its JSON gzipped, in base64. */
  function shipped(payload: ReturnType<typeof smallPayload>, graph: object) {
    // eslint-disable-next-line @typescript-eslint/no-var-requires
    const zlib = require('node:zlib');
    const text = JSON.stringify(graph);
    const data = zlib.gzipSync(Buffer.from(text)).toString('base64');
    return { ...payload, graph: { encoding: 'gzip+base64', data, bytes: text.length } };
  }

  it('restores the sources and avals a big graph carries in tables (as notebooks saved before columns hold)', async () => {
    const payload = smallPayload();
    const tabled = withTables(payload.graph);
    assert.ok(
      tabled.avals.length < payload.graph.edges.length + payload.graph.nodes.length,
      'the fixture repeats avals'
    );
    const inflated = (await inflatePayload(shipped(payload, tabled))) as typeof payload;
    assert.deepEqual(inflated.graph, JSON.parse(JSON.stringify(payload.graph)));
    assert.equal(payloadProblem(inflated), null);
  });

  it('restores a big graph whose items travel in columns, with tables', async () => {
    const payload = smallPayload();
    const tabled = withTables(payload.graph);
    const inColumns = {
      ...tabled,
      nodes: columns(tabled.nodes),
      edges: columns(tabled.edges),
      groups: columns(tabled.groups)
    };
    assert.ok(!Array.isArray(inColumns.nodes) && Array.isArray(inColumns.nodes.label));
    const inflated = (await inflatePayload(shipped(payload, inColumns))) as typeof payload;
    assert.deepEqual(inflated.graph, JSON.parse(JSON.stringify(payload.graph)));
    assert.equal(payloadProblem(inflated), null);
  });

  it('explains a graph the kernel did not ship', () => {
    const problem = payloadProblem({ ...smallPayload(), graph: null, graph_omitted: 'too big' });
    assert.match(problem ?? '', /not sent to the browser \(too big\)/);
  });
});

describe('phaseOrder', () => {
  it('stacks phases whose every item is linked (as View.phase_order in Python)', () => {
    // group 1 a forward phase whose two items feed each other (a user's line around a
    // library call), group 2 the backward phase after it
    const graph = smallGraph();
    graph.groups[1] = { ...graph.groups[1], kind: 'phase', name: 'forward', repeat: null };
    graph.groups[2] = { ...graph.groups[2], kind: 'phase', name: 'backward' };
    graph.edges.push({ src: 5, dst: 4, aval: f32([2, 3]), var: 'Var(id=9):float32[2,3]' });
    const order = phaseOrder(buildView(new GraphIndex(graph), [0, 1, 2, 3]));
    assert.equal(order.length, 1);
    assert.deepEqual(order[0][0], ['n4', 'n5'], 'every item of the forward: none is last alone');
    assert.deepEqual(order[0][1], ['n6'], "the backward's first item");
  });
});
