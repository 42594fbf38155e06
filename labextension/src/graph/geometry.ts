/**
 * The graph's on-screen geometry, as pure functions (no DOM): the zoom and canvas height
 * of a first view that stays legible, the zoom that fits everything, the pan that keeps
 * a clicked item in place, and where a tooltip goes so that it is never cut off.
 */

/** Graphviz points to CSS pixels. */
export const PT_TO_PX = 4 / 3;
/** The DOT's node font size (points): the text most of a drawing is made of. */
export const NODE_FONT_PT = 10;
/** Smallest on-screen font size (px) of node text in a first view: below it text is
 * hard to read. Edge labels (8 pt) are then 0.8 of it. */
export const MIN_FONT_PX = 10;
/** The zoom at which node text is `MIN_FONT_PX` high. */
export const LEGIBLE_SCALE = MIN_FONT_PX / (NODE_FONT_PT * PT_TO_PX);
/** Padding (px) around the drawing inside the canvas. */
export const PAD = 8;

export interface Size {
  w: number;
  h: number;
}

export interface FirstView {
  scale: number;
  /** The canvas height (px): as tall as the drawing needs, up to `maxHeight`. */
  canvasHeight: number;
  /** The stage's offset: centred when the drawing is narrower than the canvas, else
   * its left (inputs) and top edges in view. */
  tx: number;
  ty: number;
}

/**
 * The first view of a drawing of `svg` px (at zoom 1) in a canvas `canvasWidth` wide and
 * at most `maxHeight` tall: the whole drawing when it fits at a legible zoom (never
 * enlarged past 1), else the legible zoom, the canvas as tall as allowed, and the
 * drawing panned from its top left (the user pans or presses Fit for the rest).
 */
export function firstView(svg: Size, canvasWidth: number, maxHeight: number, minScale = LEGIBLE_SCALE): FirstView {
  const fitScale = Math.min(1, (canvasWidth - 2 * PAD) / svg.w, (maxHeight - 2 * PAD) / svg.h);
  const scale = Math.max(fitScale, Math.min(1, minScale));
  const canvasHeight = Math.max(80, Math.min(maxHeight, svg.h * scale + 2 * PAD));
  const tx = Math.max(PAD, (canvasWidth - svg.w * scale) / 2);
  return { scale, canvasHeight, tx, ty: PAD };
}

/**
 * Whether a first view drawn top to bottom is a tall, narrow column (at the first view's
 * `scale`: much taller than the canvas, using less than half its width), better drawn
 * left to right across the width.
 */
export function prefersSideways(svg: Size, canvasWidth: number, maxHeight: number, scale: number): boolean {
  return svg.h * scale > 1.5 * maxHeight && svg.w * scale < 0.5 * canvasWidth;
}

/** The zoom and offset that show all of the drawing in a canvas of `canvas` px (not below
 * `minScale`: an SVG drawing that small is all blur; a canvas scene draws marks instead). */
export function fitAll(svg: Size, canvas: Size, minScale = 0.02): { scale: number; tx: number; ty: number } {
  const scale = Math.max(minScale, Math.min(1, (canvas.w - 2 * PAD) / svg.w, (canvas.h - 2 * PAD) / svg.h));
  return {
    scale,
    tx: Math.max(PAD, (canvas.w - svg.w * scale) / 2),
    ty: Math.max(PAD, (canvas.h - svg.h * scale) / 2)
  };
}

/** The canvas height for the notebook output in a window `windowHeight` tall: most of a big
 * screen, leaving room for the header, toolbar and status. */
export function maxCanvasHeight(windowHeight: number, compact: boolean): number {
  if (compact) {
    return 420;
  }
  return Math.round(Math.min(1400, Math.max(420, windowHeight * 0.72)));
}

/**
 * The offset that brings an item, now drawn at `now` (page px), back to `want`: the
 * pan moves by the difference. The item stays exactly in place; nothing is clamped,
 * since a clamp would move it.
 */
export function keepInPlace(
  offset: { tx: number; ty: number },
  now: { x: number; y: number },
  want: { x: number; y: number }
): { tx: number; ty: number } {
  return { tx: offset.tx + want.x - now.x, ty: offset.ty + want.y - now.y };
}

/**
 * Where a tooltip of `size` goes for a pointer at `at` (viewport px) in a viewport of
 * `viewport`: below right of the pointer, flipped to the left or above when it would
 * cross the viewport's right or bottom edge, and clamped inside it.
 */
export function placeTooltip(
  at: { x: number; y: number },
  size: Size,
  viewport: Size,
  gap = 14
): { x: number; y: number } {
  let x = at.x + gap;
  let y = at.y + gap;
  if (x + size.w > viewport.w - 4) {
    x = at.x - gap - size.w;
  }
  if (y + size.h > viewport.h - 4) {
    y = at.y - gap - size.h;
  }
  x = Math.max(4, Math.min(x, viewport.w - size.w - 4));
  y = Math.max(4, Math.min(y, viewport.h - size.h - 4));
  return { x, y };
}

/** A box in the drawing (px at zoom 1). */
export interface Rect {
  x: number;
  y: number;
  w: number;
  h: number;
}

/** The height (px at zoom 1) of an open group's title: the row its label stands in. */
export const TITLE_PX = 24;

/** An extent across: from `left` to `right` (px). */
export interface Span {
  left: number;
  right: number;
}

/**
 * Where a window `room` wide starts across (its left edge) on a drawing spanning
 * `drawing` (wider than the window) to show `structure` (which fits in it) centred with
 * as many of the `inputs` beside it as fit too, nearest first (the story starts where its
 * data comes in), within the drawing (no empty band beside it). As the kernel's
 * `first_screen_span` (jaxviz/render/dot.py) chooses the first screen's folds.
 */
export function storyWindow(structure: Span, inputs: readonly Span[], room: number, drawing: Span): number {
  const gap = (s: Span): number => Math.max(0, structure.left - s.right, s.left - structure.right);
  let shown = structure;
  for (const input of [...inputs].sort((a, b) => gap(a) - gap(b))) {
    const joined = { left: Math.min(shown.left, input.left), right: Math.max(shown.right, input.right) };
    if (joined.right - joined.left <= room) {
      shown = joined;
    }
  }
  const centred = shown.left - (room - (shown.right - shown.left)) / 2;
  return Math.min(Math.max(centred, drawing.left), drawing.right - room);
}

/**
 * The window `room` wide at `left` moved off any of the `inputs` its edges would cut in
 * half (what shows is `margin` wider each side: the canvas's padding), by the smaller
 * move that keeps `keep` in the window: to show the input whole or to leave it out,
 * though the window then passes the drawing's edge. An input cut in half reads as
 * something else; the story starts where its data comes in.
 */
export function uncutWindow(left: number, room: number, inputs: readonly Span[], keep: Span, margin = 0): number {
  const keeps = (at: number): boolean => keep.left >= at - 0.5 && keep.right <= at + room + 0.5;
  const nearest = (at: number, options: number[]): number =>
    options.filter(keeps).sort((a, b) => Math.abs(a - at) - Math.abs(b - at))[0] ?? at;
  for (const input of inputs) {
    const edge = left - margin;
    if (input.left < edge && edge < input.right) {
      left = nearest(left, [input.left + margin, input.right + margin]);
    }
  }
  for (const input of inputs) {
    const edge = left + room + margin;
    if (input.left < edge && edge < input.right) {
      left = nearest(left, [input.right - margin - room, input.left - margin - room]);
    }
  }
  return left;
}

/** The top-left corner of an open group where its title stands: a row as high as a
 * title, at most a quarter of the window wide. */
export function titleCorner(r: Rect, win: Size): Rect {
  return { x: r.x, y: r.y, w: Math.min(r.w, win.w / 4), h: Math.min(r.h, TITLE_PX) };
}

/**
 * Where the window's top-left corner goes (drawing px at zoom 1) in a first view: at
 * `start` (the program's top-left story), moved as little as it takes to bring `targets`
 * into a window of `win` (drawing px at zoom 1), with `margin` around them: the first
 * target, then each next one while all of those taken fit together. Of a target bigger
 * than the window, its top-left part is taken, half the window that way. The window
 * stays on the drawing (no empty band beside it) wherever the drawing is bigger than it.
 */
export function openingOrigin(
  drawing: Size,
  win: Size,
  targets: readonly Rect[],
  start: { x: number; y: number },
  margin = 0
): { x: number; y: number } {
  const part = (t: Rect): Rect => ({
    x: t.x,
    y: t.y,
    w: t.w + 2 * margin > win.w ? win.w / 2 : t.w,
    h: t.h + 2 * margin > win.h ? win.h / 2 : t.h
  });
  let union: Rect | null = null;
  for (const t of targets.map(part)) {
    const next: Rect = union ? unionRect(union, t) : t;
    if (union && (next.w + 2 * margin > win.w || next.h + 2 * margin > win.h)) {
      continue;
    }
    union = next;
  }
  if (!union) {
    return start;
  }
  // As near `from` as keeps [lo - margin, lo + size + margin] in view.
  const axis = (from: number, lo: number, size: number, room: number, total: number): number => {
    const wanted = Math.min(lo - margin, Math.max(from, lo + size + margin - room));
    return total > room ? Math.min(Math.max(0, wanted), total - room) : from;
  };
  return {
    x: axis(start.x, union.x, union.w, win.w, drawing.w),
    y: axis(start.y, union.y, union.h, win.h, drawing.h)
  };
}

/** What a first view's pan to the model's folds keeps in view (drawing px at zoom 1). */
export interface FoldTargets {
  /** The titles of the program's top-level structure (its passes). */
  story: readonly Rect[];
  /** The folds' titles (a closed fold: its box). */
  titles: readonly Rect[];
  /** The titles of the open groups holding the folds. */
  around: readonly Rect[];
  /** The folds' boxes. */
  boxes: readonly Rect[];
}

/**
 * Where the window's top-left corner goes for a first view with the folds in view
 * (`openingOrigin` each way, over the targets in an order of its own). Down: the
 * structure's titles first (the view reads from its top), then the folds' titles, those
 * around them, their boxes. Across: the folds' titles, those around them, the
 * structure's, the boxes: where a layout puts a fold far beside the structure's first
 * title, that title's start is left out of view, and the pan moves no further than the
 * fold needs.
 */
export function foldsOrigin(
  drawing: Size,
  win: Size,
  targets: FoldTargets,
  start: { x: number; y: number },
  margin = 0
): { x: number; y: number } {
  const { story, titles, around, boxes } = targets;
  const across = openingOrigin(drawing, win, [...titles, ...around, ...story, ...boxes], start, margin);
  const down = openingOrigin(drawing, win, [...story, ...titles, ...around, ...boxes], start, margin);
  return { x: across.x, y: down.y };
}

function unionRect(a: Rect, b: Rect): Rect {
  const x = Math.min(a.x, b.x);
  const y = Math.min(a.y, b.y);
  return { x, y, w: Math.max(a.x + a.w, b.x + b.w) - x, h: Math.max(a.y + a.h, b.y + b.h) - y };
}
