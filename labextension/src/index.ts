/** The jaxviz JupyterLab plugin: the sidebar panel and its command. (The MIME
 * renderer for graph outputs is the `mimeExtension` in `mime.ts`.) */

import { ILayoutRestorer, JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICommandPalette } from '@jupyterlab/apputils';
import { INotebookTracker } from '@jupyterlab/notebook';

import { JaxvizPanel } from './panel';

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
    const panel = new JaxvizPanel();
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
