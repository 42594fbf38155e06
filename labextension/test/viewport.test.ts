/**
 * Where a first view opens (`geometry.openingOrigin`, over the folds `folds.ts` finds, as
 * `viewport.ts` uses them) and what keeps a view's dataflow reading top to bottom in
 * dot's layout (`ranks.ts`, written into the DOT by `dot.ts`), laid out by Graphviz
 * (WebAssembly) as the browser lays it out.
 */

import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';

import { viewToDot } from '../src/graph/dot';
import { isFold, shownFolds } from '../src/graph/folds';
import { Rect, Span, foldsOrigin, openingOrigin, storyWindow, titleCorner, uncutWindow } from '../src/graph/geometry';
import { ROW_ANCHORS, loopEdges, loopsBreakRows, rowAnchorEdges, rowMinlen, rowsProblem } from '../src/graph/ranks';
import { GraphJSON } from '../src/shared/payload';
import { GraphIndex, buildView } from '../src/graph/visible';
import { f32, repeatGraph } from './fixtures';

// eslint-disable-next-line @typescript-eslint/no-var-requires
const viz = require('@viz-js/viz') as typeof import('@viz-js/viz');

const WIN = { w: 1000, h: 700 };
const DRAWING = { w: 2400, h: 1900 };
const MARGIN = 8;

/** Whether `r` is in the window at `at`: wholly, or (bigger than it) from its top-left
 * corner over at least half the window each way it is bigger. */
function inWindow(r: Rect, at: { x: number; y: number }): boolean {
  const axis = (lo: number, size: number, from: number, room: number) =>
    lo >= from && (lo + size <= from + room || (size > room - 2 * MARGIN && lo + room / 2 <= from + room));
  return axis(r.x, r.w, at.x, WIN.w) && axis(r.y, r.h, at.y, WIN.h);
}

describe('openingOrigin', () => {
  const start = { x: 0, y: 0 };

  it('keeps the top-left story where there is no fold, or the folds are in view', () => {
    assert.deepEqual(openingOrigin(DRAWING, WIN, [], start, MARGIN), start);
    const near = { x: 100, y: 120, w: 300, h: 200 };
    assert.deepEqual(openingOrigin(DRAWING, WIN, [near], start, MARGIN), start);
    assert.deepEqual(openingOrigin({ w: 900, h: 600 }, WIN, [near], { x: -40, y: 0 }, MARGIN), { x: -40, y: 0 });
  });

  it('pans as little as brings a fold beside the first screen into view', () => {
    // ppo_gymnax as viz.js laid it out: `_update_step ×3 (scan)` right of an open init
    const fold = { x: 900, y: 490, w: 950, h: 1760 };
    const at = openingOrigin(DRAWING, WIN, [fold], start, MARGIN);
    assert.ok(inWindow(fold, at), JSON.stringify(at));
    assert.equal(at.x, fold.x + fold.w + MARGIN - WIN.w, 'its right edge at the window`s: no further');
    assert.ok(at.y < fold.y, 'the rows above it stay in view where they can');
  });

  it('brings each next fold in while they fit together, the first one first', () => {
    const first = { x: 1500, y: 100, w: 200, h: 60 };
    const second = { x: 1900, y: 400, w: 200, h: 60 };
    const far = { x: 200, y: 1500, w: 200, h: 60 };
    const at = openingOrigin(DRAWING, WIN, [first, second, far], start, MARGIN);
    assert.ok(inWindow(first, at) && inWindow(second, at), JSON.stringify(at));
    assert.ok(!inWindow(far, at));
    const flipped = openingOrigin(DRAWING, WIN, [far, first], start, MARGIN);
    assert.ok(inWindow(far, flipped) && !inWindow(first, flipped), JSON.stringify(flipped));
  });

  it('takes the targets in order: a fold`s title, the titles holding it, then its box', () => {
    // mctx's search loop `body_fun ×8 (scan)` low in `mctx.gumbel_muzero_policy`, whose
    // title is at the top: both titles fit, the loop's whole box with them does not
    const holder = { x: 300, y: 40, w: 1000, h: 1500 };
    const fold = { x: 600, y: 690, w: 360, h: 180 };
    const win = { w: 1000, h: 700 };
    const targets = [titleCorner(fold, win), titleCorner(holder, win), fold];
    const at = openingOrigin(DRAWING, win, targets, start, MARGIN);
    assert.ok(inWindow(titleCorner(fold, win), at) && inWindow(titleCorner(holder, win), at), JSON.stringify(at));
    assert.ok(!inWindow(fold, at), 'its box only in part');
    const boxFirst = openingOrigin(DRAWING, win, [fold, titleCorner(holder, win)], start, MARGIN);
    assert.ok(inWindow(fold, boxFirst) && !inWindow(titleCorner(holder, win), boxFirst));
  });

  it('stays on the drawing: no empty band beside it', () => {
    const atEdge = { x: DRAWING.w - 50, y: DRAWING.h - 50, w: 50, h: 50 };
    const at = openingOrigin(DRAWING, WIN, [atEdge], start, MARGIN);
    assert.deepEqual(at, { x: DRAWING.w - WIN.w, y: DRAWING.h - WIN.h });
    assert.ok(inWindow(atEdge, { x: at.x - MARGIN, y: at.y - MARGIN }) || at.x + WIN.w === DRAWING.w);
  });
});

describe('storyWindow, uncutWindow', () => {
  // The kernel's dot layout (pt) of the views notebook's MLP step called two wrappers
  // deep: the inputs `params` (a closed group), `y` and `x` side by side on the top row,
  // left of the program's structure, which the window fits with two of them.
  const structure = { left: 394, right: 1085 };
  const params = { left: 4, right: 104 };
  const y = { left: 122, right: 222 };
  const x = { left: 240, right: 340 };
  const inputs = [params, y, x];
  const drawing = { left: 0, right: 1097 };
  const whole = (s: Span, left: number, room: number) => s.left >= left && s.right <= left + room;
  const cut = (s: Span, left: number, room: number, margin = 0) =>
    (s.left < left - margin && left - margin < s.right) ||
    (s.left < left + room + margin && left + room + margin < s.right);
  const story = (room: number) => uncutWindow(storyWindow(structure, inputs, room, drawing), room, inputs, structure);

  it('centres the structure where no input stands beside it, on the drawing', () => {
    assert.equal(storyWindow(structure, [], 800, { left: 0, right: 2000 }), 394 - (800 - 691) / 2);
    assert.equal(storyWindow(structure, [], 800, drawing), drawing.right - 800, 'not past its right edge');
  });

  it('takes the inputs nearest the structure that fit with it, and cuts none in half', () => {
    for (const [room, shown] of [
      [1000, [x, y]],
      [900, [x]],
      [700, []]
    ] as [number, Span[]][]) {
      const left = story(room);
      assert.ok(whole(structure, left, room), `${room}: ${left}`);
      assert.deepEqual(
        inputs.filter(s => whole(s, left, room)),
        inputs.filter(s => shown.includes(s)),
        `${room}: ${left}`
      );
      assert.ok(!inputs.some(s => cut(s, left, room)), `${room}: ${left}`);
    }
  });

  it('moves an edge that cuts an input by the smaller move that keeps the rest in view', () => {
    // the window's left edge cuts x by 3: out past it (3), not over it (97)
    assert.equal(uncutWindow(337, 1000, [x], structure), 340);
    // by 97: over it, showing it whole (the other way would cut the structure)
    assert.equal(uncutWindow(243, 800, [x], { left: 300, right: 1040 }), 240);
    // the padding beside the window shows: no input is cut there either
    assert.equal(uncutWindow(345, 1000, [x], structure, 8), 348);
    // the right edge too
    const right = { left: 1100, right: 1300 };
    const at = uncutWindow(394 - 20, 750, [right], structure);
    assert.ok(whole(structure, at, 750) && !cut(right, at, 750), String(at));
    // where neither move keeps the rest in view, the window stays
    assert.equal(uncutWindow(300, 700, [x], { left: 330, right: 1000 }), 300);
  });
});

describe('foldsOrigin', () => {
  // Haiku's transformer example as viz.js laid out its first view (px at the legible
  // zoom, in a 900 px window): the passes' titles at the far left (forward) and right
  // (backward, update), the fold `layer_norm + multi_head_attention + dense_block ×4`
  // beside an open layer norm, 750 px from the left, inside the open groups forward_fn
  // and transformer
  const win = { w: 900, h: 706 };
  const drawing = { w: 2170, h: 1790 };
  const forward = { x: 12, y: 131, w: 1517, h: 783 };
  const passes = [forward, { x: 1263, y: 931, w: 371, h: 490 }, { x: 1559, y: 1438, w: 314, h: 253 }];
  const story = passes.map(r => titleCorner(r, win));
  const fold = { x: 750, y: 300, w: 266, h: 50 };
  const around = [
    { x: 253, y: 160, w: 1010, h: 746 },
    { x: 399, y: 223, w: 794, h: 675 }
  ].map(r => titleCorner(r, win));
  const start = { x: 0, y: 0 };
  const inWin = (r: Rect, at: { x: number; y: number }) =>
    r.x >= at.x && r.x + r.w <= at.x + win.w && r.y >= at.y && r.y + r.h <= at.y + win.h;

  it('brings a fold beside the first pass`s title into view, no further than it needs', () => {
    const at = foldsOrigin(drawing, win, { story, titles: [fold], around, boxes: [fold] }, start, MARGIN);
    assert.ok(inWin(fold, at), JSON.stringify(at));
    assert.equal(
      at.x,
      fold.x + fold.w + MARGIN - win.w,
      'its right edge at the window`s: the backward pass not sought'
    );
    assert.ok(
      around.every(r => inWin(r, at)),
      'the titles of the groups holding it stay in view'
    );
    // taking the passes' titles first, as the pan did, left the fold out of view
    const storyFirst = openingOrigin(drawing, win, [...story, fold, ...around], start, MARGIN);
    assert.ok(!inWin(fold, storyFirst));
  });

  it('keeps the passes` titles on top where a fold lies below them', () => {
    const low = { x: 100, y: 900, w: 300, h: 60 };
    const at = foldsOrigin(drawing, win, { story, titles: [low], around: [], boxes: [low] }, start, MARGIN);
    assert.equal(at.y, 0, 'the first pass`s title stays on the first row');
    assert.ok(!inWin(low, at), 'the fold below does not push the story off the top');
  });
});

/** A program that is one loop: `step ×4 (scan)` (group 1) whose scan node (n1) feeds its
 * body (n2, n3, in group 2) and takes its result back; a constant made inside (n4), and a
 * dead value nothing reads (n5). x (n0) in, out (n6) out. */
function loopGraph(name = 'step', primitive = 'scan'): GraphJSON {
  const node = (id: number, kind: string, label: string, group: number, params = {}) => ({
    id,
    kind: kind as 'eqn',
    label,
    group,
    primitive: kind === 'eqn' ? (primitive === 'scan' && id === 1 ? primitive : label) : null,
    input_kind: kind === 'input' ? 'traced' : null,
    params,
    outputs: [f32([3])],
    literals: [],
    source: null
  });
  const edge = (src: number, dst: number, v: string) => ({ src, dst, aval: f32([3]), var: v });
  const group = (
    id: number,
    gname: string,
    kind: string,
    parent: number | null,
    groups: number[],
    nodes: number[]
  ) => ({
    id,
    name: gname,
    kind,
    parent,
    groups,
    nodes,
    n_eqns: nodes.length,
    source: null,
    repeat: null,
    holder: id === 1 ? 1 : null
  });
  return {
    schema: 'jaxviz.graph',
    version: 1,
    name: 'train',
    legend: {},
    root: 0,
    nodes: [
      node(0, 'input', 'x', 0),
      node(1, 'eqn', primitive, 1, { length: '4' }),
      node(2, 'eqn', 'sin', 2),
      node(3, 'eqn', 'mul', 2),
      node(4, 'eqn', 'iota', 2),
      node(5, 'eqn', 'cos', 2),
      node(6, 'output', 'out', 0)
    ],
    edges: [
      edge(0, 1, 'x'),
      edge(1, 2, 'carry'),
      edge(2, 3, 'a'),
      edge(4, 3, 'i'),
      edge(2, 5, 'a'),
      edge(3, 1, 'carry2'),
      edge(1, 6, 'out')
    ],
    groups: [
      group(0, 'train', 'root', null, [1], [0, 6]),
      group(1, name === primitive ? primitive : `${name} ×4 (${primitive})`, 'eqn', 0, [2], [1]),
      group(2, name, 'call', 1, [], [2, 3, 4, 5])
    ]
  };
}

describe('folds a view shows', () => {
  it('are folds of layers and loops named after their step with a trip count', () => {
    const folded = repeatGraph();
    assert.ok(isFold(folded, 4));
    assert.deepEqual(shownFolds(folded, new Set([0])), [4]);
    assert.deepEqual(shownFolds(folded, new Set([0, 4])), [4]);
    assert.ok(isFold(loopGraph(), 1));
    assert.deepEqual(shownFolds(loopGraph(), new Set([0, 1, 2])), [1]);
    assert.ok(!isFold(loopGraph('scan'), 1), 'a bare scan names no step');
    assert.ok(!isFold(loopGraph(), 2));
    const lines = repeatGraph();
    lines.groups[1].kind = 'line';
    assert.ok(!isFold(lines, 4), 'a run of source lines is no layer');
    const oneOperation = repeatGraph();
    for (const layer of [1, 2, 3]) {
      oneOperation.groups[layer].holder = oneOperation.groups[layer].nodes[0];
      oneOperation.groups[layer].n_eqns = 3; // the call's equation and the two it holds
      oneOperation.groups[layer].helper = true;
    }
    assert.ok(!isFold(oneOperation, 4), 'a call of jnp.where, thrice, is one operation repeated');
    oneOperation.groups[1].helper = false;
    assert.ok(isFold(oneOperation, 4), "a call of the user's jitted function is a layer");
    oneOperation.groups[1].n_eqns = 1;
    oneOperation.groups[1].holder = null;
    assert.ok(!isFold(oneOperation, 4), 'one equation is one operation');
  });
});

/** Each node's centre (pt, y down) as Graphviz (WebAssembly) lays the view's DOT out. */
async function laidOut(dot: string): Promise<Map<string, { x: number; y: number }>> {
  const plain = (await viz.instance()).renderString(dot, { format: 'plain' });
  const height = Number(plain.split('\n')[0].split(' ')[3]);
  const at = new Map<string, { x: number; y: number }>();
  for (const line of plain.split('\n')) {
    const f = line.split(' ');
    if (f[0] === 'node') {
      at.set(f[1].replace(/"/g, ''), { x: Number(f[2]), y: height - Number(f[3]) });
    }
  }
  return at;
}

describe('a program that is one loop', () => {
  const view = () => buildView(new GraphIndex(loopGraph()), [0, 1, 2]);

  it('draws its node as the entry: the back edge does not rank, what reads it stands below', () => {
    const { back, exits } = loopEdges(view());
    assert.deepEqual(
      [...back].map(e => `${e.src}>${e.dst}`),
      ['n3>n1']
    );
    assert.deepEqual(exits, [[['n3'], ['n6']]]);
    const lines = viewToDot(view()).split('\n');
    const edge = (src: string, dst: string) => lines.find(l => l.trim().startsWith(`"${src}" -> "${dst}" [id=`));
    assert.match(edge('n3', 'n1') ?? '', /constraint="false"/);
    assert.doesNotMatch(edge('n1', 'n2') ?? 'missing', /constraint|missing/);
  });

  it('anchors the rows of inputs and outputs', () => {
    const v = view();
    const anchored = rowAnchorEdges(v, loopEdges(v).back).map(([a, b]) => `${a}>${b}`);
    // n4 is fed by nothing; n5 feeds nothing, n3 only the loop's back edge
    const want = [`${ROW_ANCHORS.source}>n4`, `n3>${ROW_ANCHORS.sink}`, `n5>${ROW_ANCHORS.sink}`];
    assert.deepEqual(anchored.sort(), want.sort());
  });

  it('spans a rank more per open group between a row and what it reaches inside them', () => {
    const v = view();
    assert.equal(rowMinlen(v, 'n1'), 2, 'the loop`s node: inside one open group');
    assert.equal(rowMinlen(v, 'n4'), 3, 'the iota: inside two');
    assert.equal(rowMinlen(v, 'n0'), null);
    const lines = viewToDot(v).split('\n');
    assert.match(lines.find(l => l.trim().startsWith('"n0" -> "n1" [id=')) ?? '', /minlen="2"/);
    assert.ok(lines.some(l => l.includes(`"${ROW_ANCHORS.source}" -> "n4" [style=invis weight=0 minlen=3]`)));
  });

  it('reads top to bottom as laid out: its inputs on the top row, its outputs on the bottom', async () => {
    const at = await laidOut(viewToDot(view()));
    const rows = [...at.entries()].filter(([id]) => /^n\d+$/.test(id));
    const top = Math.min(...rows.map(([, p]) => p.y));
    const bottom = Math.max(...rows.map(([, p]) => p.y));
    assert.equal(at.get('n0')!.y, top, `x on the top row: ${JSON.stringify([...at])}`);
    assert.equal(at.get('n6')!.y, bottom, 'out on the bottom row');
    assert.ok(at.get('n1')!.y < at.get('n2')!.y, 'the loop`s node above its body');
    assert.ok(at.get('n3')!.y < at.get('n6')!.y);
  });

  it('is drawn with its rows held, and the drawing of it without them shows it (rowsProblem)', async () => {
    const v = view();
    assert.ok(loopsBreakRows(v));
    assert.ok(viewToDot(v).includes(`"${ROW_ANCHORS.source}"`), 'held by default');
    const plain = await svgOf(viewToDot(v, { rows: false }));
    assert.match(rowsProblem(plain, v) ?? '', /inputs off the first row n0/);
    assert.equal(rowsProblem(await svgOf(viewToDot(v)), v), null);
  });
});

/** A program with no loop whose iota, fed by nothing, feeds the first equation while its
 * one input feeds the last: dot draws the iota above the input. */
function sourceGraph(): GraphJSON {
  const g = loopGraph();
  const [root, , body] = g.groups;
  g.groups = [
    { ...root, groups: [1] },
    { ...body, id: 1, parent: 0, nodes: [1, 2, 3, 4, 5], holder: null }
  ];
  g.nodes = g.nodes.map(n => ({ ...n, group: n.group === 0 ? 0 : 1, primitive: n.kind === 'eqn' ? n.label : null }));
  const edge = (src: number, dst: number) => ({ ...g.edges[0], src, dst, var: `v${src}` });
  g.edges = [edge(4, 1), edge(1, 2), edge(2, 3), edge(3, 5), edge(0, 5), edge(5, 6)];
  return g;
}

describe('a program with no loop', () => {
  const view = () => buildView(new GraphIndex(sourceGraph()), [0, 1]);

  it('is written as dot draws it: no anchors, no back edges, no minimum lengths', () => {
    const v = view();
    assert.ok(!loopsBreakRows(v));
    const dot = viewToDot(v);
    assert.doesNotMatch(dot, /inputs_row|outputs_row|constraint|minlen|loop_exit/);
    assert.equal(dot, viewToDot(v, { rows: false }));
  });

  it('is drawn with its rows held where dot draws an item fed by nothing above its inputs', async () => {
    const v = view();
    assert.match(rowsProblem(await svgOf(viewToDot(v)), v) ?? '', /inputs off the first row n0/);
    assert.equal(rowsProblem(await svgOf(viewToDot(v, { rows: true })), v), null);
  });
});

/** The SVG text of `dot` as Graphviz (WebAssembly) lays it out. */
async function svgOf(dot: string): Promise<string> {
  return (await viz.instance()).renderString(dot, { format: 'svg' });
}
