/**
 * The geometry of opening a group in place (no DOM): instead of laying the whole view out
 * again, the group's box is replaced by its opened contents, laid out on their own, and
 * the rest of the drawing makes room. What lies beyond the box's right edge moves right
 * by the growth in width, what lies below its bottom edge moves down by the growth in
 * height; nothing else moves. Every item thus moves by nothing or by exactly the growth,
 * along each axis, so nothing changes order or side and gaps never shrink.
 *
 * The drawing grows right and down, not about the group's centre: the group's top left
 * corner (where its label and the pointer are) is then a fixed point, and so is
 * everything above and left of it; growing about the centre would move both sides.
 * Within the box's span the map does not stretch linearly: items above or below the
 * group inside its span (its inputs and outputs, typically) would then slide sideways by
 * arbitrary amounts, up to the whole growth; they stay, and its edges enter the group
 * where they did.
 *
 * Coordinates are Graphviz SVG user units (points, y down), as written in the SVG's
 * `points`, `d`, `x`/`y` attributes.
 */

export interface Pt {
  x: number;
  y: number;
}

export interface Rect {
  x: number;
  y: number;
  w: number;
  h: number;
}

/** Room made along one axis: the box [lo, hi] becomes [lo, hi + grow]. */
export interface Stretch1D {
  lo: number;
  hi: number;
  grow: number;
}

export interface Stretch {
  x: Stretch1D;
  y: Stretch1D;
}

/** Where `v` goes: shifted by `grow` from `hi` on, else unchanged (increasing, and with
 * `grow >= 0` no two values come closer). */
export function stretch1d(s: Stretch1D, v: number): number {
  return v >= s.hi ? v + s.grow : v;
}

/** The stretch that turns `box` into a box of at least its size holding `size`: it
 * grows right and down only (never shrinks: the map stays one that spreads things). */
export function stretchFor(box: Rect, size: { w: number; h: number }): Stretch {
  return {
    x: { lo: box.x, hi: box.x + box.w, grow: Math.max(0, size.w - box.w) },
    y: { lo: box.y, hi: box.y + box.h, grow: Math.max(0, size.h - box.h) }
  };
}

export function stretchPoint(s: Stretch, p: Pt): Pt {
  return { x: stretch1d(s.x, p.x), y: stretch1d(s.y, p.y) };
}

/** A rectangle through the stretch: its corners mapped (a cluster around the group grows). */
export function stretchRect(s: Stretch, r: Rect): Rect {
  const a = stretchPoint(s, { x: r.x, y: r.y });
  const b = stretchPoint(s, { x: r.x + r.w, y: r.y + r.h });
  return { x: a.x, y: a.y, w: b.x - a.x, h: b.y - a.y };
}

/** How far a rigid item (a node: its text and shape keep their size) moves: as its
 * centre (an item straddling the box's far edge moves when most of it lies beyond). */
export function rigidShift(s: Stretch, r: Rect): Pt {
  const c = { x: r.x + r.w / 2, y: r.y + r.h / 2 };
  const m = stretchPoint(s, c);
  return { x: m.x - c.x, y: m.y - c.y };
}

/**
 * Where an open group's box goes when what it holds moved from `content` to `next` (the
 * bounding boxes of its items): around them with the margins it had (its label's room
 * on top). Tighter than stretching its corners, when it only reaches into the stretched
 * band: it does not widen around nothing.
 */
export function refitRect(box: Rect, content: Rect, next: Rect): Rect {
  const left = content.x - box.x;
  const top = content.y - box.y;
  const right = box.x + box.w - (content.x + content.w);
  const bottom = box.y + box.h - (content.y + content.h);
  return { x: next.x - left, y: next.y - top, w: next.w + left + right, h: next.h + top + bottom };
}

/**
 * An open group's refitted box (`next`, from `was`) held to the stretch's rule: each of
 * its sides moves by nothing or by the whole growth along its axis, as every other item
 * does. Its top left corner goes where the stretch takes it (so it keeps its order with
 * every other point, and the label stays put unless all the group moved); a far side
 * (right, bottom) moves by the growth once anything it held moved that way, else stays
 * (no widening around nothing). A group around the opened one thus grows by exactly the
 * growth, its far sides in line with what lies beyond, even where an item it holds
 * beside the opened box stayed. It still holds what it held: its items moved by nothing
 * or by the growth, and the near side moves only when all of them lie beyond the box.
 */
export function snapToStretch(s: Stretch, was: Rect, next: Rect): Rect {
  const farSide = (hi: number, nextHi: number, grow: number) => (nextHi - hi > 0.5 ? hi + grow : hi);
  const x0 = stretch1d(s.x, was.x);
  const y0 = stretch1d(s.y, was.y);
  const x1 = farSide(was.x + was.w, next.x + next.w, s.x.grow);
  const y1 = farSide(was.y + was.h, next.y + next.h, s.y.grow);
  return { x: x0, y: y0, w: x1 - x0, h: y1 - y0 };
}

/** A point of a box's outline when the box becomes `next`: it moves with the nearer side
 * (rounded corners keep their radius). */
export function refitPoint(box: Rect, next: Rect, p: Pt): Pt {
  const dx = p.x <= box.x + box.w / 2 ? next.x - box.x : next.x + next.w - (box.x + box.w);
  const dy = p.y <= box.y + box.h / 2 ? next.y - box.y : next.y + next.h - (box.y + box.h);
  return { x: p.x + dx, y: p.y + dy };
}

/** Whether `r` lies within `box`. */
export function within(r: Rect, box: Rect, eps = 0.5): boolean {
  return (
    r.x >= box.x - eps && r.y >= box.y - eps && r.x + r.w <= box.x + box.w + eps && r.y + r.h <= box.y + box.h + eps
  );
}

/** The bounding box of rectangles. */
export function union(rects: Rect[]): Rect {
  return bboxOf(
    rects.flatMap(r => [
      { x: r.x, y: r.y },
      { x: r.x + r.w, y: r.y + r.h }
    ])
  );
}

export function shifted(p: Pt, d: Pt): Pt {
  return { x: p.x + d.x, y: p.y + d.y };
}

// ------------------------------------------------------------ SVG coordinate text

const PAIR = /(-?\d*\.?\d+(?:e[-+]?\d+)?),(-?\d*\.?\d+(?:e[-+]?\d+)?)/gi;

function num(v: number): string {
  return String(Math.round(v * 100) / 100);
}

/** Every "x,y" pair of a `points` or path `d` attribute through `f`; the rest kept. */
export function mapCoords(text: string, f: (p: Pt) => Pt): string {
  return text.replace(PAIR, (_, x: string, y: string) => {
    const p = f({ x: parseFloat(x), y: parseFloat(y) });
    return `${num(p.x)},${num(p.y)}`;
  });
}

/** The "x,y" pairs of a `points` or `d` attribute. */
export function coordsOf(text: string): Pt[] {
  const out: Pt[] = [];
  for (const m of text.matchAll(PAIR)) {
    out.push({ x: parseFloat(m[1]), y: parseFloat(m[2]) });
  }
  return out;
}

/** The bounding box of points (an empty box at 0,0 for none). */
export function bboxOf(points: Pt[]): Rect {
  if (!points.length) {
    return { x: 0, y: 0, w: 0, h: 0 };
  }
  let x0 = Infinity;
  let y0 = Infinity;
  let x1 = -Infinity;
  let y1 = -Infinity;
  for (const p of points) {
    x0 = Math.min(x0, p.x);
    y0 = Math.min(y0, p.y);
    x1 = Math.max(x1, p.x);
    y1 = Math.max(y1, p.y);
  }
  return { x: x0, y: y0, w: x1 - x0, h: y1 - y0 };
}

// ------------------------------------------------------------ edge paths

/** A Graphviz edge path ("M p0 C c1 c2 p1 C …": one start, then 3 points per cubic). */
export function parsePath(d: string): Pt[] {
  return coordsOf(d);
}

export function formatPath(points: Pt[]): string {
  const [first, ...rest] = points;
  return `M${num(first.x)},${num(first.y)}C${rest.map(p => `${num(p.x)},${num(p.y)}`).join(' ')}`;
}

/**
 * An edge path through the stretch: its ends move with the items they join (`tail`,
 * `head`: those items' rigid shifts, or null for an end that moves as any point), the
 * points it passes through as the stretch says, and each control point with the point
 * it belongs to, so that the edge leaves and enters each point in the same direction as
 * before: where it crosses into the part that moved, it stretches smoothly instead of
 * looping.
 */
export function stretchEdgePath(s: Stretch, points: Pt[], tail: Pt | null, head: Pt | null): Pt[] {
  const n = points.length;
  const shiftAt = (k: number): Pt => {
    if (k === 0 && tail) {
      return tail;
    }
    if (k === n - 1 && head) {
      return head;
    }
    const m = stretchPoint(s, points[k]);
    return { x: m.x - points[k].x, y: m.y - points[k].y };
  };
  // Point k of a poly-Bézier: on the curve when k % 3 == 0; else a control point of the
  // curve point before it (k % 3 == 1) or after it (k % 3 == 2).
  return points.map((p, k) => shifted(p, shiftAt(k % 3 === 0 ? k : k % 3 === 1 ? k - 1 : k + 1)));
}

function lerp(a: Pt, b: Pt, t: number): Pt {
  return { x: a.x + (b.x - a.x) * t, y: a.y + (b.y - a.y) * t };
}

/** The point at `t` of a cubic Bézier. */
export function bezierAt(c: Pt[], t: number): Pt {
  const ab = lerp(c[0], c[1], t);
  const bc = lerp(c[1], c[2], t);
  const cd = lerp(c[2], c[3], t);
  return lerp(lerp(ab, bc, t), lerp(bc, cd, t), t);
}

/** A cubic Bézier split at `t` (de Casteljau): the two halves, 4 points each. */
export function splitBezier(c: Pt[], t: number): [Pt[], Pt[]] {
  const ab = lerp(c[0], c[1], t);
  const bc = lerp(c[1], c[2], t);
  const cd = lerp(c[2], c[3], t);
  const abc = lerp(ab, bc, t);
  const bcd = lerp(bc, cd, t);
  const m = lerp(abc, bcd, t);
  return [
    [c[0], ab, abc, m],
    [m, bcd, cd, c[3]]
  ];
}

export function inside(r: Rect, p: Pt): boolean {
  return p.x >= r.x && p.x <= r.x + r.w && p.y >= r.y && p.y <= r.y + r.h;
}

const SAMPLES = 32;

/**
 * The part of a path inside `rect` at its `end` ('head': the path runs from outside into
 * the rect, the part after it last enters; 'tail': the path starts inside, the part
 * before it first leaves), cut exactly at the rect's border. The whole path when it
 * never crosses.
 */
/** Where the cubic `c` crosses `rect`'s border between `out` (a parameter outside it) and
 * `inn` (one inside), by bisection: [the last parameter found outside, the first inside]. */
function border(c: Pt[], rect: Rect, out: number, inn: number): [number, number] {
  let lo = out;
  let hi = inn;
  for (let i = 0; i < 30; i++) {
    const mid = (lo + hi) / 2;
    if (inside(rect, bezierAt(c, mid))) {
      hi = mid;
    } else {
      lo = mid;
    }
  }
  return [lo, hi];
}

export function clipToRect(points: Pt[], rect: Rect, end: 'head' | 'tail'): Pt[] {
  const path = end === 'head' ? points : [...points].reverse();
  const segments = (path.length - 1) / 3;
  for (let s = segments - 1; s >= 0; s--) {
    const c = path.slice(3 * s, 3 * s + 4);
    // From the segment's end back to its start: the last sample outside the rect.
    for (let k = SAMPLES - 1; k >= 0; k--) {
      if (!inside(rect, bezierAt(c, k / SAMPLES))) {
        const after = splitBezier(c, border(c, rect, k / SAMPLES, (k + 1) / SAMPLES)[1])[1];
        const kept = [...after, ...path.slice(3 * s + 4)];
        return end === 'head' ? kept : kept.reverse();
      }
    }
  }
  return points;
}

/**
 * Two paths joined into one: `into`'s last point moves onto `from`'s start, and the
 * control point before it lines up with the direction `from` starts in, so that the edge
 * runs on smoothly across the join (into the opened group square to its border, rather
 * than along it when the two ends were apart).
 */
export function joinPaths(into: Pt[], from: Pt[]): Pt[] {
  const n = into.length;
  const at = from[0];
  const out = [...into.slice(0, n - 2)];
  const dir = { x: from[1].x - at.x, y: from[1].y - at.y };
  const norm = Math.hypot(dir.x, dir.y);
  const reach = Math.min(40, Math.hypot(at.x - into[n - 4].x, at.y - into[n - 4].y) / 3);
  const control =
    norm > 1e-6
      ? { x: at.x - (dir.x / norm) * reach, y: at.y - (dir.y / norm) * reach }
      : shifted(into[n - 2], { x: at.x - into[n - 1].x, y: at.y - into[n - 1].y });
  return [...out, control, at, ...from.slice(1)];
}

/** The two ends of an edge drawn with the id `e_<src>_<dst>` (item ids have no "_"). */
export function edgeEnds(id: string): { src: string; dst: string } | null {
  const m = /^e_([^_]+)_([^_]+)$/.exec(id);
  return m ? { src: m[1], dst: m[2] } : null;
}

// ------------------------------------------------------------ drawings kept

/**
 * The drawings shown, by expansion state (most recently used last): closing a group
 * shows the drawing from before it opened, exactly; opening groups starts from the
 * drawing with the most of the wanted groups already open, so that what was on screen
 * keeps its place.
 */
export class DrawingStore {
  private readonly entries = new Map<string, { groups: Set<number>; text: string }>();

  constructor(readonly capacity = 24) {}

  static key(groups: Iterable<number>): string {
    return [...groups].sort((a, b) => a - b).join(',');
  }

  get size(): number {
    return this.entries.size;
  }

  clear(): void {
    this.entries.clear();
  }

  get(groups: Iterable<number>): string | undefined {
    const key = DrawingStore.key(groups);
    const entry = this.entries.get(key);
    if (entry) {
      this.entries.delete(key); // most recently used last
      this.entries.set(key, entry);
    }
    return entry?.text;
  }

  set(groups: Iterable<number>, text: string): void {
    const key = DrawingStore.key(groups);
    this.entries.delete(key);
    this.entries.set(key, { groups: new Set(groups), text });
    while (this.entries.size > this.capacity) {
      this.entries.delete(this.entries.keys().next().value as string);
    }
  }

  /**
   * The drawing to open `groups` from: the one `shown` when all its open groups are in
   * `groups` (what is on screen stays), else among those that are, the one with the most
   * (the most recent on a tie); with the groups still to open, parents before children
   * (`depth`). Null when none, or when more than `maxOpen` would be left to open (a
   * fresh layout is then the better drawing).
   */
  baseFor(
    groups: Set<number>,
    depth: (gid: number) => number,
    shown?: Iterable<number>,
    maxOpen = 40
  ): { text: string; groups: Set<number>; open: number[] } | null {
    const holds = (entry: { groups: Set<number> }) => [...entry.groups].every(g => groups.has(g));
    const current = shown === undefined ? undefined : this.entries.get(DrawingStore.key(shown));
    let best = current && holds(current) ? current : null;
    for (const entry of best ? [] : this.entries.values()) {
      if (holds(entry) && (!best || entry.groups.size >= best.groups.size)) {
        best = entry;
      }
    }
    if (!best) {
      return null;
    }
    const open = [...groups].filter(g => !best!.groups.has(g)).sort((a, b) => depth(a) - depth(b) || a - b);
    return open.length > maxOpen ? null : { text: best.text, groups: new Set(best.groups), open };
  }
}

// ------------------------------------------------------------ clear of the opened group

function segmentHits(c: Pt[], rect: Rect): boolean {
  for (let k = 1; k < SAMPLES; k++) {
    if (insideStrictly(rect, bezierAt(c, k / SAMPLES))) {
      return true;
    }
  }
  return false;
}

function insideStrictly(r: Rect, p: Pt, eps = 1): boolean {
  return p.x > r.x + eps && p.x < r.x + r.w - eps && p.y > r.y + eps && p.y < r.y + r.h - eps;
}

function straight(a: Pt, b: Pt): Pt[] {
  return [lerp(a, b, 1 / 3), lerp(a, b, 2 / 3), b];
}

/**
 * An edge that passed beside the group kept its side, but where it crosses from the part
 * that stayed into the part that moved, one curve can now cut across the grown group:
 * such a curve is replaced by two straight legs around the group's corner (across, then
 * down, or down, then across: whichever clears it). Curves that already clear it stay.
 */
export function clearOf(rect: Rect, points: Pt[]): Pt[] {
  const out: Pt[] = [points[0]];
  for (let k = 0; k + 3 < points.length; k += 3) {
    const c = points.slice(k, k + 4);
    if (!segmentHits(c, rect)) {
      out.push(c[1], c[2], c[3]);
      continue;
    }
    const [a, b] = [c[0], c[3]];
    const legs = [
      { x: b.x, y: a.y },
      { x: a.x, y: b.y }
    ]
      .map(w => [a, ...straight(a, w), ...straight(w, b)])
      .find(path => !segmentHits(path.slice(0, 4), rect) && !segmentHits(path.slice(3, 7), rect));
    out.push(...(legs ? legs.slice(1) : c.slice(1)));
  }
  return out;
}

/** Where on a poly-Bézier a point is nearest: the curve's index and its parameter. */
export function nearestOnPath(points: Pt[], p: Pt): { segment: number; t: number } {
  let best = { segment: 0, t: 0, d: Infinity };
  for (let k = 0; 3 * k + 3 < points.length; k++) {
    const c = points.slice(3 * k, 3 * k + 4);
    for (let i = 0; i <= SAMPLES; i++) {
      const q = bezierAt(c, i / SAMPLES);
      const d = Math.hypot(q.x - p.x, q.y - p.y);
      if (d < best.d) {
        best = { segment: k, t: i / SAMPLES, d };
      }
    }
  }
  return { segment: best.segment, t: best.t };
}

/**
 * Where an edge's label goes when the edge's path changes from `was` to `now`, whose
 * curve `shift` + k is `was`'s curve k reshaped: beside the same place along the edge,
 * at the same offset from it.
 */
export function followLabel(was: Pt[], now: Pt[], label: Pt, shift = 0): Pt {
  const { segment, t } = nearestOnPath(was, label);
  const k = Math.min(segment + shift, (now.length - 1) / 3 - 1);
  const old = bezierAt(was.slice(3 * segment, 3 * segment + 4), t);
  const next = bezierAt(now.slice(3 * k, 3 * k + 4), t);
  return { x: label.x + next.x - old.x, y: label.y + next.y - old.y };
}

// ------------------------------------------------------------ closing in place

/**
 * The part of a path from its start until it first enters `rect`, cut exactly at the
 * border (the whole path when it never enters). A path that starts inside is taken from
 * the other end: reverse it first, and the result back.
 */
export function outsidePrefix(points: Pt[], rect: Rect): Pt[] {
  const segments = (points.length - 1) / 3;
  for (let s = 0; s < segments; s++) {
    const c = points.slice(3 * s, 3 * s + 4);
    for (let k = 1; k <= SAMPLES; k++) {
      if (inside(rect, bezierAt(c, k / SAMPLES))) {
        return [...points.slice(0, 3 * s), ...splitBezier(c, border(c, rect, (k - 1) / SAMPLES, k / SAMPLES)[0])[0]];
      }
    }
  }
  return points;
}

/** Where an edge from (or to) `p` meets a box: on the side the drawing's rank direction
 * says (in on the top, out at the bottom; left and right, left to right) when `p` lies
 * beyond that side, as near to `p` as the side allows short of the corners; else on the
 * nearest side (an edge that comes round from below or beside). */
export function portOn(box: Rect, p: Pt, end: 'in' | 'out', rankdir: 'TB' | 'LR'): Pt {
  const margin = Math.min(8, box.w / 4, box.h / 4);
  const clamp = (v: number, lo: number, hi: number) => Math.min(Math.max(v, lo + margin), hi - margin);
  const right = box.x + box.w;
  const bottom = box.y + box.h;
  if (rankdir === 'LR' && (end === 'in' ? p.x <= box.x : p.x >= right)) {
    return { x: end === 'in' ? box.x : right, y: clamp(p.y, box.y, bottom) };
  }
  if (rankdir === 'TB' && (end === 'in' ? p.y <= box.y : p.y >= bottom)) {
    return { x: clamp(p.x, box.x, right), y: end === 'in' ? box.y : bottom };
  }
  return nearestOnBorder(box, p);
}

/** The point of `box`'s border nearest to `p`. */
export function nearestOnBorder(box: Rect, p: Pt): Pt {
  const x = Math.min(Math.max(p.x, box.x), box.x + box.w);
  const y = Math.min(Math.max(p.y, box.y), box.y + box.h);
  if (x !== p.x || y !== p.y) {
    return { x, y };
  }
  const d = [p.x - box.x, box.x + box.w - p.x, p.y - box.y, box.y + box.h - p.y];
  return [
    { x: box.x, y: p.y },
    { x: box.x + box.w, y: p.y },
    { x: p.x, y: box.y },
    { x: p.x, y: box.y + box.h }
  ][d.indexOf(Math.min(...d))];
}

/** A path carried on from its last point to `to` along a straight cubic. */
export function extendTo(points: Pt[], to: Pt): Pt[] {
  const from = points[points.length - 1];
  return [...points, lerp(from, to, 1 / 3), lerp(from, to, 2 / 3), to];
}

/** Graphviz's arrowhead (a closed triangle) with its tip at `tip`, pointing away from `from`
 * (or along `along` when `from` is at the tip: an edge that meets the border there). */
export function arrowHead(from: Pt, tip: Pt, along: Pt = { x: 0, y: 1 }, length = 10, halfWidth = 3.5): Pt[] {
  const near = Math.hypot(tip.x - from.x, tip.y - from.y) < 1e-6;
  const dx = near ? along.x : tip.x - from.x;
  const dy = near ? along.y : tip.y - from.y;
  const norm = Math.hypot(dx, dy) || 1;
  const ux = dx / norm;
  const uy = dy / norm;
  const base = { x: tip.x - ux * length, y: tip.y - uy * length };
  return [
    { x: base.x - uy * halfWidth, y: base.y + ux * halfWidth },
    tip,
    { x: base.x + uy * halfWidth, y: base.y - ux * halfWidth },
    { x: base.x - uy * halfWidth, y: base.y + ux * halfWidth }
  ];
}
