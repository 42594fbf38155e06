/**
 * A Graphviz SVG made ready for the graph widget (sized in px, no native tooltips, wide
 * hit strokes on edges, open groups' labels above the edges), its items gliding to their
 * new places after a re-layout, and its copy for export.
 */

import { PT_TO_PX } from './geometry';

const SVG_NS = 'http://www.w3.org/2000/svg';
/** How long items glide from their old to their new place after a re-layout. */
const MOVE_MS = 220;

/** A laid-out SVG's size in points (Graphviz's units). */
function svgSizePt(svg: SVGSVGElement): { w: number; h: number } {
  const vb = svg.viewBox.baseVal;
  const w = (vb && vb.width) || parseFloat(svg.getAttribute('width') || '0');
  const h = (vb && vb.height) || parseFloat(svg.getAttribute('height') || '0');
  return { w, h };
}

/** A laid-out SVG's size in CSS px at zoom 1. */
export function svgSizePx(svg: SVGSVGElement): { w: number; h: number } {
  const { w, h } = svgSizePt(svg);
  return { w: w * PT_TO_PX, h: h * PT_TO_PX };
}

/** Prepare a fresh Graphviz SVG for the stage; its size in px at zoom 1. */
export function prepareSvg(svg: SVGSVGElement): { w: number; h: number } {
  svg.querySelectorAll('title').forEach(t => t.remove());
  svg.querySelectorAll('a').forEach(a => {
    // Graphviz wraps elements with tooltips in links; keep the content only.
    a.replaceWith(...Array.from(a.childNodes));
  });
  const pt = svgSizePt(svg);
  const size = { w: pt.w * PT_TO_PX, h: pt.h * PT_TO_PX };
  svg.dataset.ptWidth = String(pt.w);
  svg.dataset.ptHeight = String(pt.h);
  svg.setAttribute('width', `${size.w}px`);
  svg.setAttribute('height', `${size.h}px`);
  // Inline, so that no page's rule scales the drawing (nbconvert's and Colab's
  // `.jp-RenderedHTMLCommon svg {max-width: 100%; height: auto}` shrank its text to 6 px):
  // the zoom is ours alone.
  svg.style.width = `${size.w}px`;
  svg.style.height = `${size.h}px`;
  svg.style.maxWidth = 'none';
  svg.style.maxHeight = 'none';
  svg.classList.add('jp-jaxviz-svg');
  // A box's fill (its kind's colour or its cost heat) as a variable, so that the theme
  // can tint it (see base.css) as it tints the legend's swatches.
  svg.querySelectorAll('g.node.jaxviz-group').forEach(g => {
    const fill = g.querySelector('polygon')?.getAttribute('fill');
    if (fill && fill !== 'none') {
      (g as SVGGElement).style.setProperty('--jaxviz-fill', fill);
    }
  });
  addEdgeHitStrokes(svg);
  liftClusterLabels(svg);
  return size;
}

/** Wide invisible strokes make thin edges easy to hover. */
function addEdgeHitStrokes(svg: SVGSVGElement): void {
  svg.querySelectorAll('g.edge').forEach(g => {
    const path = g.querySelector('path');
    if (path) {
      const hit = path.cloneNode(false) as SVGPathElement;
      hit.setAttribute('class', 'jaxviz-hit');
      hit.removeAttribute('stroke-dasharray');
      g.insertBefore(hit, g.firstChild);
    }
  });
}

/** Cluster labels (click to collapse) go on a layer above the edges, which would
 * otherwise catch the clicks where they cross a label. */
function liftClusterLabels(svg: SVGSVGElement): void {
  const top = svg.querySelector('g.graph') ?? svg;
  const labels = document.createElementNS(SVG_NS, 'g');
  labels.setAttribute('class', 'jaxviz-labels');
  svg.querySelectorAll('g.cluster').forEach(cluster => {
    if (!cluster.id.startsWith('cluster_g')) {
      return;
    }
    cluster.querySelectorAll(':scope > text').forEach(t => {
      const clone = t.cloneNode(true) as SVGTextElement;
      clone.setAttribute('class', 'jaxviz-cluster-label');
      clone.setAttribute('data-cluster', cluster.id);
      t.setAttribute('visibility', 'hidden');
      labels.appendChild(clone);
    });
  });
  top.appendChild(labels);
}

/** Page positions of the drawn items (nodes, boxes, open groups), by id. */
export function itemRects(svg: SVGSVGElement | null): Map<string, DOMRect> {
  const out = new Map<string, DOMRect>();
  svg?.querySelectorAll('g.node, g.cluster').forEach(g => {
    if (g.id) {
      out.set(g.id, g.getBoundingClientRect());
    }
  });
  return out;
}

/** The drawing as a standalone SVG document, in the DOT's own (light) colours whatever
 * JupyterLab's theme: the theme's colours are CSS rules on `.jp-jaxviz-svg`, a class the
 * copy does not carry. */
export function exportedSvg(svg: SVGSVGElement): string {
  const clone = svg.cloneNode(true) as SVGSVGElement;
  clone.querySelectorAll('.jaxviz-hit, .jaxviz-labels').forEach(e => e.remove());
  clone.querySelectorAll('g.cluster > text[visibility]').forEach(e => e.removeAttribute('visibility'));
  clone.querySelectorAll('.jaxviz-match').forEach(e => e.classList.remove('jaxviz-match'));
  clone.removeAttribute('class');
  clone.setAttribute('width', `${clone.dataset.ptWidth}pt`);
  clone.setAttribute('height', `${clone.dataset.ptHeight}pt`);
  delete clone.dataset.ptWidth;
  delete clone.dataset.ptHeight;
  clone.setAttribute('xmlns', SVG_NS);
  return '<?xml version="1.0" encoding="UTF-8" standalone="no"?>\n' + new XMLSerializer().serializeToString(clone);
}

/** Items that were drawn before glide from their old page position to their new one;
 * new items and the edges fade in: no jump, no blank frame. */
export class Glider {
  private timer = 0;

  constructor(private readonly node: HTMLElement) {}

  glide(svg: SVGSVGElement | null, before: Map<string, DOMRect>, scale: number): void {
    if (!svg || window.matchMedia?.('(prefers-reduced-motion: reduce)').matches) {
      return;
    }
    window.clearTimeout(this.timer);
    const moved = startAtOldPlaces(svg, before, scale);
    svg.classList.add('jaxviz-gliding');
    this.node.dataset.jaxvizMoving = 'true';
    void svg.getBoundingClientRect(); // the start positions are on screen before the move
    requestAnimationFrame(() => {
      for (const g of moved) {
        g.style.transition = `transform ${MOVE_MS}ms ease-out`;
        g.style.transform = '';
      }
      svg.classList.add('jaxviz-glide-end');
    });
    this.timer = window.setTimeout(() => {
      for (const g of moved) {
        g.style.transition = '';
      }
      svg.classList.remove('jaxviz-gliding', 'jaxviz-glide-end');
      svg.querySelectorAll('.jaxviz-enter').forEach(e => e.classList.remove('jaxviz-enter'));
      delete this.node.dataset.jaxvizMoving;
    }, MOVE_MS + 60);
  }

  dispose(): void {
    window.clearTimeout(this.timer);
  }
}

/** Move each item drawn before back to where it was (new ones fade in); those moved. */
function startAtOldPlaces(svg: SVGSVGElement, before: Map<string, DOMRect>, scale: number): SVGGElement[] {
  const moved: SVGGElement[] = [];
  svg.querySelectorAll<SVGGElement>('g.node, g.cluster').forEach(g => {
    const old = g.id ? before.get(g.id) : undefined;
    if (!old) {
      g.classList.add('jaxviz-enter');
      return;
    }
    const now = g.getBoundingClientRect();
    // In the drawing's units (points: the SVG's viewBox), zoomed.
    const dx = (old.left - now.left) / (scale * PT_TO_PX);
    const dy = (old.top - now.top) / (scale * PT_TO_PX);
    if (Math.abs(dx) + Math.abs(dy) < 0.5) {
      return;
    }
    g.style.transform = `translate(${dx}px, ${dy}px)`;
    moved.push(g);
  });
  return moved;
}
