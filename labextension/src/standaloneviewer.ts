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

import baseCss from '../style/base.css';
import { GraphView } from './graphview';
import type { WorkerLike } from './layout';
import { setWorkerSpawn } from './layoutsvg';

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

/** VS Code's dark themes (its webview marks the body `vscode-dark`, or `vscode-high-contrast`
 * for the dark high-contrast one): JupyterLab's dark colours on VS Code's editor
 * background, and the graph's dark tints, as `base.css` sets them for JupyterLab's dark
 * theme. */
const VSCODE_DARK_BODY = 'body:is(.vscode-dark, .vscode-high-contrast:not(.vscode-high-contrast-light))';
const VSCODE_DARK = `
:where(${VSCODE_DARK_BODY}) {
  --jp-layout-color0: var(--vscode-editor-background, #1e1e1e);
  --jp-layout-color1: var(--vscode-editor-background, #1e1e1e);
  --jp-layout-color2: #424242; --jp-layout-color3: #616161;
  --jp-ui-font-color1: rgba(255, 255, 255, 1); --jp-ui-font-color2: rgba(255, 255, 255, 0.7);
  --jp-ui-font-color3: rgba(255, 255, 255, 0.5);
  --jp-border-color1: #616161; --jp-border-color2: #424242; --jp-border-color3: #212121;
  --jp-brand-color1: #42a5f5;
}
${VSCODE_DARK_BODY} .jp-jaxviz-graph {
  --jp-jaxviz-cluster-call: color-mix(in srgb, #4c9be8 16%, var(--jp-layout-color0));
  --jp-jaxviz-cluster-transform: color-mix(in srgb, #9b59b6 16%, var(--jp-layout-color0));
  --jp-jaxviz-cluster-eqn: color-mix(in srgb, #f2a541 13%, var(--jp-layout-color0));
  --jp-jaxviz-cluster-jaxpr: color-mix(in srgb, #f2a541 8%, var(--jp-layout-color0));
  --jp-jaxviz-cluster-repeat: color-mix(in srgb, #4c9be8 26%, var(--jp-layout-color0));
  --jp-jaxviz-cluster-other: var(--jp-layout-color1);
  --jp-jaxviz-cluster-phase: color-mix(in srgb, #7fb35a 12%, var(--jp-layout-color0));
  --jp-jaxviz-phase-line: #9cc878;
  --jp-jaxviz-box-mix: 30%;
  --jp-jaxviz-box-text: var(--jp-ui-font-color1);
}
`;

/** JupyterLab's theme variables the graph's CSS reads, for pages that have none (VS Code,
 * Colab, a plain page). `:where` gives them no weight: a page's own theme (JupyterLab,
 * Notebook 7, nbconvert's lab template) wins. */
const DEFAULTS =
  `
:where(:root) {
  --jp-ui-font-family: system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif;
  --jp-code-font-family: SFMono-Regular, Menlo, Consolas, 'Liberation Mono', monospace;
  --jp-ui-font-size0: 11px; --jp-ui-font-size1: 13px; --jp-ui-font-size2: 15px;
  --jp-code-font-size: 12px;
  --jp-ui-font-color1: rgba(0, 0, 0, 0.87); --jp-ui-font-color2: rgba(0, 0, 0, 0.54);
  --jp-ui-font-color3: rgba(0, 0, 0, 0.38);
  --jp-layout-color0: #ffffff; --jp-layout-color1: #ffffff; --jp-layout-color2: #eeeeee;
  --jp-layout-color3: #bdbdbd;
  --jp-border-width: 1px; --jp-border-color1: #bdbdbd; --jp-border-color2: #e0e0e0;
  --jp-border-color3: #eeeeee;
  --jp-brand-color1: #1976d2; --jp-warn-color0: #e65100; --jp-warn-color1: #f57c00;
  --jp-success-color0: #388e3c; --jp-success-color2: #81c784;
  --jp-elevation-z4: 0 2px 4px -1px rgba(0, 0, 0, 0.2), 0 4px 5px 0 rgba(0, 0, 0, 0.14);
}
.jaxviz-live { background: var(--jp-layout-color0); }
` + VSCODE_DARK;

function addStyle(): void {
  if (document.getElementById(STYLE_ID)) {
    return;
  }
  const style = document.createElement('style');
  style.id = STYLE_ID;
  style.textContent = DEFAULTS + baseCss;
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
