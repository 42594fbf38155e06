/** Repeat groups ("block ×48": identical sibling layers folded by the kernel) in the
 * browser's views, DOT and tooltips. */

import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';

import { legendKinds, viewToDot } from '../src/graph/dot';
import { groupTooltip, repeatText, sizeText, tooltipText } from '../src/shared/format';
import { GraphIndex, buildView, countAfterExpand, visibleCount, visibleItems } from '../src/graph/visible';
import { repeatGraph } from './fixtures';

// eslint-disable-next-line @typescript-eslint/no-var-requires
const viz = require('@viz-js/viz') as typeof import('@viz-js/viz');

describe('repeat groups', () => {
  it('get depths from the tree, not from id order (the repeat group has the last id)', () => {
    const idx = new GraphIndex(repeatGraph());
    assert.deepEqual(idx.depth, [0, 2, 2, 2, 1]);
    assert.deepEqual([...idx.expandToDepth(1)].sort(), [0, 4]);
    assert.deepEqual(idx.groupChain(2), [2, 4, 0]);
    assert.deepEqual([...idx.normalize([2])].sort(), [0, 2, 4], 'opening a layer opens its repeat group');
    assert.deepEqual([...idx.collapse(new Set([0, 2, 4]), 4)], [0], 'collapsing it closes the layers');
  });

  it('cost one visible item collapsed, one box per layer expanded', () => {
    const idx = new GraphIndex(repeatGraph());
    const collapsed = buildView(idx, [0]);
    assert.deepEqual(visibleItems(collapsed), { nodes: [0, 1], groups: [4] });
    assert.equal(visibleCount(collapsed), 3);
    assert.equal(countAfterExpand(idx, 4), 2, 'expanding shows 3 boxes instead of 1');
    const open = buildView(idx, [0, 4]);
    assert.deepEqual(visibleItems(open).groups, [1, 2, 3]);
    const edges = new Set(open.edges.map(e => `${e.src}>${e.dst}`));
    assert.deepEqual(edges, new Set(['n0>g1', 'g1>g2', 'g2>g3', 'g3>n1']));
    const one = buildView(idx, [2]);
    assert.deepEqual(visibleItems(one).groups, [1, 3]);
    assert.deepEqual(
      visibleItems(one).nodes.sort((a, b) => a - b),
      [0, 1, 4, 5]
    );
  });

  it('are drawn as a stack that says how many layers it holds, and opened as a dashed cluster', async () => {
    const g = repeatGraph();
    const idx = new GraphIndex(g);
    assert.equal(sizeText(g.groups, 4), '3 × 2 eqns');
    assert.equal(sizeText(g.groups, 1), '2 eqns');
    assert.equal(repeatText(g.groups, 4), '3 identical layer layers');
    const dot = viewToDot(buildView(idx, [0]));
    assert.match(
      dot,
      /"g4" \[id="g4" class="jaxviz-group jaxviz-group-repeat" label="▸ layer ×3\\n3 × 2 eqns\\ncell line 4" shape="box3d" style="filled" fillcolor="#DCE6F7" peripheries="2"\]/
    );
    assert.deepEqual(legendKinds(g), ['traced', 'output', 'repeat']);
    const open = viewToDot(buildView(idx, [0, 4]));
    assert.match(
      open,
      /graph \[id="cluster_g4" class="jaxviz-cluster jaxviz-group-repeat" label="▾ layer ×3 \(3 × 2 eqns\) · cell line 4" style="rounded,filled,dashed"/
    );
    assert.match(
      open,
      /"g2" \[id="g2" class="jaxviz-group jaxviz-group-call" label="▸ layer 2\/3\\n2 eqns\\ncell line 4"/
    );
    for (const g of [1, 2, 3]) {
      assert.match(open, new RegExp(`"g${g}" \\[[^\\]]*group="repeat_g4"`), 'the layers in one column');
    }
    assert.doesNotMatch(dot, /group="repeat/);
    const graphviz = await viz.instance();
    for (const expanded of [[0], [0, 4], [2]]) {
      const result = graphviz.render(viewToDot(buildView(idx, expanded)), { format: 'svg' });
      assert.equal(result.status, 'success', JSON.stringify(result.errors));
    }
  });

  it('say what they fold in the tooltip', () => {
    const g = repeatGraph();
    const text = tooltipText(groupTooltip(g.groups[4], ['f32[2,3]'], ['f32[2,3]'], g.groups));
    assert.match(text, /^layer ×3\n/);
    assert.match(text, /kind: repeat: 3 identical layer layers/);
    assert.match(text, /equations: 6 \(3 × 2 eqns\)/);
    assert.match(text, /click to expand: one box per layer/);
    const member = tooltipText(groupTooltip(g.groups[2], [], [], g.groups));
    assert.match(member, /^layer 2\/3\nkind: call\nequations: 2/);
  });
});
