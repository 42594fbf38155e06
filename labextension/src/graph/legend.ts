/** The graph's legend: a swatch and the words of visual.json for each kind drawn. */

import { heatColor } from '../shared/format';
import { GraphJSON } from '../shared/payload';
import { GROUP_FILL, LEGEND } from '../shared/visual';
import { el } from './dom';
import { legendKinds, legendOf } from './dot';

/** Heat levels shown in the legend's swatch of cost-shaded groups. */
const HEAT_SAMPLES = [0.1, 0.5, 0.9];

/** Fill `container` with the legend of `graph` (nothing without one). */
export function renderLegend(container: HTMLElement, graph: GraphJSON | undefined): void {
  container.replaceChildren();
  if (!graph) {
    return;
  }
  const legend = legendOf(graph);
  const kinds = legendKinds(graph);
  const hasGroups = graph.groups.length > 1;
  const repeat = kinds.includes('repeat') ? ['repeat'] : [];
  for (const kind of [...kinds.filter(k => k !== 'repeat'), ...(hasGroups ? ['group'] : []), ...repeat]) {
    const spec = legend[kind];
    const item = el('span', `jp-jaxviz-legend-item jp-jaxviz-legend-${kind}`);
    item.title = spec.label;
    const heated = kind === 'group' && !!graph.groups[graph.root ?? 0]?.flops;
    const fills = heated ? HEAT_SAMPLES.map(heatColor) : [kind === 'group' ? GROUP_FILL.call : spec.color];
    const swatches = fills.map(fill => swatch(kind, fill, spec.color));
    // The legend's words are visual.json's (a kind the file does not know: its name).
    const text = heated ? 'group (shaded by its share of FLOPs)' : (LEGEND[kind]?.text ?? kind);
    item.append(...swatches, el('span', 'jp-jaxviz-legend-label', text));
    container.appendChild(item);
  }
}

function swatch(kind: string, fill: string, color: string): HTMLSpanElement {
  const s = el('span', 'jp-jaxviz-swatch');
  if (kind === 'weak') {
    s.classList.add('jp-jaxviz-swatch-edge');
    s.style.borderTopColor = color;
  } else if (kind === 'group' || kind === 'repeat') {
    // Coloured as the boxes are, by the same theme rule (see base.css).
    s.classList.add('jp-jaxviz-swatch-box');
    s.style.setProperty('--jaxviz-fill', fill);
  } else {
    s.style.background = fill;
  }
  if (kind === 'repeat') {
    s.classList.add('jp-jaxviz-swatch-repeat'); // a double outline, as the boxes
  }
  return s;
}
