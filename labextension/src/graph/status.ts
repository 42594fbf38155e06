/** The graph's status line: what is shown, how it was arranged, what to do next. */

import { Arranged } from './expand';
import { View, statusText } from './visible';

/** How a drawing came to be, for the status line. */
const ARRANGED: Record<Arranged, string> = {
  layout: 'layout',
  splice: 'opened in place',
  close: 'closed in place',
  restore: 'as before'
};
const HINT = 'click ▸ boxes to expand, ▾ labels to collapse · drag to pan · ctrl+wheel to zoom · Fit shows all';

export class StatusLine {
  constructor(readonly element: HTMLDivElement) {}

  set(text: string, warn = false): void {
    this.element.textContent = text;
    this.element.classList.toggle('jp-jaxviz-warn', warn);
  }
}

export function tooManyText(count: number, limit: number): string {
  return (
    `That would show ${count} items: too many to lay out here (limit ${limit}). ` +
    'Expand a smaller group, or export the DOT.'
  );
}

export function layingOutText(count: number, share?: number): string {
  return `laying out ${count} items…` + (share === undefined ? '' : ` ${Math.round(share * 100)} %`);
}

/** A Graphviz drawing on screen. */
export function drawnText(view: View, arranged: Arranged, ms: number): string {
  return `${statusText(view)} · ${ARRANGED[arranged]} ${ms.toFixed(0)} ms · ${HINT}`;
}

/** A layered layout on the canvas: laid out on the click, ahead of it, or shown before. */
export function sceneText(view: View, ms: number, arranged: 'layout' | 'ahead' | 'restore' = 'layout'): string {
  const how = { layout: 'layered layout', ahead: 'laid out ahead, shown in', restore: 'as before, shown in' }[arranged];
  return `${statusText(view)} · ${how} ${ms.toFixed(0)} ms (canvas) · ${HINT}`;
}
