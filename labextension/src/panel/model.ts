/**
 * The jaxviz panel's model: the "jaxviz" comm to the current notebook's kernel, the link
 * state machine and the store of what the kernel reported. No DOM: the view
 * (`widget.ts`) renders from it and listens to its signals.
 *
 * Protocol (kernel side: `jaxviz/ipython/bridge.py`; messages: `jaxviz/schema/messages.json`):
 * the model opens a "jaxviz" comm and asks for a snapshot; the kernel then pushes events
 * on it as they happen. A kernel without jaxviz closes the comm at once (state
 * 'not-loaded'); when jaxviz is loaded later, the kernel opens a "jaxviz" comm itself,
 * which the model adopts. Nothing is ever executed in the user's kernel, and there is
 * no polling. Every message is checked against the schema before use: one that does
 * not match is dropped with a console warning.
 */

import { ISessionContext } from '@jupyterlab/apputils';
import { NotebookPanel } from '@jupyterlab/notebook';
import { Kernel, KernelMessage } from '@jupyterlab/services';
import { JSONObject } from '@lumino/coreutils';
import { IDisposable } from '@lumino/disposable';
import { ISignal, Signal } from '@lumino/signaling';

import { COMM_TARGET, DiffMessage, FrontendMessage, ProgramPayload } from '../shared/payload';
import { checkedEvents, checkedKernelMessage } from '../shared/protocol';
import { PanelStore } from './store';

export type LinkState = 'no-notebook' | 'no-kernel' | 'connecting' | 'not-loaded' | 'restarting' | 'connected';

/** A function's graph, as the kernel sent it on request. */
export interface GraphReply {
  name: string;
  payload: ProgramPayload;
}

/** Where the panel is: the notebook's title, its kernel's name and status. */
export interface Whereabouts {
  notebook: string;
  kernel: string;
  status: string;
}

export class PanelModel implements IDisposable {
  readonly store = new PanelStore();
  private notebookPanel: NotebookPanel | null = null;
  private kernel: Kernel.IKernelConnection | null = null;
  private comm: Kernel.IComm | null = null;
  private link: LinkState = 'no-notebook';
  private restarting = false;
  private selected: string | null = null;
  /** Why the last requested graph could not be shown, by function. */
  private readonly problems = new Map<string, string>();
  private problemsSeen = 0;
  private disposed = false;

  private readonly stateSignal = new Signal<this, LinkState>(this);
  private readonly storeSignal = new Signal<this, void>(this);
  private readonly whereSignal = new Signal<this, void>(this);
  private readonly graphSignal = new Signal<this, GraphReply>(this);
  private readonly diffSignal = new Signal<this, DiffMessage>(this);

  /** The link state changed. */
  get stateChanged(): ISignal<this, LinkState> {
    return this.stateSignal;
  }

  /** The store (or a function's graph problem) changed. */
  get changed(): ISignal<this, void> {
    return this.storeSignal;
  }

  /** The notebook, its kernel or the kernel's status changed. */
  get whereChanged(): ISignal<this, void> {
    return this.whereSignal;
  }

  /** The graph of the function asked for last arrived. */
  get graphReceived(): ISignal<this, GraphReply> {
    return this.graphSignal;
  }

  /** The kernel answered a diff request. */
  get diffReceived(): ISignal<this, DiffMessage> {
    return this.diffSignal;
  }

  get state(): LinkState {
    return this.link;
  }

  get isDisposed(): boolean {
    return this.disposed;
  }

  get where(): Whereabouts | null {
    const nb = this.notebookPanel;
    if (!nb) {
      return null;
    }
    const ctx = nb.sessionContext;
    return { notebook: nb.title.label, kernel: ctx.kernelDisplayName, status: ctx.kernelDisplayStatus };
  }

  /** Why a function's graph could not be shown when last asked for (undefined: it can). */
  graphProblem(name: string): string | undefined {
    return this.problems.get(name);
  }

  /** Bumped when a function's graph problem was found or cleared. */
  get problemsRevision(): number {
    return this.problemsSeen;
  }

  private setProblem(name: string, problem: string | null): void {
    if (problem === null ? this.problems.delete(name) : this.problems.get(name) !== problem) {
      if (problem !== null) {
        this.problems.set(name, problem);
      }
      this.problemsSeen++;
    }
  }

  // ------------------------------------------------------------------ binding

  /** Follow a notebook (the current one), or none. */
  setNotebook(nb: NotebookPanel | null): void {
    if (nb === this.notebookPanel) {
      return;
    }
    if (this.notebookPanel) {
      const ctx = this.notebookPanel.sessionContext;
      ctx.kernelChanged.disconnect(this.onKernelChanged, this);
      ctx.statusChanged.disconnect(this.onStatusChanged, this);
      this.notebookPanel.disposed.disconnect(this.onNotebookDisposed, this);
    }
    this.notebookPanel = nb;
    if (nb) {
      const ctx = nb.sessionContext;
      ctx.kernelChanged.connect(this.onKernelChanged, this);
      ctx.statusChanged.connect(this.onStatusChanged, this);
      nb.disposed.connect(this.onNotebookDisposed, this);
      this.setKernel(ctx.session?.kernel ?? null);
    } else {
      this.setKernel(null);
    }
    this.whereSignal.emit();
  }

  private onNotebookDisposed(): void {
    this.setNotebook(null);
  }

  private onKernelChanged(_: ISessionContext, args: { newValue: Kernel.IKernelConnection | null }): void {
    this.setKernel(args.newValue ?? null);
  }

  private onStatusChanged(_: ISessionContext, status: Kernel.Status): void {
    if (status === 'restarting' || status === 'autorestarting' || status === 'dead') {
      if (!this.restarting) {
        this.restarting = true;
        this.dropComm();
        this.forget();
        this.setState('restarting');
      }
    } else if (this.restarting && (status === 'idle' || status === 'busy')) {
      this.restarting = false;
      this.reconnect();
    }
    this.whereSignal.emit();
  }

  private setKernel(kernel: Kernel.IKernelConnection | null): void {
    if (kernel === this.kernel) {
      return;
    }
    this.dropComm();
    if (this.kernel && !this.kernel.isDisposed) {
      this.kernel.removeCommTarget(COMM_TARGET, this.onKernelOpensComm);
    }
    this.kernel = kernel;
    this.restarting = false;
    this.forget();
    if (kernel) {
      kernel.registerCommTarget(COMM_TARGET, this.onKernelOpensComm);
      this.openComm();
    } else {
      this.setState(this.notebookPanel ? 'no-kernel' : 'no-notebook');
    }
  }

  /** Open a fresh comm on the current kernel and ask for a snapshot. */
  reconnect(): void {
    if (!this.kernel) {
      return;
    }
    this.dropComm();
    this.kernel.registerCommTarget(COMM_TARGET, this.onKernelOpensComm);
    this.openComm();
  }

  private openComm(): void {
    const kernel = this.kernel;
    if (!kernel || kernel.isDisposed) {
      return;
    }
    this.setState('connecting');
    let comm: Kernel.IComm;
    try {
      comm = kernel.createComm(COMM_TARGET);
    } catch (err) {
      console.warn('jaxviz: cannot open a comm', err);
      this.setState('not-loaded');
      return;
    }
    this.adopt(comm);
    comm.open(request({ type: 'snapshot_request' }));
  }

  /** The kernel announced itself (`%load_ext jaxviz` ran after the panel connected). */
  private onKernelOpensComm = (comm: Kernel.IComm, msg: KernelMessage.ICommOpenMsg): void => {
    if (this.kernel === null || this.restarting || !checkedKernelMessage(msg.content.data)) {
      comm.close();
      return;
    }
    this.dropComm();
    this.adopt(comm);
    comm.send(request({ type: 'snapshot_request' }));
  };

  private adopt(comm: Kernel.IComm): void {
    this.comm = comm;
    comm.onMsg = msg => this.onCommMsg(comm, msg);
    comm.onClose = () => {
      if (this.comm === comm) {
        this.comm = null;
        this.forget();
        this.setState(this.restarting ? 'restarting' : 'not-loaded');
      }
    };
  }

  private dropComm(): void {
    const comm = this.comm;
    this.comm = null;
    if (comm && !comm.isDisposed) {
      try {
        comm.close();
      } catch {
        // the kernel is gone already
      }
    }
  }

  /** The kernel's state is gone (another kernel, a restart, a closed comm). */
  private forget(): void {
    this.store.reset();
    this.selected = null;
    this.problems.clear();
    this.problemsSeen++;
    this.storeSignal.emit();
  }

  private setState(state: LinkState): void {
    if (state === this.link) {
      return;
    }
    this.link = state;
    this.stateSignal.emit(state);
  }

  // ------------------------------------------------------------------ messages

  private onCommMsg(comm: Kernel.IComm, msg: KernelMessage.ICommMsgMsg): void {
    if (comm !== this.comm) {
      return;
    }
    const data = msg.content.data;
    const message = checkedKernelMessage(data);
    switch (message?.type) {
      case 'snapshot':
        this.store.applySnapshot(message);
        this.setState('connected');
        this.storeSignal.emit();
        return;
      case 'event':
      case 'events':
        this.setState('connected');
        this.applyEvents(message.type === 'event' ? [message] : message.events);
        return;
      case 'graph':
        if (message.name !== this.selected) {
          return;
        }
        this.selected = null;
        if (message.payload) {
          this.setProblem(message.name, null);
          this.graphSignal.emit({ name: message.name, payload: message.payload as ProgramPayload });
        } else {
          this.setProblem(message.name, 'the kernel no longer keeps this graph: run its cell again');
          this.storeSignal.emit();
        }
        return;
      case 'diff':
        this.diffSignal.emit(message);
        return;
      case undefined: {
        // A batch with some events this version does not know: the others still count.
        const events = checkedEvents(data);
        if (events.length) {
          this.setState('connected');
          this.applyEvents(events);
        }
        return;
      }
      default:
        return;
    }
  }

  private applyEvents(events: readonly { kind: string; payload: unknown }[]): void {
    let changed = false;
    for (const ev of events) {
      changed = this.store.applyEvent(ev.kind, ev.payload) || changed;
      if (ev.kind === 'program') {
        this.setProblem((ev.payload as { name: string }).name, null);
      }
    }
    if (changed) {
      this.storeSignal.emit();
    }
  }

  /** Ask the kernel for a function's graph; `graphReceived` emits it. */
  selectFunction(name: string): void {
    this.selected = name;
    this.send({ type: 'graph_request', name });
  }

  /** Ask the kernel what a recompile changed in the program; `diffReceived` emits it. */
  requestDiff(name: string, count: number): void {
    this.send({ type: 'diff_request', function: name, count });
  }

  private send(message: FrontendMessage): void {
    this.comm?.send(request(message));
  }

  dispose(): void {
    if (this.disposed) {
      return;
    }
    this.setNotebook(null);
    this.disposed = true;
    Signal.clearData(this);
  }
}

/** A message to the kernel as the comm API types it. */
function request(message: FrontendMessage): JSONObject {
  return message as unknown as JSONObject;
}
