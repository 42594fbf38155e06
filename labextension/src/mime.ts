/** The MIME renderer for `application/vnd.jaxviz+json` (notebook outputs). */

import { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { ReadonlyPartialJSONObject } from '@lumino/coreutils';
import type { Message } from '@lumino/messaging';

import { GraphView, MAX_LAYOUT_ITEMS } from './graph/widget';
import { MIME_TYPE, samePayload } from './shared/payload';
import { expansionKey, initialExpansion, metadataWithExpansion } from './graph/persist';
import { holdHeight, promptName, releaseHeight } from './graph/outputheight';

export class JaxvizRenderer extends GraphView implements IRenderMime.IRenderer {
  constructor(options: IRenderMime.IRendererOptions) {
    super();
    this.addClass('jp-jaxviz-output');
    this.mimeType = options.mimeType;
  }

  readonly mimeType: string;
  /** The output shown, where the expansion state is kept. */
  private output: IRenderMime.IMimeModel | null = null;
  private promptObserver: MutationObserver | null = null;
  private firstLayoutDone = false;

  /** The cell this output is in (null outside a notebook). */
  private get cellNode(): HTMLElement | null {
    return this.node.closest('.jp-Cell');
  }

  /** A cell's program is named after its prompt when traced ("In[3]"); the cell may
   * have run again since (as [9]): the title follows the prompt shown now. */
  protected displayName(name: string): string {
    const prompt = this.cellNode?.querySelector('.jp-InputPrompt')?.textContent ?? '';
    return promptName(name, prompt);
  }

  protected onAfterAttach(msg: Message): void {
    super.onAfterAttach(msg);
    const prompt = this.cellNode?.querySelector('.jp-InputPrompt');
    if (prompt && !this.promptObserver) {
      this.promptObserver = new MutationObserver(() => this.refreshTitle());
      this.promptObserver.observe(prompt, { childList: true, characterData: true, subtree: true });
    }
    this.refreshTitle();
  }

  protected onBeforeDetach(msg: Message): void {
    // Cleared for a re-run: the cell keeps this output's height until the new graph
    // is laid out, so the page below does not jump (761 → 0 → 241 → 761 px).
    const cell = this.cellNode;
    if (cell && this.firstLayoutDone) {
      holdHeight(cell, this.node.getBoundingClientRect().height);
    }
    this.promptObserver?.disconnect();
    this.promptObserver = null;
    super.onBeforeDetach(msg);
  }

  protected laidOut(): void {
    if (!this.firstLayoutDone) {
      this.firstLayoutDone = true;
      const cell = this.cellNode;
      if (cell) {
        releaseHeight(cell);
      }
    }
  }

  async renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    if (model === this.output) {
      // The same output again: JupyterLab renders an output again when its model
      // changes, as after `setData` below. Its data does not change in place (new
      // data, display updates included, come as a new model): only the stored state
      // may have, and the graph and its zoom stay as they are.
      return this.followStoredState(model);
    }
    const shown = this.output;
    this.output = model;
    if (shown && samePayload(shown.data[this.mimeType], model.data[this.mimeType])) {
      // The kernel updated its display with dot's drawing, the static form a saved
      // notebook keeps, once laid out: the view on screen stays, and the user's state,
      // if they opened or closed a group meanwhile, goes into the new output's metadata.
      await this.ready;
      this.expansionChanged(new Set(this.expandedGroups));
      return;
    }
    const payload = model.data[this.mimeType] as { name?: string; graph?: unknown; graph_omitted?: string };
    if (payload && payload.graph === null && payload.graph_omitted) {
      const svg = model.data['image/svg+xml'];
      this.showStatic(payload.name ?? 'jaxviz', payload.graph_omitted, typeof svg === 'string' ? svg : null);
      return;
    }
    // How many payloads this output has laid out (an attribute: tests and the curious read it)
    this.node.dataset.jaxvizPayloads = String(Number(this.node.dataset.jaxvizPayloads ?? 0) + 1);
    await this.setPayload(payload, model.metadata);
  }

  /** Keep the user's expansion state in the output's metadata, saved with the notebook. */
  protected expansionChanged(expanded: Set<number>): void {
    const model = this.output;
    const shown = this.shown;
    if (!model || !shown) {
      return;
    }
    const metadata = metadataWithExpansion(model.metadata, shown.index, shown.kernelExpanded, expanded);
    if (!metadata) {
      return;
    }
    try {
      model.setData({ metadata: metadata as ReadonlyPartialJSONObject });
    } catch (err) {
      // A read-only model: the graph works, its state is not kept.
      console.debug('jaxviz: the expansion state cannot be stored in this output', err);
    }
  }

  /** Show the state stored in the model when it is not the one on screen (an echo of
   * our own `setData` is: nothing to do). */
  private async followStoredState(model: IRenderMime.IMimeModel): Promise<void> {
    await this.ready;
    const shown = this.shown;
    if (!shown || model !== this.output || this.isDisposed) {
      return;
    }
    const { expanded } = initialExpansion(shown.index, shown.kernelExpanded, model.metadata, MAX_LAYOUT_ITEMS);
    if (expansionKey(expanded) !== expansionKey(this.expandedGroups)) {
      await this.setExpanded(expanded, { initial: true });
    }
  }
}

export const rendererFactory: IRenderMime.IRendererFactory = {
  // The payload is JSON rendered through Graphviz and textContent only: safe in
  // untrusted notebooks.
  safe: true,
  mimeTypes: [MIME_TYPE],
  defaultRank: 0,
  createRenderer: options => new JaxvizRenderer(options)
};

const extension: IRenderMime.IExtension = {
  id: 'jaxviz:graph-renderer',
  description: 'Interactive graphs of traced JAX programs.',
  rendererFactory,
  rank: 0,
  dataType: 'json'
};

export default extension;
