/**
 * The graph's search box: typing marks the matches (by primitive or variable name, the
 * model's search) in the drawing or on the canvas, with their count and how many
 * collapsed groups hide; Enter opens those groups, Escape clears the search.
 */

import { el } from './dom';
import { GraphModel } from './model';
import { SceneCanvas } from './scenecanvas';
import { Anchor } from './viewport';
import { ItemId } from './visible';

/** How long typing pauses before the search runs (ms). */
const TYPING_MS = 120;
/** At most this many matches open their groups on Enter. */
const MAX_REVEALED = 200;

/** What the search works on: the widget's element, model and drawing. */
export interface SearchHost {
  readonly node: HTMLElement;
  readonly model: GraphModel;
  drawing(): { svg: SVGSVGElement | null; scene: SceneCanvas | null };
  /** Where an item is on the page. */
  pageRect(id: string): DOMRect | null;
  /** Show these open groups, `anchor` kept in place. */
  reveal(expanded: Set<number>, anchor: Anchor | undefined): Promise<void>;
}

export class SearchBox {
  readonly input = el('input', 'jp-jaxviz-search');
  readonly matchInfo = el('span', 'jp-jaxviz-matches');
  private timer = 0;

  constructor(private readonly host: SearchHost) {
    const input = this.input;
    input.type = 'search';
    input.placeholder = 'search primitive or variable';
    input.setAttribute('aria-label', 'search primitive or variable');
    input.addEventListener('input', () => {
      window.clearTimeout(this.timer);
      this.timer = window.setTimeout(() => this.run(), TYPING_MS);
    });
    input.addEventListener('keydown', ev => {
      if (ev.key === 'Enter') {
        ev.preventDefault();
        this.run();
        void this.revealMatches();
      } else if (ev.key === 'Escape') {
        input.value = '';
        this.run();
      }
      ev.stopPropagation(); // keep notebook shortcuts out of the search box
    });
  }

  private run(): void {
    this.host.model.search(this.input.value);
  }

  /** Mark the model's matches in what is drawn now. */
  mark(): void {
    const { svg, scene } = this.host.drawing();
    const { model, node } = this.host;
    const index = model.index;
    if ((!svg && !scene) || !index) {
      return;
    }
    svg?.querySelectorAll('.jaxviz-match').forEach(e => e.classList.remove('jaxviz-match'));
    const q = model.query.trim();
    node.classList.toggle('jp-jaxviz-searching', !!q);
    if (!q) {
      scene?.setMatches(new Set());
      this.matchInfo.textContent = '';
      return;
    }
    let hidden = 0;
    const items = new Set<ItemId>();
    for (const nid of model.matches) {
      const item = index.visibleItemOf(nid, model.expanded);
      if (item[0] === 'g') {
        hidden++;
      }
      items.add(item);
    }
    for (const item of items) {
      svg?.getElementById(item)?.classList.add('jaxviz-match');
    }
    scene?.setMatches(new Set([...items].map(item => scene.indexOf(item)).filter(k => k >= 0)));
    this.matchInfo.textContent = matchText(model.matches.length, hidden);
    this.matchInfo.title = this.matchInfo.textContent ?? '';
  }

  /** Expand the groups that hide search matches. */
  private async revealMatches(): Promise<void> {
    const model = this.host.model;
    const index = model.index;
    const matches = model.matches;
    if (!index || !matches.length) {
      return;
    }
    let next = new Set(model.expanded);
    let anchor: Anchor | undefined;
    for (const nid of matches.slice(0, MAX_REVEALED)) {
      const shown = index.visibleItemOf(nid, model.expanded);
      const r = shown[0] !== 'g' ? undefined : this.host.pageRect(shown);
      // The topmost box that opens stays where it is, as when clicked.
      if (r && (!anchor || r.top < anchor.y || (r.top === anchor.y && r.left < anchor.x))) {
        anchor = { item: `cluster_${shown}`, x: r.left, y: r.top };
      }
      next = index.expand(next, index.graph.nodes[nid].group);
    }
    // The zoom stays, and so does the side each part is drawn on.
    await this.host.reveal(next, anchor);
  }
}

/** The search's count, and how many matches collapsed groups hide. */
function matchText(n: number, hidden: number): string {
  if (n === 0) {
    return 'no match';
  }
  return `${n} match${n === 1 ? '' : 'es'}` + (hidden ? ` (${hidden} in collapsed groups: Enter to show)` : '');
}
