/** The jaxviz JupyterLab plugin: the sidebar panel and its command. (The MIME
 * renderer for graph outputs is the `mimeExtension` in `mime.ts`.) */

import { ILayoutRestorer, JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICommandPalette, MainAreaWidget } from '@jupyterlab/apputils';
import { INotebookTracker } from '@jupyterlab/notebook';

import { Widget } from '@lumino/widgets';

import { GraphView } from './graph/widget';
import { DiffMessage, ShippedPayload } from './shared/payload';
import { JaxvizPanel, jaxvizIcon } from './panel/widget';

/** A function's graph in a main-area tab (one per function, reused): room to read it. */
function graphTabs(app: JupyterFrontEnd): (name: string, payload: ShippedPayload) => void {
  const open = new Map<string, MainAreaWidget<GraphView>>();
  return (name, payload) => {
    let tab = open.get(name);
    if (!tab || tab.isDisposed) {
      const content = new GraphView({ fill: true });
      tab = new MainAreaWidget({ content });
      tab.id = `jaxviz-graph-${open.size}-${Date.now()}`;
      tab.addClass('jp-jaxviz-graph-tab');
      tab.title.label = `jaxviz: ${name}`;
      tab.title.caption = `The graph of ${name} (jaxviz)`;
      tab.title.icon = jaxvizIcon;
      tab.title.closable = true;
      tab.node.dataset.jaxvizFunction = name;
      open.set(name, tab);
      const made = tab;
      made.disposed.connect(() => {
        if (open.get(name) === made) {
          open.delete(name);
        }
      });
      app.shell.add(tab, 'main', { mode: 'tab-after' });
    }
    app.shell.activateById(tab.id);
    // Laid out once the tab is on screen, so that the first view uses its size.
    const content = tab.content;
    requestAnimationFrame(() => void content.setPayload(payload));
  };
}

/** What a recompile changed in the program, in a main-area tab (one per function,
 * reused): the kernel's summary and its drawing, with the diff's colours. */
function diffTabs(app: JupyterFrontEnd): (diff: DiffMessage) => void {
  const open = new Map<string, MainAreaWidget<Widget>>();
  return diff => {
    let tab = open.get(diff.function);
    if (!tab || tab.isDisposed) {
      tab = new MainAreaWidget({ content: new Widget() });
      tab.id = `jaxviz-diff-${open.size}-${Date.now()}`;
      tab.addClass('jp-jaxviz-diff-tab');
      tab.title.label = `jaxviz: ${diff.function} diff`;
      tab.title.icon = jaxvizIcon;
      tab.title.closable = true;
      tab.node.dataset.jaxvizFunction = diff.function;
      open.set(diff.function, tab);
      app.shell.add(tab, 'main', { mode: 'tab-after' });
    }
    const body = tab.content.node;
    body.classList.add('jp-jaxviz-diff-body');
    body.replaceChildren();
    const head = document.createElement('div');
    head.className = 'jp-jaxviz-diff-summary';
    head.textContent = diff.error ?? diff.summary ?? '';
    body.append(head);
    if (diff.svg) {
      const drawing = document.createElement('div');
      drawing.className = 'jp-jaxviz-diff-drawing';
      drawing.innerHTML = diff.svg; // Graphviz's SVG, made by the kernel for this tab
      body.append(drawing);
    }
    app.shell.activateById(tab.id);
  };
}

export const COMMAND_SHOW_PANEL = 'jaxviz:show-panel';

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'jaxviz:panel',
  description: 'The jaxviz sidebar panel: functions, recompiles, stale captures and devices of the current kernel.',
  autoStart: true,
  requires: [INotebookTracker],
  optional: [ICommandPalette, ILayoutRestorer],
  activate: (
    app: JupyterFrontEnd,
    tracker: INotebookTracker,
    palette: ICommandPalette | null,
    restorer: ILayoutRestorer | null
  ) => {
    const panel = new JaxvizPanel(graphTabs(app), diffTabs(app));
    app.shell.add(panel, 'right', { rank: 900 });
    if (restorer) {
      restorer.add(panel, 'jaxviz-panel');
    }
    panel.setNotebook(tracker.currentWidget);
    tracker.currentChanged.connect((_, nb) => panel.setNotebook(nb));

    app.commands.addCommand(COMMAND_SHOW_PANEL, {
      label: 'jaxviz: Show panel',
      caption: 'Show the jaxviz panel for the current notebook',
      execute: () => {
        if (!panel.isAttached) {
          app.shell.add(panel, 'right', { rank: 900 });
        }
        app.shell.activateById(panel.id);
      }
    });
    if (palette) {
      palette.addItem({ command: COMMAND_SHOW_PANEL, category: 'jaxviz' });
    }
  }
};

export default plugin;
