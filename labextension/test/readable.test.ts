/** The pure logic of a readable, steady graph (issue #13): first-view zoom and canvas
 * height, Fit, keeping a clicked item in place, tooltip placement and content, the status
 * line, the title of a re-run cell, phase groups in the DOT. */

import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';

import { eqnLabel, viewToDot } from '../src/graph/dot';
import { codeSpans, groupTooltip, isEmptyParam, nodeTooltip, tooltipCost, tooltipText } from '../src/shared/format';
import {
  LEGIBLE_SCALE,
  NODE_FONT_PT,
  PT_TO_PX,
  firstView,
  fitAll,
  keepInPlace,
  maxCanvasHeight,
  placeTooltip,
  prefersSideways
} from '../src/graph/geometry';
import { promptName } from '../src/graph/outputheight';
import { GraphIndex, buildView, statusText } from '../src/graph/visible';
import { smallGraph } from './fixtures';

describe('first view', () => {
  it('never shrinks node text below a readable size: the canvas pans instead', () => {
    // A wide, tall drawing (a 4-layer train step opened): 3000 × 2400 px at zoom 1.
    const v = firstView({ w: 3000, h: 2400 }, 1100, 720);
    assert.ok(v.scale >= LEGIBLE_SCALE - 1e-9);
    assert.ok(NODE_FONT_PT * PT_TO_PX * v.scale >= 10 - 1e-9, 'node text is 10 px or more on screen');
    assert.equal(v.canvasHeight, 720, 'as tall as allowed');
    assert.equal(v.tx, 8, 'from its left edge');
  });

  it('shows a small drawing whole, at zoom 1, in a canvas just as tall', () => {
    const v = firstView({ w: 400, h: 300 }, 1100, 720);
    assert.equal(v.scale, 1);
    assert.equal(v.canvasHeight, 316);
    assert.equal(v.tx, (1100 - 400) / 2, 'centred');
  });

  it('fits a drawing that fits at a legible zoom', () => {
    const v = firstView({ w: 1300, h: 600 }, 1100, 720);
    assert.ok(v.scale < 1 && v.scale >= LEGIBLE_SCALE);
    assert.ok(1300 * v.scale <= 1100 - 16 + 1e-9);
  });

  it('uses the window: taller than 600 px on a 1000 px screen', () => {
    assert.ok(maxCanvasHeight(1000, false) > 600);
    assert.equal(maxCanvasHeight(1000, true), 420);
    assert.ok(maxCanvasHeight(300, false) >= 420);
  });

  it('Fit shows everything, below the legible zoom when it must', () => {
    const f = fitAll({ w: 6000, h: 3000 }, { w: 1000, h: 700 });
    assert.ok(6000 * f.scale <= 1000 && 3000 * f.scale <= 700);
    assert.ok(f.scale < LEGIBLE_SCALE);
  });
});

describe('rank direction', () => {
  it('turns a tall narrow column sideways, and nothing else', () => {
    assert.ok(prefersSideways({ w: 200, h: 4000 }, 1100, 720, 0.75));
    assert.ok(!prefersSideways({ w: 1600, h: 4000 }, 1100, 720, 0.75), 'wide: it uses the width already');
    assert.ok(!prefersSideways({ w: 200, h: 600 }, 1100, 720, 1), 'fits: nothing to gain');
  });
  it('is written into the DOT', () => {
    const idx = new GraphIndex(smallGraph());
    assert.match(viewToDot(buildView(idx, [0]), { rankdir: 'LR' }), /rankdir="LR"/);
    assert.match(viewToDot(buildView(idx, [0])), /rankdir="TB"/);
  });
});

describe('steady exploring', () => {
  it('pans so that the clicked item is back where it was, exactly', () => {
    const next = keepInPlace({ tx: 10, ty: 20 }, { x: 300, y: 500 }, { x: 250, y: 510 });
    assert.deepEqual(next, { tx: -40, ty: 30 });
  });
});

describe('tooltips', () => {
  const viewport = { w: 1600, h: 1000 };
  it('sit below right of the pointer when there is room', () => {
    assert.deepEqual(placeTooltip({ x: 100, y: 100 }, { w: 300, h: 200 }, viewport), { x: 114, y: 114 });
  });

  it('flip above near the bottom and left near the right edge, and stay inside', () => {
    const at = placeTooltip({ x: 1500, y: 950 }, { w: 300, h: 200 }, viewport);
    assert.deepEqual(at, { x: 1500 - 14 - 300, y: 950 - 14 - 200 });
    const big = placeTooltip({ x: 800, y: 500 }, { w: 400, h: 1200 }, viewport);
    assert.equal(big.y, 4, 'taller than the window: from its top');
  });

  it('leave out empty parameters and zero costs', () => {
    for (const v of ['None', '', '()', 'null', '[]', '{}']) {
      assert.ok(isEmptyParam(v), v);
    }
    assert.ok(!isEmptyParam('(1,)') && !isEmptyParam('float32') && !isEmptyParam('0'));
    const g = smallGraph();
    const tanh = {
      ...g.nodes[5],
      params: { accuracy: 'None', sharding: 'None', axes: '(1,)' },
      flops: 0,
      bytes: 48
    };
    const text = tooltipText(nodeTooltip(tanh));
    assert.ok(!text.includes('None'), text);
    assert.ok(text.includes('axes: (1,)'), text);
    assert.ok(text.includes('cost (estimate): 48 B') && !text.includes('FLOP'), text);
    assert.equal(tooltipCost(0, 0), '');
    assert.equal(tooltipCost(2e6, 0), '2 MFLOP');
    const group = { ...g.groups[1], flops: 0, bytes: 0 };
    assert.ok(!tooltipText(groupTooltip(group, [], [])).includes('cost'));
  });
});

describe('status line', () => {
  it('says what it counts: groups, equations and inputs/outputs apart from the program size', () => {
    const idx = new GraphIndex(smallGraph());
    const text = statusText(buildView(idx, [0]));
    assert.match(text, /^shown: 2 groups, 4 inputs\/outputs · program of \d+ equations?$/);
    const open = statusText(buildView(idx, [0, 1]));
    assert.match(open, /1 group, 2 equations, 4 inputs\/outputs/);
  });
});

describe('cell titles', () => {
  it('follow the prompt shown now', () => {
    assert.equal(promptName('In[3]', '[9]:'), 'In[9]');
    assert.equal(promptName('In[3]', '[*]:'), 'In[3]', 'while running: as traced');
    assert.equal(promptName('In[3]', '[ ]:'), 'In[3]');
    assert.equal(promptName('train_step', '[9]:'), 'train_step', 'a function keeps its name');
  });
});

describe('code spans', () => {
  it('split Markdown backticks into code parts', () => {
    assert.deepEqual(codeSpans('Pass `lr` as an argument'), [
      { text: 'Pass ', code: false },
      { text: 'lr', code: true },
      { text: ' as an argument', code: false }
    ]);
    assert.deepEqual(codeSpans('no code'), [{ text: 'no code', code: false }]);
    assert.deepEqual(codeSpans('a ` alone'), [{ text: 'a ` alone', code: false }]);
  });
});

describe('equation labels', () => {
  it('keep literal operands of plain operations, not of a scan', () => {
    assert.equal(eqnLabel({ label: 'mul', primitive: 'mul', literals: ['2.0'] }), 'mul 2.0');
    assert.equal(eqnLabel({ label: 'scan', primitive: 'scan', literals: ['0.0'] }), 'scan');
    assert.equal(eqnLabel({ label: 'tanh', primitive: 'tanh', literals: [] }), 'tanh');
  });
});

describe('phase groups', () => {
  it('stand out in the DOT; unknown kinds are drawn as groups', () => {
    const g = smallGraph();
    g.groups[1] = { ...g.groups[1], kind: 'phase', name: 'forward' };
    g.groups[2] = { ...g.groups[2], kind: 'something-new' };
    const idx = new GraphIndex(g);
    const boxes = viewToDot(buildView(idx, [0]));
    assert.match(boxes, /"g1" \[[^\]]*class="jaxviz-group jaxviz-group-phase"[^\]]*penwidth="2"/);
    assert.match(boxes, /"g2" \[[^\]]*jaxviz-group-something-new[^\]]*fillcolor="#EEF3FB"/);
    const open = viewToDot(buildView(idx, [0, 1]));
    assert.match(open, /id="cluster_g1"[^\]]*penwidth="2"/);
  });
});
