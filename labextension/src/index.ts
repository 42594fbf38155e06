/** The jaxviz JupyterLab plugin: the sidebar panel and its command. (The MIME
 * renderer for graph outputs is the `mimeExtension` in `mime.ts`.) */

import { ILayoutRestorer, JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICommandPalette, MainAreaWidget } from '@jupyterlab/apputils';
import { INotebookTracker } from '@jupyterlab/notebook';

import { GraphView } from './graphview';
import { ProgramPayload } from './model';
import { JaxvizPanel, jaxvizIcon } from './panel';

/** A function's graph in a main-area tab (one per function, reused): room to read it. */
function graphTabs(app: JupyterFrontEnd): (name: string, payload: ProgramPayload) => void {
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
    const panel = new JaxvizPanel(graphTabs(app));
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
