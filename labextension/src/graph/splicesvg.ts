/**
 * Opening a group in a Graphviz drawing without laying the drawing out again: the
 * group's box is replaced by the drawing of its contents (laid out on their own, see
 * `dot.ts groupToDot`), and the rest of the drawing makes room by the stretch of
 * `splice.ts`. Nodes keep their shape and move as a whole, open groups (clusters) grow
 * around what they hold, edges follow the items they join, and the edges that went to
 * or from the box keep their outside part and end at the item inside they really join.
 * Ids, classes and labels are Graphviz's own: everything inside comes from Graphviz.
 */

import {
  Pt,
  Rect,
  Stretch,
  arrowHead,
  bboxOf,
  clearOf,
  clipToRect,
  coordsOf,
  edgeEnds,
  extendTo,
  followLabel,
  formatPath,
  joinPaths,
  mapCoords,
  outsidePrefix,
  parsePath,
  portOn,
  refitPoint,
  refitRect,
  rigidShift,
  shifted,
  snapToStretch,
  stretchEdgePath,
  stretchFor,
  stretchPoint,
  stretchRect,
  union,
  within
} from './splice';

const PARSE_TYPE = 'image/svg+xml';

/** The coordinates of an element's drawn shapes (not its text). */
function shapePoints(g: Element): Pt[] {
  const out: Pt[] = [];
  g.querySelectorAll('polygon, polyline').forEach(e => out.push(...coordsOf(e.getAttribute('points') ?? '')));
  g.querySelectorAll('path').forEach(e => out.push(...coordsOf(e.getAttribute('d') ?? '')));
  g.querySelectorAll('ellipse').forEach(e => {
    const [cx, cy, rx, ry] = ['cx', 'cy', 'rx', 'ry'].map(a => parseFloat(e.getAttribute(a) ?? '0'));
    out.push({ x: cx - rx, y: cy - ry }, { x: cx + rx, y: cy + ry });
  });
  return out;
}

/** Every coordinate of an element's shapes through `f`. */
function mapShapes(g: Element, f: (p: Pt) => Pt): void {
  g.querySelectorAll('polygon, polyline').forEach(e =>
    e.setAttribute('points', mapCoords(e.getAttribute('points') ?? '', f))
  );
  g.querySelectorAll('path').forEach(e => e.setAttribute('d', mapCoords(e.getAttribute('d') ?? '', f)));
  g.querySelectorAll('ellipse').forEach(e => mapAt(e, 'cx', 'cy', f));
}

/** Every coordinate of an element (shapes and text) through `f`. */
function mapElement(g: Element, f: (p: Pt) => Pt): void {
  mapShapes(g, f);
  g.querySelectorAll('text').forEach(e => mapAt(e, 'x', 'y', f));
}

/** The point an element is at (a text's x, y; an ellipse's centre) through `f`. */
function mapAt(e: Element, xa: string, ya: string, f: (p: Pt) => Pt): void {
  const p = f({ x: parseFloat(e.getAttribute(xa) ?? '0'), y: parseFloat(e.getAttribute(ya) ?? '0') });
  e.setAttribute(xa, String(Math.round(p.x * 100) / 100));
  e.setAttribute(ya, String(Math.round(p.y * 100) / 100));
}

const by = (d: Pt) => (p: Pt) => shifted(p, d);

/** An edge through the stretch, its ends moving with the items they join (a null end
 * is stretched as any point). */
function stretchEdge(edge: Element, s: Stretch, tail: Pt | null, head: Pt | null, grown: Rect): void {
  const path = edge.querySelector('path');
  if (path) {
    const moved = stretchEdgePath(s, parsePath(path.getAttribute('d') ?? ''), tail, head);
    // An edge between two other items goes around the grown group, never across it.
    path.setAttribute('d', formatPath(tail && head ? clearOf(grown, moved) : moved));
  }
  // The arrowhead touches the head item; the label is a point of the edge's course.
  edge
    .querySelectorAll('polygon')
    .forEach(p =>
      p.setAttribute('points', mapCoords(p.getAttribute('points') ?? '', head ? by(head) : q => stretchPoint(s, q)))
    );
  edge.querySelectorAll('text').forEach(t => mapAt(t, 'x', 'y', q => stretchPoint(s, q)));
}

function pathOf(edge: Element): Pt[] {
  return parsePath(edge.querySelector('path')?.getAttribute('d') ?? '');
}

function setPath(edge: Element, points: Pt[]): void {
  edge.querySelector('path')?.setAttribute('d', formatPath(points));
}

/**
 * Open the group drawn as the box `item` ("g<id>") of the drawing `base`, in place,
 * with `sub`: the drawing of the group's contents (`groupToDot`). `base` is changed.
 * Throws when the two drawings do not fit together (the caller then lays out afresh).
 */
export function spliceGroup(base: Document, sub: Document, item: string): void {
  const graph = base.querySelector('g.graph');
  const box = base.getElementById(item);
  const cluster = sub.getElementById(`cluster_${item}`);
  if (!graph || !box || !cluster) {
    throw new Error(`the drawings have no ${!box ? item : `cluster_${item}`} to splice`);
  }
  const boxRect = bboxOf(shapePoints(box));
  const clusterRect = bboxOf(shapePoints(cluster));
  const s = stretchFor(boxRect, clusterRect);
  const placed: Rect = { ...boxRect, w: clusterRect.w, h: clusterRect.h };
  const crossing = makeRoom(base, item, s, { was: boxRect, now: placed });
  box.remove();
  growCanvas(base, s);
  // What comes in: the group's drawing, moved so that its top left is the box's.
  const offset = { x: boxRect.x - clusterRect.x, y: boxRect.y - clusterRect.y };
  const adopt = (e: Element) => {
    const copy = base.importNode(e, true) as Element;
    mapElement(copy, by(offset));
    return copy;
  };
  adoptClustersAndNodes(base, graph, sub, adopt);
  const inner = new Set<string>();
  sub.querySelectorAll('g.node').forEach(n => inner.add(n.id));
  const labelled = new Set<Element>();
  sub.querySelectorAll('g.edge').forEach(e => {
    const ends = edgeEnds(e.id);
    if (!ends) {
      return;
    }
    const edge = adopt(e);
    if (!inner.has(ends.src) || !inner.has(ends.dst)) {
      const incoming = !inner.has(ends.src);
      const old = incoming ? crossing.into.get(ends.src) : crossing.outOf.get(ends.dst);
      if (!old) {
        throw new Error(`no edge drawn between ${item} and ${incoming ? ends.src : ends.dst}`);
      }
      joinCrossingEdge(edge, old, placed, incoming, labelled);
    }
    graph.appendChild(edge);
  });
}

/**
 * What stays when the box `item` opens (`box`: its place before and after): nodes move rigidly, clusters grow,
 * edges follow. The edges into and out of the box are taken out: by the item at their
 * other end.
 */
function makeRoom(
  base: Document,
  item: string,
  s: Stretch,
  box: { was: Rect; now: Rect }
): { into: Map<string, Element>; outOf: Map<string, Element> } {
  const placed = box.now;
  const shifts = new Map<string, Pt>();
  const moved: { was: Rect; now: Rect }[] = [box];
  base.querySelectorAll('g.node').forEach(node => {
    if (node.id !== item) {
      const was = bboxOf(shapePoints(node));
      const d = rigidShift(s, was);
      shifts.set(node.id, d);
      mapElement(node, by(d));
      moved.push({ was, now: { ...was, x: was.x + d.x, y: was.y + d.y } });
    }
  });
  refitClusters(base, s, moved);
  const into = new Map<string, Element>();
  const outOf = new Map<string, Element>();
  base.querySelectorAll('g.edge').forEach(edge => {
    const ends = edgeEnds(edge.id);
    const shift = (end: string | undefined) => (end && end !== item ? (shifts.get(end) ?? null) : null);
    stretchEdge(edge, s, shift(ends?.src), shift(ends?.dst), placed);
    if (ends?.dst === item) {
      into.set(ends.src, edge);
    } else if (ends?.src === item) {
      outOf.set(ends.dst, edge);
    }
  });
  into.forEach(e => e.remove());
  outOf.forEach(e => e.remove());
  return { into, outOf };
}

/** The group's clusters above the open groups that hold it (drawn before it) and below
 * every node and edge; its nodes on top. */
function adoptClustersAndNodes(base: Document, graph: Element, sub: Document, adopt: (e: Element) => Element): void {
  const clusters = [...sub.querySelectorAll('g.cluster')].map(adopt);
  const lastCluster = [...base.querySelectorAll('g.cluster')].pop();
  const after = lastCluster ?? graph.querySelector(':scope > polygon');
  if (after) {
    after.after(...clusters);
  } else {
    graph.prepend(...clusters);
  }
  sub.querySelectorAll('g.node').forEach(n => graph.appendChild(adopt(n)));
}

/** An edge of the group's drawing that crosses its border, joined to `old`, the outside
 * part of the edge that went into (`incoming`) or out of the box; `old`'s label comes
 * along once per outside part (`labelled`). */
function joinCrossingEdge(edge: Element, old: Element, placed: Rect, incoming: boolean, labelled: Set<Element>): void {
  const part = clipToRect(pathOf(edge), placed, incoming ? 'head' : 'tail');
  const was = pathOf(old);
  let now: Pt[];
  if (incoming) {
    now = joinPaths(was, part);
  } else {
    // The outside part's start moves to where the inside part leaves the group.
    now = joinPaths([...was].reverse(), [...part].reverse()).reverse();
    edge.querySelectorAll('polygon').forEach(p => p.remove());
    old.querySelectorAll('polygon').forEach(p => edge.appendChild(p.cloneNode(true)));
  }
  setPath(edge, now);
  const label = old.querySelector('text');
  if (label && !labelled.has(old)) {
    labelled.add(old); // one label for the outside part the opened edges share
    const copy = label.cloneNode(true) as Element;
    const at = { x: parseFloat(copy.getAttribute('x') ?? '0'), y: parseFloat(copy.getAttribute('y') ?? '0') };
    const moved = followLabel(was, now, at, incoming ? 0 : (part.length - 1) / 3);
    mapAt(copy, 'x', 'y', () => moved);
    edge.appendChild(copy);
  }
}

/**
 * Open groups around what they hold after the move (`moved`: the items' boxes before
 * and after), innermost first, with the margins they had, each side moving by nothing or
 * by the growth (`snapToStretch`); the label stays at the top left corner. One that
 * holds nothing drawn is stretched as a whole.
 */
function refitClusters(doc: Document, s: Stretch, moved: { was: Rect; now: Rect }[]): void {
  const clusters = [...doc.querySelectorAll('g.cluster')].map(el => ({ el, was: bboxOf(shapePoints(el)) }));
  clusters.sort((a, b) => a.was.w * a.was.h - b.was.w * b.was.h);
  for (const { el, was } of clusters) {
    const held = moved.filter(m => within(m.was, was));
    const now = held.length
      ? snapToStretch(s, was, refitRect(was, union(held.map(m => m.was)), union(held.map(m => m.now))))
      : stretchRect(s, was);
    mapShapes(el, p => refitPoint(was, now, p));
    el.querySelectorAll('text').forEach(t => mapAt(t, 'x', 'y', by({ x: now.x - was.x, y: now.y - was.y })));
    moved.push({ was, now });
  }
}

/**
 * Close the open group `item` ("g<id>") of the drawing `base` in place: its cluster and
 * everything in it give way to its box, taken from `fresh` (a Graphviz drawing of the
 * view with the group closed), at the cluster's top left corner (under the label that
 * was clicked). Nothing else moves: the room the group took stays free until a Tidy
 * layout. The edges that went in or out keep their outside part, one per item outside
 * (as the view merges them), and end at the box, labelled as `fresh` labels them.
 * `base` is changed; throws when the drawings do not fit together.
 */
export function closeGroup(base: Document, fresh: Document, item: string, rankdir: 'TB' | 'LR' = 'TB'): void {
  const graph = base.querySelector('g.graph');
  const cluster = base.getElementById(`cluster_${item}`);
  const box = fresh.getElementById(item);
  if (!graph || !cluster || !box) {
    throw new Error(`the drawings have no ${!box ? item : `cluster_${item}`} to close`);
  }
  const rect = bboxOf(shapePoints(cluster));
  const inner = removeWithin(base, rect);
  const boxRect = bboxOf(shapePoints(box));
  const placed = base.importNode(box, true) as Element;
  mapElement(placed, by({ x: rect.x - boxRect.x, y: rect.y - boxRect.y }));
  graph.appendChild(placed);
  const at = { ...boxRect, x: rect.x, y: rect.y };
  const joined = new Set<string>();
  base.querySelectorAll('g.edge').forEach(edge => {
    const ends = edgeEnds(edge.id);
    const srcIn = !!ends && inner.has(ends.src);
    const dstIn = !!ends && inner.has(ends.dst);
    if (!ends || (!srcIn && !dstIn)) {
      return;
    }
    const id = srcIn ? `e_${item}_${ends.dst}` : `e_${ends.src}_${item}`;
    if ((srcIn && dstIn) || joined.has(id)) {
      edge.remove();
      return;
    }
    joined.add(id);
    edge.id = id;
    endAtBox(edge, rect, at, dstIn, rankdir);
    const label = fresh.getElementById(id)?.querySelector('text')?.textContent;
    const text = edge.querySelector('text');
    if (text && label) {
      text.textContent = label;
    }
  });
}

/** Remove the nodes and clusters drawn within `rect`; the removed nodes' ids. */
function removeWithin(base: Document, rect: Rect): Set<string> {
  const inner = new Set<string>();
  base.querySelectorAll('g.node').forEach(n => {
    if (within(bboxOf(shapePoints(n)), rect)) {
      inner.add(n.id);
      n.remove();
    }
  });
  base.querySelectorAll('g.cluster').forEach(c => {
    if (within(bboxOf(shapePoints(c)), rect)) {
      c.remove();
    }
  });
  return inner;
}

/** An edge that went into (`incoming`) or out of the closed group's `rect`: its outside
 * part, joined straight to the box drawn at `at`. */
function endAtBox(edge: Element, rect: Rect, at: Rect, incoming: boolean, rankdir: 'TB' | 'LR'): void {
  const path = pathOf(edge);
  if (incoming) {
    // In: the outside part, then straight on to the box, with an arrowhead there.
    const outside = outsidePrefix(path, rect);
    const from = outside[outside.length - 1];
    const before = outside[Math.max(0, outside.length - 2)];
    const head = arrowHead(from, portOn(at, from, 'in', rankdir), { x: from.x - before.x, y: from.y - before.y });
    setPath(edge, extendTo(outside, midpoint(head[0], head[2]))); // the line stops at the arrow's base
    edge
      .querySelectorAll('polygon')
      .forEach((p, k) => (k === 0 ? p.setAttribute('points', head.map(q => `${q.x},${q.y}`).join(' ')) : p.remove()));
  } else {
    // Out: from the box, straight to where the edge leaves the old group, then on.
    const outside = outsidePrefix([...path].reverse(), rect).reverse();
    const start = portOn(at, outside[0], 'out', rankdir);
    setPath(edge, extendTo([start], outside[0]).concat(outside.slice(1)));
  }
}

function midpoint(a: Pt, b: Pt): Pt {
  return { x: (a.x + b.x) / 2, y: (a.y + b.y) / 2 };
}

/** The drawing's canvas (its size, its background) through the stretch. */
function growCanvas(doc: Document, s: Stretch): void {
  const svg = doc.documentElement;
  const background = doc.querySelector('g.graph > polygon');
  if (background) {
    background.setAttribute(
      'points',
      mapCoords(background.getAttribute('points') ?? '', p => stretchPoint(s, p))
    );
  }
  const [x, y, w, h] = (svg.getAttribute('viewBox') ?? '0 0 0 0').split(/[\s,]+/).map(Number);
  const width = w + s.x.grow;
  const height = h + s.y.grow;
  svg.setAttribute('viewBox', `${x} ${y} ${width.toFixed(2)} ${height.toFixed(2)}`);
  svg.setAttribute('width', `${width.toFixed(2)}pt`);
  svg.setAttribute('height', `${height.toFixed(2)}pt`);
}

/** A Graphviz drawing's text as a document to splice in. */
export function parseDrawing(text: string): Document {
  const doc = new DOMParser().parseFromString(text, PARSE_TYPE);
  if (doc.querySelector('parsererror')) {
    throw new Error('a drawing to splice does not parse');
  }
  return doc;
}

export function drawingText(doc: Document): string {
  return new XMLSerializer().serializeToString(doc);
}

/** The items whose edges meet the box `item`, in the order they meet its border (left to
 * right, or top to bottom for a drawing made left to right): edges in, edges out. */
export function portOrder(doc: Document, item: string, rankdir: 'TB' | 'LR'): { in: string[]; out: string[] } {
  const ins: [string, Pt][] = [];
  const outs: [string, Pt][] = [];
  doc.querySelectorAll('g.edge').forEach(edge => {
    const ends = edgeEnds(edge.id);
    const path = pathOf(edge);
    if (ends && path.length) {
      if (ends.dst === item) {
        ins.push([ends.src, path[path.length - 1]]);
      } else if (ends.src === item) {
        outs.push([ends.dst, path[0]]);
      }
    }
  });
  const along = (p: Pt) => (rankdir === 'LR' ? p.y : p.x);
  const sorted = (ports: [string, Pt][]) => ports.sort((a, b) => along(a[1]) - along(b[1])).map(([end]) => end);
  return { in: sorted(ins), out: sorted(outs) };
}
