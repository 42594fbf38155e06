/**
 * A laid-out scene written as SVG: the same drawing as the canvas's (`scenecanvas.ts`),
 * every item, open group and edge with the same shapes, colours and labels, all of it
 * (an export is not cut to a view, and its text is always written). Items are `g.node`
 * with the item's id, edges `path.edge`, open groups `g.cluster`, as in Graphviz's SVG.
 */

import { LayeredOutput } from './layered';
import { EDGE_COLOR, Scene, textWidth } from './scene';
import { FONT_FAMILY, clusterTitleColor, extraOutlines, labelLines, shapePath } from './scenecanvas';
import { EdgeGeometry, PathSink, edgePointsOf } from './sceneindex';
import { CANVAS_OUTLINE, LEGEND } from '../shared/visual';

const MARGIN = 8;

/** A path's `d`, written through the same calls as a canvas path. */
export class SvgPath implements PathSink {
  d = '';
  private add(cmd: string, ...xs: number[]): void {
    this.d += cmd + xs.map(x => +x.toFixed(2)).join(' ');
  }
  moveTo(x: number, y: number): void {
    this.add('M', x, y);
  }
  lineTo(x: number, y: number): void {
    this.add('L', x, y);
  }
  bezierCurveTo(a: number, b: number, c: number, d: number, x: number, y: number): void {
    this.add('C', a, b, c, d, x, y);
  }
  closePath(): void {
    this.d += 'Z';
  }
  rect(x: number, y: number, w: number, h: number): void {
    this.add('M', x, y);
    this.add('H', x + w);
    this.add('V', y + h);
    this.add('H', x);
    this.d += 'Z';
  }
  roundRect(x: number, y: number, w: number, h: number, r: number): void {
    r = Math.max(0, Math.min(r, w / 2, h / 2));
    this.add('M', x + r, y);
    this.add('H', x + w - r);
    this.add('A', r, r, 0, 0, 1, x + w, y + r);
    this.add('V', y + h - r);
    this.add('A', r, r, 0, 0, 1, x + w - r, y + h);
    this.add('H', x + r);
    this.add('A', r, r, 0, 0, 1, x, y + h - r);
    this.add('V', y + r);
    this.add('A', r, r, 0, 0, 1, x + r, y);
    this.d += 'Z';
  }
}

function esc(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

function pathOf(draw: (p: SvgPath) => void): string {
  const p = new SvgPath();
  draw(p);
  return p.d;
}

/** A text element, narrowed to `maxW` where its estimated width is more (as the canvas
 * narrows it). */
function text(line: string, x: number, y: number, fontPx: number, color: string, attrs: string, maxW: number): string {
  const fit =
    textWidth(line, fontPx) > maxW && maxW > 0
      ? ` textLength="${maxW.toFixed(1)}" lengthAdjust="spacingAndGlyphs"`
      : '';
  return (
    `<text x="${x.toFixed(2)}" y="${y.toFixed(2)}" font-family="${FONT_FAMILY}" font-size="${fontPx.toFixed(2)}" ` +
    `fill="${color}" ${attrs}${fit}>${esc(line)}</text>`
  );
}

function clustersSvg(scene: Scene, layout: LayeredOutput): string[] {
  return scene.clusters.map((gid, c) => {
    const l = scene.clusterLooks[c];
    const [x, y, w, h] = [layout.clusterX[c], layout.clusterY[c], layout.clusterW[c], layout.clusterH[c]];
    const dash = l.dashed ? ' stroke-dasharray="5 3"' : '';
    return (
      `<g class="cluster" id="cluster_g${gid}"><path d="${pathOf(p => p.roundRect(x, y, w, h, 6))}" fill="${l.fill}" ` +
      `stroke="${l.stroke}" stroke-width="${l.lineWidth}"${dash}/>` +
      text(l.lines[0], x + 8, y + 6, l.fontPx, clusterTitleColor(l), 'dominant-baseline="hanging"', w - 16) +
      '</g>'
    );
  });
}

function edgesSvg(scene: Scene, edges: EdgeGeometry): string[] {
  const out: string[] = [];
  for (let e = 0; e < scene.edgeSrc.length; e++) {
    if (edges.start[e + 1] === edges.start[e]) {
      continue;
    }
    const color = scene.edgeWeak[e] ? LEGEND.weak.color : EDGE_COLOR;
    const dash = scene.edgeWeak[e] ? ' stroke-dasharray="4 3"' : '';
    const line = pathOf(p => {
      for (let k = edges.start[e]; k + 1 < edges.start[e + 1]; k++) {
        edges.segment(p, k, true);
      }
    });
    out.push(
      `<g class="edge"><path d="${line}" fill="none" stroke="${color}" stroke-width="0.8"${dash}/>` +
        `<path d="${pathOf(p => edges.head(p, e))}" fill="${color}"/></g>`
    );
  }
  return out;
}

function itemsSvg(scene: Scene, layout: LayeredOutput): string[] {
  return scene.items.map((id, k) => {
    const l = scene.itemLooks[k];
    const r = { x: layout.itemX[k], y: layout.itemY[k], w: scene.layout.itemW[k], h: scene.layout.itemH[k] };
    const parts = [
      `<path d="${pathOf(p => shapePath(p, l, r))}" fill="${l.fill}" stroke="${CANVAS_OUTLINE}" stroke-width="1"/>`
    ];
    if (l.peripheries > 1 || l.lineWidth > 1.5) {
      parts.push(
        `<path d="${pathOf(p => extraOutlines(p, l, r))}" fill="none" stroke="${l.stroke}" stroke-width="${l.lineWidth}"/>`
      );
    }
    labelLines(l, r, (line, x, y, w) =>
      parts.push(text(line, x, y, l.fontPx, l.font, 'text-anchor="middle" dominant-baseline="central"', w))
    );
    return `<g class="node" id="${esc(id)}">${parts.join('')}</g>`;
  });
}

/** The whole scene as an SVG document. */
export function sceneSvg(scene: Scene, layout: LayeredOutput): string {
  const edges = new EdgeGeometry(edgePointsOf(scene.layout, layout), scene.layout.rankdir);
  const w = layout.width + 2 * MARGIN;
  const h = layout.height + 2 * MARGIN;
  return [
    '<?xml version="1.0" encoding="UTF-8" standalone="no"?>',
    `<svg xmlns="http://www.w3.org/2000/svg" width="${w.toFixed(0)}" height="${h.toFixed(0)}" ` +
      `viewBox="${-MARGIN} ${-MARGIN} ${w.toFixed(2)} ${h.toFixed(2)}">`,
    '<g class="graph">',
    ...clustersSvg(scene, layout),
    ...edgesSvg(scene, edges),
    ...itemsSvg(scene, layout),
    '</g></svg>'
  ].join('\n');
}
