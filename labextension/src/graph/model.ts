/**
 * The interactive graph's state, apart from its widget (`widget.ts`): the program shown
 * and its index, the open groups and the view they make, the drawings kept by expansion
 * state, the search and the zoom and pan. No DOM: the widget renders it and listens to
 * its signals.
 */

import { ISignal, Signal } from '@lumino/signaling';

import { InputJSON, ProgramPayload } from '../shared/payload';
import { DrawingStore } from './splice';
import { GraphIndex, ItemId, View, VisibleEdge, edgeLabel, searchNodes } from './visible';

export type RankDir = 'TB' | 'LR';

/** Zoom and pan: the drawing is scaled by `scale`, then moved by (`tx`, `ty`) px. */
export interface Transform {
  scale: number;
  tx: number;
  ty: number;
}

/** The zoom's bounds. */
const MIN_SCALE = 0.02;
const MAX_SCALE = 4;

export class GraphModel {
  private shownPayload: ProgramPayload | null = null;
  private graphIndex: GraphIndex | null = null;
  private inputsByName = new Map<string, InputJSON>();
  private open = new Set<number>();
  private shownView: View | null = null;
  private shownDot = '';
  private direction: RankDir = 'TB';
  private zoomPan: Transform = { scale: 1, tx: 0, ty: 0 };
  private searchQuery = '';
  private searchMatches: number[] = [];
  /** The visible edges of the view shown, by the id of their drawn edge, and the labels
   * of those into and out of each item (the boxes' tooltips). */
  private readonly edgesById = new Map<string, VisibleEdge>();
  private readonly ins = new Map<ItemId, string[]>();
  private readonly outs = new Map<ItemId, string[]>();
  private edgesIndexed = false;
  /** The drawings shown, by expansion state: closing a group brings back the drawing
   * from before it opened; opening one starts from the drawing shown. */
  readonly drawings = new DrawingStore();

  private readonly payloadSignal = new Signal<this, ProgramPayload | null>(this);
  private readonly viewSignal = new Signal<this, View>(this);
  private readonly transformSignal = new Signal<this, Transform>(this);
  private readonly searchSignal = new Signal<this, string>(this);

  /** Another program is shown (null: none, or one that cannot be shown). */
  get payloadChanged(): ISignal<this, ProgramPayload | null> {
    return this.payloadSignal;
  }

  /** Another view of the program is shown (groups opened or closed). */
  get viewChanged(): ISignal<this, View> {
    return this.viewSignal;
  }

  /** The zoom or the pan changed. */
  get transformChanged(): ISignal<this, Transform> {
    return this.transformSignal;
  }

  /** The search query or its matches changed. */
  get searchChanged(): ISignal<this, string> {
    return this.searchSignal;
  }

  get payload(): ProgramPayload | null {
    return this.shownPayload;
  }

  get index(): GraphIndex | null {
    return this.graphIndex;
  }

  /** The open groups of the view shown. */
  get expanded(): Set<number> {
    return this.open;
  }

  get view(): View | null {
    return this.shownView;
  }

  /** The DOT source of the view shown. */
  get dot(): string {
    return this.shownDot;
  }

  /** The graph's rank direction, chosen on its first view. */
  get rankdir(): RankDir {
    return this.direction;
  }

  get transform(): Transform {
    return this.zoomPan;
  }

  get query(): string {
    return this.searchQuery;
  }

  /** The nodes matching the query. */
  get matches(): readonly number[] {
    return this.searchMatches;
  }

  /** Show a program (its first view is laid out by the widget); null: none. */
  load(payload: ProgramPayload | null): void {
    this.shownPayload = payload;
    this.graphIndex = payload ? new GraphIndex(payload.graph) : null;
    this.inputsByName = new Map((payload?.inputs ?? []).map(i => [i.name, i]));
    this.zoomPan = { scale: 1, tx: 0, ty: 0 };
    this.direction = 'TB';
    this.searchMatches = this.searchFor(this.searchQuery);
    this.payloadSignal.emit(payload);
  }

  /** The input (or constant) of this name. */
  input(name: string): InputJSON | undefined {
    return this.inputsByName.get(name);
  }

  /** This graph is drawn left to right from now on (a tall, narrow column at first). */
  drawSideways(): void {
    this.direction = 'LR';
  }

  /** A view is on screen, drawn from `dot`. */
  show(view: View, dot: string): void {
    this.open = view.expanded;
    this.shownView = view;
    this.shownDot = dot;
    this.edgesIndexed = false;
    this.viewSignal.emit(view);
  }

  /** The shown view's edges by id, and their labels by the items they go into and out of:
   * made when a tooltip first asks (a view of 20k items shows before). */
  private indexEdges(): void {
    if (this.edgesIndexed) {
      return;
    }
    this.edgesIndexed = true;
    this.edgesById.clear();
    this.ins.clear();
    this.outs.clear();
    for (const e of this.shownView?.edges ?? []) {
      this.edgesById.set(`e_${e.src}_${e.dst}`, e);
      const label = edgeLabel(e);
      (this.outs.get(e.src) ?? this.outs.set(e.src, []).get(e.src)!).push(label);
      (this.ins.get(e.dst) ?? this.ins.set(e.dst, []).get(e.dst)!).push(label);
    }
  }

  /** The visible edge drawn with this id. */
  edge(id: string): VisibleEdge | undefined {
    this.indexEdges();
    return this.edgesById.get(id);
  }

  /** The labels of the values into and out of a drawn item. */
  edgeLabels(item: ItemId): { ins: string[]; outs: string[] } {
    this.indexEdges();
    return { ins: this.ins.get(item) ?? [], outs: this.outs.get(item) ?? [] };
  }

  setTransform(change: Partial<Transform>): void {
    this.zoomPan = { ...this.zoomPan, ...change };
    this.transformSignal.emit(this.zoomPan);
  }

  /** Zoom by `factor` (within bounds) about the point (`px`, `py`) of the canvas, which stays put. */
  zoomAbout(factor: number, px: number, py: number): void {
    const { scale, tx, ty } = this.zoomPan;
    const next = Math.min(MAX_SCALE, Math.max(MIN_SCALE, scale * factor));
    const k = next / scale;
    this.setTransform({ scale: next, tx: px - (px - tx) * k, ty: py - (py - ty) * k });
  }

  search(query: string): void {
    this.searchQuery = query;
    this.searchMatches = this.searchFor(query);
    this.searchSignal.emit(query);
  }

  private searchFor(query: string): number[] {
    return this.graphIndex ? searchNodes(this.graphIndex.graph, query) : [];
  }
}
