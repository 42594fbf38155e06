/** Graphviz (compiled to WebAssembly, bundled: no network, no `dot` needed) → SVG. */

import type { Viz } from '@viz-js/viz';

import { LayeredInput, LayeredOutput } from './layered';
import { SceneIndex } from './sceneindex';
import { LaidScene, layOutScene } from './layoutserver';

let vizPromise: Promise<Viz> | null = null;

/** The one Graphviz instance, loaded on first use (the module is large). */
export function graphviz(): Promise<Viz> {
  if (!vizPromise) {
    vizPromise = import(/* webpackChunkName: "viz" */ '@viz-js/viz').then(m => m.instance());
    vizPromise.catch(() => {
      vizPromise = null;
    });
  }
  return vizPromise;
}

/**
 * Laid-out SVG per DOT source, most recently used last. A view's DOT is a function of its
 * expansion state, so opening a group and closing it again (or going back to an earlier
 * state) shows the earlier layout at once, in the same place, instead of laying out again.
 */
export class LayoutCache {
  private readonly entries = new Map<string, string>();
  hits = 0;
  misses = 0;

  constructor(
    private readonly render: (dot: string) => string | Promise<string>,
    readonly capacity = 24
  ) {}

  async svg(dot: string): Promise<string> {
    const cached = this.entries.get(dot);
    if (cached !== undefined) {
      this.hits++;
      this.entries.delete(dot); // re-insert: most recently used last
      this.entries.set(dot, cached);
      return cached;
    }
    this.misses++;
    const svg = await this.render(dot);
    this.entries.set(dot, svg);
    while (this.entries.size > this.capacity) {
      this.entries.delete(this.entries.keys().next().value as string);
    }
    return svg;
  }

  get size(): number {
    return this.entries.size;
  }
}

/** What the page and the layout worker say to each other. */
export interface LayoutRequest {
  id: number;
  /** Graphviz DOT to lay out, or a view for the layered layout (`layered.ts`). */
  dot?: string;
  layered?: LayeredInput;
}
export interface LayoutReply {
  id: number;
  svg?: string;
  layered?: LayeredOutput;
  /** With a layered layout: what the canvas looks things up in (`sceneindex.ts`). */
  index?: SceneIndex;
  /** A layered layout under way: the share done (0..1); the answer comes later. */
  progress?: number;
  error?: string;
  /** The worker cannot lay out at all (Graphviz did not load): use the main thread. */
  fatal?: boolean;
}

/** The part of a `Worker` that `WorkerLayout` uses (a fake one in the unit tests). */
export interface WorkerLike {
  postMessage(message: LayoutRequest): void;
  onmessage: ((ev: { data: LayoutReply }) => void) | null;
  onerror: ((ev: { message?: string; preventDefault?: () => void }) => void) | null;
  terminate(): void;
}

/** Where the last layout ran: for the status line, the tests and curious users. */
export type LayoutMode = 'worker' | 'main';

class WorkerUnusable extends Error {}

/**
 * Lays out DOT in a Web Worker, so that a big view does not freeze the page. The worker is
 * made on first use. If it cannot be made, or fails to load (script or Graphviz), the
 * requests it holds and all later ones are laid out on the main thread instead, as before;
 * that is decided once and remembered. An error Graphviz reports about a DOT source is not a
 * worker failure: it rejects that request only, with Graphviz's message.
 */
export class WorkerLayout {
  private worker: WorkerLike | null = null;
  private unusable = false;
  private nextId = 1;
  private readonly pending = new Map<
    number,
    { resolve: (reply: LayoutReply) => void; reject: (err: Error) => void; progress?: (share: number) => void }
  >();
  /** Where the most recent layout ran (undefined before the first). */
  lastMode: LayoutMode | undefined;
  workerLayouts = 0;
  mainLayouts = 0;

  constructor(
    private readonly spawn: () => WorkerLike,
    private readonly mainThread: (dot: string) => string | Promise<string>
  ) {}

  /** Whether layouts go to the main thread for good. */
  get fellBack(): boolean {
    return this.unusable;
  }

  /** Requests sent to the worker and not answered yet. */
  get inFlight(): number {
    return this.pending.size;
  }

  async render(dot: string): Promise<string> {
    try {
      const reply = await this.ask({ id: 0, dot });
      if (typeof reply.svg !== 'string') {
        throw new Error(reply.error ?? 'the layout worker returned nothing');
      }
      this.workerLayouts++;
      this.lastMode = 'worker';
      return reply.svg;
    } catch (err) {
      if (err instanceof WorkerUnusable) {
        return this.onMain(dot);
      }
      throw err;
    }
  }

  /** The layered layout of a view (`layered.ts`) and its index, in the worker (on this
   * thread where no worker runs); `progress` hears the share done as it goes. */
  async layered(input: LayeredInput, progress?: (share: number) => void): Promise<LaidScene> {
    try {
      const reply = await this.ask({ id: 0, layered: input }, progress);
      if (!reply.layered || !reply.index) {
        throw new Error(reply.error ?? 'the layout worker returned nothing');
      }
      return { layout: reply.layered, index: reply.index };
    } catch (err) {
      if (err instanceof WorkerUnusable) {
        return layOutScene(input, (done, total) => progress?.(done / total));
      }
      throw err;
    }
  }

  /** Send a request to the worker; its answer (WorkerUnusable: there is no worker). */
  private ask(request: LayoutRequest, progress?: (share: number) => void): Promise<LayoutReply> {
    const worker = this.ensureWorker();
    if (!worker) {
      return Promise.reject(new WorkerUnusable('no worker'));
    }
    return new Promise<LayoutReply>((resolve, reject) => {
      const id = this.nextId++;
      this.pending.set(id, { resolve, reject, progress });
      try {
        worker.postMessage({ ...request, id });
      } catch (err) {
        this.giveUp(`postMessage failed: ${(err as Error).message ?? err}`);
      }
    });
  }

  private async onMain(dot: string): Promise<string> {
    const svg = await this.mainThread(dot);
    this.mainLayouts++;
    this.lastMode = 'main';
    return svg;
  }

  private ensureWorker(): WorkerLike | null {
    if (this.unusable) {
      return null;
    }
    if (!this.worker) {
      let worker: WorkerLike;
      try {
        worker = this.spawn();
      } catch (err) {
        console.warn('jaxviz: no layout worker, laying out on the main thread:', err);
        this.unusable = true;
        return null;
      }
      worker.onmessage = ev => this.answer(ev.data);
      worker.onerror = ev => {
        ev.preventDefault?.();
        this.giveUp(ev.message || 'the layout worker failed to load');
      };
      this.worker = worker;
    }
    return this.worker;
  }

  private answer(reply: LayoutReply): void {
    if (reply.fatal) {
      this.giveUp(reply.error ?? 'Graphviz did not load in the layout worker');
      return;
    }
    const request = this.pending.get(reply.id);
    if (!request) {
      return;
    }
    if (reply.progress !== undefined && !reply.layered) {
      request.progress?.(reply.progress);
      return;
    }
    this.pending.delete(reply.id);
    if (typeof reply.svg === 'string' || reply.layered) {
      request.resolve(reply);
    } else {
      request.reject(new Error(reply.error ?? 'the layout worker returned nothing'));
    }
  }

  /** The worker is no use: end it, and send what it held (and all later work) to the main thread. */
  private giveUp(why: string): void {
    if (this.unusable) {
      return;
    }
    console.warn(`jaxviz: layout worker unusable (${why}); laying out on the main thread`);
    this.unusable = true;
    try {
      this.worker?.terminate();
    } catch {
      // already gone
    }
    this.worker = null;
    const held = [...this.pending.values()];
    this.pending.clear();
    for (const request of held) {
      request.reject(new WorkerUnusable(why));
    }
  }
}

/** Graphviz on this thread: the fallback, and what the worker runs. */
export async function renderOnThisThread(dot: string): Promise<string> {
  return (await graphviz()).renderString(dot, { engine: 'dot', format: 'svg' });
}

/** Parse Graphviz's SVG text. */
export function parseSvg(text: string): SVGSVGElement {
  const doc = new DOMParser().parseFromString(text, 'image/svg+xml');
  const error = doc.querySelector('parsererror');
  if (error) {
    throw new Error(`Graphviz returned SVG that does not parse: ${error.textContent ?? ''}`);
  }
  return doc.documentElement as unknown as SVGSVGElement;
}
