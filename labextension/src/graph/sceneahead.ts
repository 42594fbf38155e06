/**
 * Views too big for Graphviz, laid out before a click asks for them: the last ones shown
 * (a state shown before comes back as it was, at once) and, while nothing else runs, what
 * opening each box in view would show (its view, scene, layered layout and index), so
 * that a click on a box only puts the scene on the canvas. The same layout as a click's
 * own, sooner: the canvas's counterpart of `prefetchOpenings` (`inplace.ts`).
 */

import { LaidScene } from './layoutserver';
import { layouter } from './layoutsvg';
import { RankDir } from './model';
import { expansionKey } from './persist';
import { Scene, sceneOf } from './scene';
import { GraphIndex, View, buildView, visibleItems } from './visible';

/** A view laid out for the canvas; `shown`: it was on screen; `ahead`: laid out ahead of
 * a click. */
export interface LaidView {
  view: View;
  scene: Scene;
  laid: LaidScene;
  count: number;
  shown: boolean;
  ahead: boolean;
}

/** Views kept (each holds its scene's index: a few MB for 20k items). */
const KEPT = 6;
/** Boxes in view whose opening is laid out ahead. */
const AHEAD_BOXES = 3;
/** How long after a view is shown laying out ahead may start (ms). */
const SETTLE_MS = 300;

export class SceneStore {
  private readonly entries = new Map<string, LaidView>();
  /** Views being laid out ahead, by state: a click on one waits for it (the worker does
   * one layout at a time: asking again would wait for it, then do it twice). */
  private readonly coming = new Map<string, Promise<LaidView | undefined>>();

  private key(index: GraphIndex, expanded: Set<number>, rankdir: RankDir): string {
    return `${rankdir}|${expansionKey(index.normalize(expanded))}`;
  }

  /** The laid-out view of this state, if kept (the most recently used last). */
  get(index: GraphIndex, expanded: Set<number>, rankdir: RankDir): LaidView | undefined {
    const key = this.key(index, expanded, rankdir);
    const found = this.entries.get(key);
    if (found) {
      this.entries.delete(key);
      this.entries.set(key, found);
    }
    return found;
  }

  put(index: GraphIndex, rankdir: RankDir, entry: LaidView): void {
    const key = this.key(index, entry.view.expanded, rankdir);
    this.entries.delete(key);
    this.entries.set(key, entry);
    while (this.entries.size > KEPT) {
      this.entries.delete(this.entries.keys().next().value as string);
    }
  }

  /** The layout of this state under way ahead, if any: the laid-out view it will be
   * (undefined: not drawn on the canvas, or it failed). */
  underWay(index: GraphIndex, expanded: Set<number>, rankdir: RankDir): Promise<LaidView | undefined> | undefined {
    return this.coming.get(this.key(index, expanded, rankdir));
  }

  /** `laying` lays out this state ahead: kept as under way until it is done. */
  layingOut(index: GraphIndex, expanded: Set<number>, rankdir: RankDir, laying: Promise<LaidView | undefined>): void {
    const key = this.key(index, expanded, rankdir);
    const done = laying.catch(() => undefined);
    this.coming.set(key, done);
    void done.then(() => this.coming.get(key) === done && this.coming.delete(key));
  }

  clear(): void {
    this.entries.clear();
    this.coming.clear();
  }
}

/** What laying out ahead needs: the graph, what a click on a box opens (as the click
 * will: with what was open inside it when it was closed), the direction, the boxes in
 * view (group ids), the smallest view drawn on the canvas, and whether this is still
 * current. */
export interface Ahead {
  index: GraphIndex;
  opening: (gid: number) => Set<number>;
  rankdir: RankDir;
  boxes: number[];
  minItems: number;
  maxItems: number;
  current: () => boolean;
}

/** Lay out, one at a time when the page is idle, what opening each box in view shows. */
export function layOutAhead(store: SceneStore, ahead: Ahead): void {
  const boxes = ahead.boxes.slice(0, AHEAD_BOXES);
  const next = () => {
    const gid = boxes.shift();
    if (gid === undefined || !ahead.current()) {
      return;
    }
    void layOutOpening(store, ahead, gid)
      .catch(() => undefined)
      .then(() => whenIdle(next));
  };
  // Not before the new view's first frames are out.
  window.setTimeout(() => whenIdle(next), SETTLE_MS);
}

/** Lay out now what opening `gid` shows (the box under the pointer: a click may follow),
 * unless it is kept or under way. */
export function layOutHovered(store: SceneStore, ahead: Ahead, gid: number): void {
  void layOutOpening(store, ahead, gid).catch(() => undefined);
}

function layOutOpening(store: SceneStore, ahead: Ahead, gid: number): Promise<void> {
  const { index, rankdir } = ahead;
  const expanded = ahead.opening(gid);
  if (store.get(index, expanded, rankdir) || store.underWay(index, expanded, rankdir)) {
    return Promise.resolve();
  }
  const laying = laidView(ahead, expanded);
  store.layingOut(index, expanded, rankdir, laying);
  return laying.then(entry => {
    if (entry && ahead.current()) {
      store.put(index, rankdir, entry);
    }
  });
}

/** The canvas view of `expanded`, laid out in the worker (undefined: drawn by Graphviz,
 * or not at all). */
async function laidView(ahead: Ahead, expanded: Set<number>): Promise<LaidView | undefined> {
  const view = buildView(ahead.index, expanded);
  const { nodes, groups } = visibleItems(view);
  const count = nodes.length + groups.length;
  if (count <= ahead.minItems || count > ahead.maxItems) {
    return undefined;
  }
  const scene = sceneOf(view, ahead.rankdir);
  const laid = await layouter.layered(scene.layout);
  return { view, scene, laid, count, shown: false, ahead: true };
}

function whenIdle(run: () => void): void {
  if (window.requestIdleCallback) {
    window.requestIdleCallback(run, { timeout: 500 });
  } else {
    window.setTimeout(run, 50);
  }
}
