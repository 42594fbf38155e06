/** The graph's tooltip: what an item, an edge or an open group is, on the page's body
 * (fixed to the viewport: no output or canvas edge cuts it off). */

import { TooltipLine, avalDetail, groupTooltip, nodeTooltip, repeatText } from '../shared/format';
import { el } from './dom';
import { placeTooltip } from './geometry';
import { GraphModel } from './model';
import { GraphIndex, edgeIsWeak, parseItem } from './visible';

export interface TooltipContent {
  title: string;
  lines: TooltipLine[];
}

export class Tooltip {
  readonly element = el('div', 'jp-jaxviz-tooltip');

  constructor() {
    this.element.style.display = 'none';
  }

  /** Show `content` by the pointer, or hide the tooltip when there is none. */
  showOrHide(content: TooltipContent | null, ev: MouseEvent): void {
    if (content) {
      this.show(content, ev);
    } else {
      this.hide();
    }
  }

  show(content: TooltipContent, ev: MouseEvent): void {
    const t = this.element;
    t.replaceChildren(el('div', 'jp-jaxviz-tooltip-title', content.title));
    for (const line of content.lines) {
      const row = el('div', 'jp-jaxviz-tooltip-row');
      if (line.key) {
        row.appendChild(el('span', 'jp-jaxviz-tooltip-key', `${line.key}: `));
      }
      row.appendChild(el('span', line.mono ? 'jp-jaxviz-mono' : '', line.text));
      t.appendChild(row);
    }
    if (!t.isConnected) {
      document.body.appendChild(t);
    }
    t.style.display = 'block';
    const at = placeTooltip(
      { x: ev.clientX, y: ev.clientY },
      { w: t.offsetWidth, h: t.offsetHeight },
      { w: document.documentElement.clientWidth || window.innerWidth, h: window.innerHeight }
    );
    t.style.left = `${at.x}px`;
    t.style.top = `${at.y}px`;
  }

  hide(): void {
    this.element.style.display = 'none';
  }
}

/** An open group: its kind, and that a click closes it. */
export function clusterTooltip(index: GraphIndex, gid: number): TooltipContent {
  const groups = index.graph.groups;
  const g = groups[gid];
  const kind = g.kind === 'repeat' ? `repeat: ${repeatText(groups, g.id)}` : g.kind;
  return { title: g.repeat || g.name, lines: [{ key: 'kind', text: kind }, { text: 'click to collapse' }] };
}

/** A node (`n…`) or a collapsed group (`g…`). */
export function itemTooltip(model: GraphModel, id: string): TooltipContent | null {
  const graph = model.index!.graph;
  const { kind, id: num } = parseItem(id);
  if (kind === 'n' && graph.nodes[num]) {
    const n = graph.nodes[num];
    return nodeTooltip(n, n.kind === 'input' || n.kind === 'const' ? model.input(n.label) : undefined);
  }
  if (kind === 'g' && graph.groups[num]) {
    const { ins, outs } = model.edgeLabels(id);
    return groupTooltip(graph.groups[num], ins, outs, graph.groups);
  }
  return null;
}

/** The values an edge carries. */
export function edgeTooltip(model: GraphModel, id: string): TooltipContent | null {
  const e = model.edge(id);
  if (!e) {
    return null;
  }
  const lines: TooltipLine[] = e.avals.slice(0, 8).map(a => ({ text: avalDetail(a), mono: true }));
  if (e.avals.length > 8) {
    lines.push({ text: `… and ${e.avals.length - 8} more` });
  }
  if (edgeIsWeak(e)) {
    lines.push({ text: 'weakly typed: a Python scalar, promoted to the other operand’s dtype' });
  }
  const title = e.avals.length === 1 ? 'value' : `${e.avals.length} values`;
  return { title, lines };
}
