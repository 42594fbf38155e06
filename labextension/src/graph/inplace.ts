/**
 * Opening and closing groups in place in a kept Graphviz drawing (`splicesvg.ts`): the
 * group's own drawing laid out (in the worker) and spliced in, or the closed view's box
 * put where the group was; and laying out ahead what a click on a box in view would open.
 */

import { groupToDot } from './dot';
import { layoutText } from './layoutsvg';
import { RankDir } from './model';
import { closeGroup, drawingText, parseDrawing, portOrder, spliceGroup } from './splicesvg';
import { GraphIndex, buildView, groupItem, parseItem } from './visible';

/** Boxes in view whose opening is laid out ahead, while nothing else runs. */
const PREFETCH_BOXES = 8;

/** Drawings parsed lately, by their text, most recent last: a click on a box of the
 * drawing on screen starts from a copy of it, not from a parse of its text. */
const parsed = new Map<string, Document>();
const PARSED_KEPT = 6;

/** The parsed drawing of `text`, to read only. */
function parsedDrawing(text: string): Document {
  const doc = parsed.get(text) ?? parseDrawing(text);
  keepParsed(text, doc);
  return doc;
}

function keepParsed(text: string, doc: Document): void {
  parsed.delete(text);
  parsed.set(text, doc);
  while (parsed.size > PARSED_KEPT) {
    parsed.delete(parsed.keys().next().value as string);
  }
}

/** A copy of the drawing of `text`, to change. */
function drawingOf(text: string): Document {
  return parsedDrawing(text).cloneNode(true) as Document;
}

/** The text of a drawing just made, which is kept parsed as it is. */
function keptText(drawing: Document): string {
  const text = drawingText(drawing);
  keepParsed(text, drawing);
  return text;
}

/** A copy of the SVG element of the drawing of `text` (parsed once), for the page. */
export function svgOf(text: string): SVGSVGElement {
  return parsedDrawing(text).documentElement.cloneNode(true) as unknown as SVGSVGElement;
}

/** Open the groups `base.open` in the drawing `base.text`, in place: each box drawn
 * there is opened in one go, with the groups to open inside it laid out as its own
 * drawing (fewer joins than opening them level by level). The drawing's text (undefined:
 * no longer `current`). */
export async function openInPlace(
  index: GraphIndex,
  base: { text: string; groups: Set<number>; open: number[] },
  rankdir: RankDir,
  current: () => boolean
): Promise<string | undefined> {
  const drawing = drawingOf(base.text);
  const groups = new Set(base.groups);
  const pending = new Set(base.open);
  for (const gid of base.open) {
    if (!pending.has(gid)) {
      continue; // opened with the box that holds it
    }
    // Parents come first: `gid` is a box of the drawing; what opens inside it opens with it.
    for (const g of base.open) {
      if (pending.has(g) && index.groupChain(g).includes(gid)) {
        groups.add(g);
        pending.delete(g);
      }
    }
    const item = groupItem(gid);
    const order = portOrder(drawing, item, rankdir);
    const sub = await layoutText(groupToDot(buildView(index, groups), gid, { rankdir }, order));
    if (!current()) {
      return undefined;
    }
    spliceGroup(drawing, drawingOf(sub), item);
  }
  return keptText(drawing);
}

/** Close `gid` in the drawing `shown`, in place (`splicesvg.ts closeGroup`): the box
 * comes from a fresh layout of the closed view (`dot`), nothing else moves. The
 * drawing's text. */
export async function closeInPlace(
  shown: string | undefined,
  gid: number,
  dot: string,
  rankdir: RankDir
): Promise<string> {
  if (shown === undefined) {
    throw new Error('the drawing on screen is not kept');
  }
  const drawing = drawingOf(shown);
  closeGroup(drawing, drawingOf(await layoutText(dot)), groupItem(gid), rankdir);
  return keptText(drawing);
}

/** Lay out ahead, one at a time in the worker, what opening each box of `svg` in view
 * (`canvas`: the page rect shown) would splice into this drawing (the same DOT as
 * `openInPlace` writes, so the layout cache answers the click): a click then only
 * splices. Stops when no longer `current`. */
export function prefetchOpenings(
  svg: SVGSVGElement,
  canvas: DOMRect,
  shown: { index: GraphIndex; expanded: Set<number>; text: string; rankdir: RankDir },
  current: () => boolean
): void {
  const c = canvas;
  const boxes = [...svg.querySelectorAll<SVGGElement>('g.node.jaxviz-group')]
    .filter(g => !/jaxviz-group-(inputs|outputs)/.test(g.getAttribute('class') ?? ''))
    .filter(g => {
      const r = g.getBoundingClientRect();
      return r.right > c.left && r.left < c.right && r.bottom > c.top && r.top < c.bottom;
    })
    .slice(0, PREFETCH_BOXES)
    .map(g => parseItem(g.id).id);
  const { index, expanded, text, rankdir } = shown;
  const run = async () => {
    const drawing = parsedDrawing(text);
    for (const gid of boxes) {
      if (!current()) {
        return;
      }
      const order = portOrder(drawing, groupItem(gid), rankdir);
      await layoutText(groupToDot(buildView(index, index.expand(expanded, gid)), gid, { rankdir }, order));
    }
  };
  // After the drawing is on screen, while nothing else runs.
  const start = () => void run().catch(() => undefined);
  if (window.requestIdleCallback) {
    window.requestIdleCallback(start, { timeout: 300 });
  } else {
    window.setTimeout(start, 50);
  }
}
