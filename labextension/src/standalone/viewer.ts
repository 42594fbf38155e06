/**
 * The page side of the standalone viewer: `window.jaxviz` (defined once per page: a second
 * viewer script run on the page defers to the first unless it is a newer version; the
 * outputs' loader runs one only where none is) and its `upgrade`, which turns every graph output on the page that
 * is not interactive yet into a `GraphView`. Idempotent: a duplicated output is upgraded on
 * its own, an upgraded one is left alone, and an output whose graph cannot be drawn keeps
 * its static SVG.
 *
 * The output's HTML (see `jaxviz/render/embed.py`):
 *   <div class="jaxviz-out">
 *     <div class="jaxviz-static">…the kernel's SVG and listing…</div>
 *     <div class="jaxviz-scripts" hidden>
 *       <script type="application/json" class="jaxviz-data">…the program payload…</script>
 *       [<script type="application/octet-stream" class="jaxviz-viewer">…this bundle, gzipped…</script>]
 *       <script>…the loader: runs the viewer if the page has none, then window.jaxviz.upgrade()…</script>
 *     </div>
 *   </div>
 */

import { Widget } from '@lumino/widgets';

import baseCss from '../../style/base.css';
import pageCss from '../../style/page.css';
import visualCss from '../../style/visual.css';
import { GraphView } from '../graph/widget';
import type { WorkerLike } from '../graph/layout';
import { setWorkerSpawn } from '../graph/layoutsvg';

export interface JaxvizPage {
  version: string;
  /** Make every graph output under `root` interactive; returns how many were started. */
  upgrade(root?: ParentNode): number;
  /** The views on this page (those whose output is gone are dropped at the next upgrade). */
  views: GraphView[];
}

declare global {
  interface Window {
    jaxviz?: JaxvizPage;
  }
}

const STYLE_ID = 'jaxviz-viewer-style';

/** JupyterLab's theme variables the graph's CSS reads, for pages that have none (VS Code,
 * Colab, a plain page): the fonts here, the colours (light, and VS Code's dark themes on
 * its editor background) generated from visual.json into `page.css`. `:where` gives them
 * no weight: a page's own theme (JupyterLab, Notebook 7, nbconvert's lab template) wins. */
const DEFAULTS =
  `
:where(:root) {
  --jp-ui-font-family: system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif;
  --jp-code-font-family: SFMono-Regular, Menlo, Consolas, 'Liberation Mono', monospace;
  --jp-ui-font-size0: 11px; --jp-ui-font-size1: 13px; --jp-ui-font-size2: 15px;
  --jp-code-font-size: 12px;
  --jp-border-width: 1px;
}
.jaxviz-live { background: var(--jp-layout-color0); }
` + pageCss;

function addStyle(): void {
  if (document.getElementById(STYLE_ID)) {
    return;
  }
  const style = document.createElement('style');
  style.id = STYLE_ID;
  style.textContent = DEFAULTS + visualCss + baseCss;
  document.head.appendChild(style);
}

/** A worker running this same script, or none where the page cannot make one (a failure
 * here or later sends layouts to the main thread: see `WorkerLayout`). */
function spawnFromSource(source: string | null): () => WorkerLike {
  return () => {
    if (!source) {
      throw new Error('the viewer script was not inline');
    }
    const url = URL.createObjectURL(new Blob([source], { type: 'text/javascript' }));
    return new Worker(url) as unknown as WorkerLike;
  };
}

function upgradeOne(out: HTMLElement, views: GraphView[]): boolean {
  const staticPart = out.querySelector<HTMLElement>(':scope > .jaxviz-static');
  const data = out.querySelector(':scope > .jaxviz-scripts > script.jaxviz-data');
  if (!data?.nextElementSibling) {
    // Still being parsed (the viewer boots asynchronously, and may look while a long
    // payload's text is half read): the output's own loader, after it, upgrades it.
    return false;
  }
  let payload: { graph?: unknown } | null = null;
  try {
    payload = JSON.parse(data?.textContent ?? 'null');
  } catch {
    payload = null;
  }
  if (!payload || !payload.graph) {
    out.dataset.jaxvizUpgraded = 'static'; // too big to ship, or no data: the SVG stays
    return false;
  }
  out.dataset.jaxvizUpgraded = 'pending';
  const host = document.createElement('div');
  host.className = 'jaxviz-live';
  out.insertBefore(host, out.firstChild);
  const view = new GraphView();
  view.addClass('jp-jaxviz-output');
  Widget.attach(view, host);
  views.push(view);
  if (staticPart) {
    staticPart.style.display = 'none';
  }
  void view.setPayload(payload).then(() => {
    if (view.node.querySelector('svg.jp-jaxviz-svg, canvas.jp-jaxviz-scene')) {
      out.dataset.jaxvizUpgraded = 'done';
      return;
    }
    // Nothing could be laid out here: the kernel's drawing is better than an empty canvas.
    out.dataset.jaxvizUpgraded = 'failed';
    if (staticPart) {
      staticPart.style.display = '';
    }
    Widget.detach(view);
    host.remove();
  });
  return true;
}

function newer(a: string, b: string): boolean {
  const pa = a.split('.').map(Number);
  const pb = b.split('.').map(Number);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    if ((pa[i] || 0) !== (pb[i] || 0)) {
      return (pa[i] || 0) > (pb[i] || 0);
    }
  }
  return false;
}

export function install(version: string, source: string | null): void {
  const existing = window.jaxviz;
  if (existing && !newer(version, existing.version)) {
    existing.upgrade();
    return;
  }
  setWorkerSpawn(spawnFromSource(source));
  const views: GraphView[] = existing?.views ?? [];
  const page: JaxvizPage = {
    version,
    views,
    upgrade(root: ParentNode = document): number {
      addStyle();
      // Views whose output left the page (a cleared or re-run cell) are let go.
      for (const view of views.filter(v => !v.node.isConnected)) {
        views.splice(views.indexOf(view), 1);
        try {
          view.dispose(); // its tooltip leaves the page's body
        } catch {
          // Lumino cannot detach a node that already left the page: nothing holds it now
        }
      }
      let started = 0;
      root.querySelectorAll<HTMLElement>('.jaxviz-out').forEach(out => {
        if (!out.dataset.jaxvizUpgraded && upgradeOne(out, views)) {
          started++;
        }
      });
      return started;
    }
  };
  window.jaxviz = page;
  page.upgrade();
}
