/** Opening a group in place (issue #13, steady exploring): the stretch that makes room,
 * edge paths that stay connected, the group's own DOT, and the drawings kept. */

import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';

import { groupToDot, stubName, viewToDot } from '../src/graph/dot';
import {
  DrawingStore,
  Pt,
  arrowHead,
  bboxOf,
  bezierAt,
  clearOf,
  clipToRect,
  coordsOf,
  edgeEnds,
  extendTo,
  followLabel,
  formatPath,
  inside,
  joinPaths,
  mapCoords,
  outsidePrefix,
  parsePath,
  portOn,
  refitPoint,
  refitRect,
  rigidShift,
  snapToStretch,
  splitBezier,
  stretch1d,
  stretchEdgePath,
  stretchFor,
  stretchPoint,
  stretchRect,
  union,
  within
} from '../src/graph/splice';
import { GraphIndex, buildView, itemInGroup } from '../src/graph/visible';
import { repeatGraph, smallGraph } from './fixtures';

// eslint-disable-next-line @typescript-eslint/no-var-requires
const viz = require('@viz-js/viz') as typeof import('@viz-js/viz');

const box = { x: 100, y: -300, w: 80, h: 40 };
const s = stretchFor(box, { w: 280, h: 240 }); // grows by 200 × 200

const close = (a: number, b: number, eps = 1e-6) => Math.abs(a - b) <= eps;
const lerp = (a: Pt, b: Pt, t: number): Pt => ({ x: a.x + (b.x - a.x) * t, y: a.y + (b.y - a.y) * t });

describe('the stretch', () => {
  it('keeps what is above, left of or within the span of the group, shifts what is beyond it by the growth', () => {
    assert.deepEqual(stretchPoint(s, { x: 50, y: -400 }), { x: 50, y: -400 });
    assert.deepEqual(stretchPoint(s, { x: 100, y: -300 }), { x: 100, y: -300 }, 'the top left corner is fixed');
    assert.deepEqual(stretchPoint(s, { x: 181, y: -259 }), { x: 381, y: -59 });
    assert.deepEqual(stretchPoint(s, { x: 180, y: -260 }), { x: 380, y: -60 }, 'the far corner moves by the growth');
    assert.deepEqual(stretchPoint(s, { x: 140, y: -400 }), { x: 140, y: -400 }, 'above it, in its span: stays');
    assert.deepEqual(stretchPoint(s, { x: 140, y: -100 }), { x: 140, y: 100 }, 'below it: down by the growth');
  });

  it('moves every coordinate by nothing or by the growth, in order (gaps never shrink)', () => {
    for (const axis of [s.x, s.y]) {
      let prev = -Infinity;
      let was = -Infinity;
      for (let v = axis.lo - 50; v <= axis.hi + 50; v += 0.25) {
        const m = stretch1d(axis, v);
        assert.ok(m === v || m === v + axis.grow, `${v} moved by ${m - v}`);
        assert.ok(m - prev >= v - was - 1e-9, `a gap shrank at ${v}`);
        [prev, was] = [m, v];
      }
    }
  });

  it('never shrinks: a smaller content leaves the map the identity', () => {
    const same = stretchFor(box, { w: 10, h: 10 });
    assert.equal(same.x.grow, 0);
    assert.deepEqual(stretchPoint(same, { x: 150, y: -250 }), { x: 150, y: -250 });
  });

  it('grows a rectangle around the group to hold it, and moves rigid items by their centre', () => {
    const around = { x: 80, y: -320, w: 200, h: 100 };
    assert.deepEqual(stretchRect(s, around), { x: 80, y: -320, w: 400, h: 300 });
    assert.deepEqual(rigidShift(s, { x: 300, y: -500, w: 40, h: 20 }), { x: 200, y: 0 }, 'right of it, above');
    assert.deepEqual(rigidShift(s, { x: 0, y: -200, w: 40, h: 20 }), { x: 0, y: 200 }, 'below, left of it');
    assert.deepEqual(rigidShift(s, { x: 0, y: -500, w: 40, h: 20 }), { x: 0, y: 0 });
  });

  it('fits an open group around what it holds, with the margins it had', () => {
    const group = { x: 0, y: 0, w: 100, h: 80 };
    const content = { x: 10, y: 20, w: 80, h: 50 };
    const next = { x: 10, y: 20, w: 280, h: 250 }; // its content grew right and down
    const fitted = refitRect(group, content, next);
    assert.deepEqual(fitted, { x: 0, y: 0, w: 300, h: 280 });
    // Outline points follow the nearer side: a rounded corner keeps its radius.
    assert.deepEqual(refitPoint(group, fitted, { x: 94, y: 0 }), { x: 294, y: 0 });
    assert.deepEqual(refitPoint(group, fitted, { x: 6, y: 80 }), { x: 6, y: 280 });
    assert.deepEqual(union([content, { x: -5, y: 30, w: 10, h: 10 }]), { x: -5, y: 20, w: 95, h: 50 });
    assert.ok(within(content, group) && !within(group, content));
  });

  it('moves each side of a refitted group by nothing or by the whole growth', () => {
    // Around the opened box (hi: 180, -260), its widest item a stayed one beside the box
    // (to 220): the content's far side moved by less than the growth, the group by all of it.
    const around = { x: 90, y: -320, w: 140, h: 80 };
    const refitted = refitRect(around, { x: 95, y: -315, w: 125, h: 70 }, { x: 95, y: -315, w: 285, h: 255 });
    assert.deepEqual(snapToStretch(s, around, refitted), { x: 90, y: -320, w: 340, h: 280 });
    // Below the box, across its right edge, nothing in it moved sideways: it keeps its
    // width and goes down with everything below.
    const below = { x: 150, y: -200, w: 60, h: 30 };
    assert.deepEqual(snapToStretch(s, below, { ...below, y: 0 }), { x: 150, y: 0, w: 60, h: 30 });
    // Its corner left of the box's right edge, all it holds beyond it: the corner stays
    // (in its order with the points that stayed), the far side moves with what it holds.
    const beside = { x: 175, y: -500, w: 50, h: 30 };
    assert.deepEqual(snapToStretch(s, beside, { ...beside, x: 375 }), { x: 175, y: -500, w: 250, h: 30 });
  });

  it('keeps items apart: rigid boxes that did not overlap still do not', () => {
    // A row of boxes above the group, across its span, and a column beside it.
    const row = [0, 1, 2, 3, 4, 5].map(i => ({ x: 40 + 30 * i, y: -400, w: 26, h: 20 }));
    const col = [0, 1, 2, 3].map(i => ({ x: 200, y: -330 + 25 * i, w: 40, h: 22 }));
    for (const items of [row, col]) {
      const moved = items.map(r => {
        const d = rigidShift(s, r);
        return { ...r, x: r.x + d.x, y: r.y + d.y };
      });
      for (let i = 0; i + 1 < moved.length; i++) {
        const [a, b] = [moved[i], moved[i + 1]];
        assert.ok(a.x + a.w <= b.x || a.y + a.h <= b.y, `items ${i} and ${i + 1} overlap`);
        assert.ok(a.x <= b.x && a.y <= b.y, 'order kept');
      }
    }
  });
});

describe('SVG coordinates', () => {
  it('maps every x,y pair of a points or path attribute and keeps the rest', () => {
    assert.equal(
      mapCoords('M43,-120.07C43,-113.45 43,-104.57 43,-96.43', p => ({ x: p.x + 1, y: p.y * 2 })),
      'M44,-240.14C44,-226.9 44,-209.14 44,-192.86'
    );
    assert.deepEqual(coordsOf('1e1,-2 3,4.5'), [
      { x: 10, y: -2 },
      { x: 3, y: 4.5 }
    ]);
    assert.deepEqual(bboxOf(coordsOf('1,2 5,-3 2,8')), { x: 1, y: -3, w: 4, h: 11 });
    const d = 'M1,2C3,4 5,6 7,8';
    assert.equal(formatPath(parsePath(d)), d);
  });

  it('reads edge ends from Graphviz ids', () => {
    assert.deepEqual(edgeEnds('e_n12_g3'), { src: 'n12', dst: 'g3' });
    assert.equal(edgeEnds('edge7'), null);
  });
});

/** Points along a poly-Bézier, for checking that a path is one connected curve. */
function trace(points: Pt[], per = 8): Pt[] {
  const out: Pt[] = [];
  for (let i = 0; i + 3 < points.length; i += 3) {
    for (let k = 0; k <= per; k++) {
      out.push(bezierAt(points.slice(i, i + 4), k / per));
    }
  }
  return out;
}

describe('edge paths', () => {
  const path: Pt[] = [
    { x: 300, y: -500 },
    { x: 300, y: -450 },
    { x: 200, y: -350 },
    { x: 150, y: -300 },
    { x: 100, y: -250 },
    { x: 60, y: -200 },
    { x: 60, y: -150 }
  ];

  it('move their ends with the items they join and stretch in between', () => {
    const tail = { x: 200, y: 0 };
    const head = { x: 0, y: 200 };
    const moved = stretchEdgePath(s, path, tail, head);
    assert.deepEqual(moved[0], { x: 500, y: -500 });
    assert.deepEqual(moved[1], { x: 500, y: -450 });
    assert.deepEqual(moved[6], { x: 60, y: 50 });
    assert.deepEqual(moved[5], { x: 60, y: 0 });
    assert.deepEqual(moved[3], stretchPoint(s, path[3]));
    assert.equal(moved.length, path.length);
  });

  it('keep the direction they leave and enter each point in: control points move with their point', () => {
    // From a node left of the group, above it, to one right of it, below it, crossing
    // where the stretch cuts: the tail stays, the head moves by the growth both ways.
    const far: Pt[] = [
      { x: 20, y: -600 },
      { x: 60, y: -560 },
      { x: 170, y: -560 },
      { x: 200, y: -520 },
      { x: 230, y: -480 },
      { x: 400, y: -100 },
      { x: 420, y: -60 }
    ];
    const moved = stretchEdgePath(s, far, { x: 0, y: 0 }, { x: 200, y: 200 });
    assert.deepEqual(moved[3], { x: 400, y: -520 }, 'a point right of the group, above it: right by the growth');
    assert.deepEqual(moved[2], { x: 370, y: -560 }, 'its control point with it, though left of the cut');
    assert.deepEqual(moved[4], { x: 430, y: -480 });
    assert.deepEqual(moved[1], far[1]);
    assert.deepEqual(moved[5], { x: 600, y: 100 });
    for (const k of [1, 2, 4, 5]) {
      const anchor = k % 3 === 1 ? k - 1 : k + 1;
      assert.deepEqual(
        { x: moved[k].x - moved[anchor].x, y: moved[k].y - moved[anchor].y },
        { x: far[k].x - far[anchor].x, y: far[k].y - far[anchor].y },
        `the direction at point ${anchor}`
      );
    }
  });

  it('go around the grown group where one curve would cut across it', () => {
    const grown = { x: 100, y: -300, w: 280, h: 240 };
    const cut: Pt[] = [
      { x: 150, y: -400 },
      { x: 150, y: -380 },
      { x: 500, y: -200 },
      { x: 500, y: -180 }
    ];
    const around = clearOf(grown, cut);
    assert.equal((around.length - 1) % 3, 0);
    assert.deepEqual(around[0], cut[0]);
    assert.deepEqual(around[around.length - 1], cut[3]);
    assert.ok(
      trace(around, 64).every(p => !inside({ x: 101, y: -299, w: 278, h: 238 }, p)),
      'clear of the group'
    );
    assert.deepEqual(around[3], { x: 500, y: -400 }, 'across above it, then down beside it');
    const clear = [
      { x: 50, y: -400 },
      { x: 50, y: -380 },
      { x: 60, y: -200 },
      { x: 60, y: -180 }
    ];
    assert.deepEqual(clearOf(grown, clear), clear, 'a curve that clears it stays');
  });

  it('carry a label along when their course changes', () => {
    const line = (a: Pt, b: Pt): Pt[] => [a, lerp(a, b, 1 / 3), lerp(a, b, 2 / 3), b];
    const was = line({ x: 0, y: 0 }, { x: 0, y: 90 });
    const label = { x: 10, y: 45 }; // beside its middle
    const now = line({ x: 0, y: 0 }, { x: 300, y: 90 }); // its end moved far right
    const at = followLabel(was, now, label);
    assert.ok(close(at.x, 160, 1e-6) && close(at.y, 45, 1e-6), JSON.stringify(at));
    // With a part put in front of it (an edge out of the opened group), the same place.
    const inFront = [...line({ x: -50, y: -50 }, { x: 0, y: 0 }), ...now.slice(1)];
    assert.deepEqual(followLabel(was, inFront, label, 1), at);
  });

  it('split a Bézier into two halves that meet and follow the same curve', () => {
    const c = path.slice(0, 4);
    const [a, b] = splitBezier(c, 0.3);
    assert.deepEqual(a[3], b[0]);
    for (const t of [0.1, 0.5, 0.9]) {
      const p = bezierAt(a, t);
      const q = bezierAt(c, 0.3 * t);
      assert.ok(close(p.x, q.x) && close(p.y, q.y));
    }
  });

  it('are cut at a rectangle border and joined without a gap', () => {
    const rect = { x: 0, y: -320, w: 260, h: 300 };
    const head = clipToRect(path, rect, 'head');
    assert.ok(trace(head).every(p => inside(rect, { x: p.x, y: p.y + 1e-6 }) || close(p.y, rect.y, 1e-3)));
    assert.ok(close(head[0].y, rect.y, 1e-3) || close(head[0].x, rect.x + rect.w, 1e-3), 'cut on the border');
    assert.deepEqual(head[head.length - 1], path[path.length - 1]);
    assert.equal((head.length - 1) % 3, 0, 'whole cubic segments');
    const tail = clipToRect([...path].reverse(), rect, 'tail');
    assert.deepEqual(tail[0], path[path.length - 1]);
    // An outside part that ended a little off joins exactly where the inside part starts.
    const outside: Pt[] = [
      { x: 400, y: -600 },
      { x: 400, y: -560 },
      { x: 150, y: -340 },
      { x: 140, y: -330 }
    ];
    const joined = joinPaths(outside, head);
    assert.equal((joined.length - 1) % 3, 0);
    assert.deepEqual(joined[3], head[0]);
    assert.deepEqual(joined[0], outside[0]);
    // Smooth across the join: the control points either side of it in one line.
    const [b, j, a] = [joined[2], joined[3], joined[4]];
    const cross = (j.x - b.x) * (a.y - j.y) - (j.y - b.y) * (a.x - j.x);
    assert.ok(
      Math.abs(cross) < 1e-6 && (j.x - b.x) * (a.x - j.x) + (j.y - b.y) * (a.y - j.y) > 0,
      'no corner at the join'
    );
    const pts = trace(joined, 64);
    for (let i = 1; i < pts.length; i++) {
      assert.ok(Math.hypot(pts[i].x - pts[i - 1].x, pts[i].y - pts[i - 1].y) < 20, 'no jump along the path');
    }
  });
});

describe("a group's own drawing", () => {
  it('has its cluster as in the whole view, its inner edges, and stand-ins for the outside ends', async () => {
    const idx = new GraphIndex(smallGraph());
    const view = buildView(idx, [0, 1]);
    const whole = viewToDot(view);
    const own = groupToDot(view, 1);
    // The same cluster line as the whole view's (ids, label, colours).
    const clusterLine = (dot: string) => dot.split('\n').find(l => l.includes('id="cluster_g1"'));
    assert.equal(clusterLine(own)?.trim(), clusterLine(whole)?.trim());
    assert.match(own, /"n4" -> "n5" \[id="e_n4_n5"/);
    assert.match(own, new RegExp(`"${stubName('n0', 'in')}" -> "n4" \\[id="e_n0_n4"`));
    assert.match(own, new RegExp(`"n5" -> "${stubName('g2', 'out')}" \\[id="e_n5_g2"`));
    assert.doesNotMatch(own, /"n3"|"g2" \[/, 'no outside item is drawn');
    assert.ok(itemInGroup(idx, 'n4', 1) && !itemInGroup(idx, 'g1', 1) && !itemInGroup(idx, 'n0', 1));
    const svg = (await viz.instance()).renderString(own, { engine: 'dot', format: 'svg' });
    for (const id of ['cluster_g1', 'n4', 'n5', 'e_n4_n5', 'e_n0_n4', 'e_n2_n4', 'e_n5_g2']) {
      assert.match(svg, new RegExp(`id="${id}"`), id);
    }
    assert.doesNotMatch(svg, /id="stub_/, 'the stand-ins are not drawn');
  });

  it('keeps the stand-ins in the order the edges met the box', async () => {
    const idx = new GraphIndex(smallGraph());
    const view = buildView(idx, [0, 1]);
    const own = groupToDot(view, 1, {}, { in: ['n2', 'n0'] });
    const a = stubName('n2', 'in');
    const b = stubName('n0', 'in');
    assert.ok(own.indexOf(`"${a}" [`) < own.indexOf(`"${b}" [`));
    assert.match(own, new RegExp(`"${a}" -> "${b}" \\[style=invis\\]`));
    const svg = (await viz.instance()).renderString(own, { engine: 'dot', format: 'svg' });
    const start = (id: string) => parsePath(new RegExp(`id="${id}"[\\s\\S]*?d="([^"]+)"`).exec(svg)![1])[0];
    assert.ok(start('e_n2_n4').x < start('e_n0_n4').x, 'c enters left of x, as ordered');
    const flipped = (await viz.instance()).renderString(groupToDot(view, 1, {}, { in: ['n0', 'n2'] }), {
      engine: 'dot',
      format: 'svg'
    });
    const start2 = (id: string) => parsePath(new RegExp(`id="${id}"[\\s\\S]*?d="([^"]+)"`).exec(flipped)![1])[0];
    assert.ok(start2('e_n0_n4').x < start2('e_n2_n4').x, 'x enters left of c, as ordered');
  });

  it('keeps nested open groups and a fold’s column', () => {
    const idx = new GraphIndex(repeatGraph());
    const own = groupToDot(buildView(idx, [0, 4, 2]), 4);
    assert.match(own, /subgraph "cluster_g4"[\s\S]*subgraph "cluster_g2"/);
    assert.match(own, /"g1" \[[^\]]*group="repeat_g4"/);
  });
});

describe('drawings kept', () => {
  const depth = (g: number) => [0, 1, 1, 2][g] ?? 1;

  it('gives back a state shown before, and opens from the one with most groups open', () => {
    const store = new DrawingStore();
    store.set([0], 'first');
    store.set([0, 1], 'one');
    assert.equal(store.get([1, 0]), 'one');
    const base = store.baseFor(new Set([0, 1, 2, 3]), depth);
    assert.deepEqual(base && { text: base.text, open: base.open }, { text: 'one', open: [2, 3] });
    const other = store.baseFor(new Set([0, 2]), depth);
    assert.deepEqual(other && { text: other.text, open: other.open }, { text: 'first', open: [2] });
    assert.equal(store.baseFor(new Set([5]), depth), null, 'no kept drawing is part of it');
    assert.equal(store.baseFor(new Set([0, 1, 2, 3]), depth, undefined, 1), null, 'too many to open one by one');
    // What is on screen is opened from, when it can be, rather than a bigger drawing kept.
    const shown = store.baseFor(new Set([0, 1, 2, 3]), depth, [0]);
    assert.deepEqual(shown && { text: shown.text, open: shown.open }, { text: 'first', open: [1, 2, 3] });
    const notShown = store.baseFor(new Set([0, 2]), depth, [0, 1]);
    assert.equal(notShown?.text, 'first', 'the drawing shown has a group that is to close');
  });

  it('keeps the most recently used up to its capacity', () => {
    const store = new DrawingStore(2);
    store.set([0], 'a');
    store.set([0, 1], 'b');
    store.get([0]);
    store.set([0, 2], 'c');
    assert.equal(store.size, 2);
    assert.equal(store.get([0, 1]), undefined);
    assert.equal(store.get([0]), 'a');
  });
});

describe('closing a group in place', () => {
  const rect = { x: 100, y: 100, w: 200, h: 100 };
  const line = (a: Pt, b: Pt): Pt[] => extendTo([a], b);

  it('keeps the part of an edge before it first enters the group, cut at its border', () => {
    const path = line({ x: 200, y: 0 }, { x: 200, y: 150 });
    const kept = outsidePrefix(path, rect);
    const end = kept[kept.length - 1];
    assert.ok(Math.abs(end.y - 100) < 0.01 && Math.abs(end.x - 200) < 0.01, JSON.stringify(end));
    assert.deepEqual(kept[0], { x: 200, y: 0 });
    assert.equal((kept.length - 1) % 3, 0); // still a poly-Bézier
    const away = line({ x: 0, y: 0 }, { x: 50, y: 50 });
    assert.deepEqual(outsidePrefix(away, rect), away); // never enters: whole
  });

  it('meets the box on the side the rank direction says, near where the edge comes from', () => {
    const box = { x: 100, y: 100, w: 60, h: 30 };
    assert.deepEqual(portOn(box, { x: 130, y: 20 }, 'in', 'TB'), { x: 130, y: 100 });
    assert.deepEqual(portOn(box, { x: 400, y: 20 }, 'in', 'TB'), { x: 152.5, y: 100 }); // short of the corner
    assert.deepEqual(portOn(box, { x: 130, y: 400 }, 'out', 'TB'), { x: 130, y: 130 });
    assert.deepEqual(portOn(box, { x: 0, y: 110 }, 'in', 'LR'), { x: 100, y: 110 });
    assert.deepEqual(portOn(box, { x: 400, y: 110 }, 'out', 'LR'), { x: 160, y: 110 });
    assert.deepEqual(portOn(box, { x: 300, y: 120 }, 'in', 'TB'), { x: 160, y: 120 }); // from beside: the near side
  });

  it('draws an arrowhead whose tip is on the border, pointing the way the edge runs', () => {
    const head = arrowHead({ x: 0, y: 0 }, { x: 0, y: 50 });
    assert.deepEqual(head[1], { x: 0, y: 50 });
    assert.ok(head[0].y < 50 && head[2].y < 50 && Math.abs(head[0].y - 40) < 1e-9);
    const met = arrowHead({ x: 5, y: 5 }, { x: 5, y: 5 }, { x: 1, y: 0 }); // met at the border
    assert.ok(met[0].x < 5 && met[2].x < 5, JSON.stringify(met));
  });
});
