/** The MIME renderer for `application/vnd.jaxviz+json` (notebook outputs). */

import { IRenderMime } from '@jupyterlab/rendermime-interfaces';

import { GraphView } from './graphview';
import { MIME_TYPE } from './model';

export class JaxvizRenderer extends GraphView implements IRenderMime.IRenderer {
  constructor(options: IRenderMime.IRendererOptions) {
    super();
    this.addClass('jp-jaxviz-output');
    this.mimeType = options.mimeType;
  }

  readonly mimeType: string;

  async renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    const payload = model.data[this.mimeType] as { name?: string; graph?: unknown; graph_omitted?: string };
    if (payload && payload.graph === null && payload.graph_omitted) {
      const svg = model.data['image/svg+xml'];
      this.showStatic(payload.name ?? 'jaxviz', payload.graph_omitted, typeof svg === 'string' ? svg : null);
      return;
    }
    await this.setPayload(payload);
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
