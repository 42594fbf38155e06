/**
 * What a change of the open groups does to the drawing on screen, decided from the kept
 * drawings alone (no DOM, no layout): the drawing from before comes back, the groups
 * opened since a kept drawing are spliced into it, one group closes in place, or what is
 * shown is laid out afresh. And what a click that opens or closes a group opens.
 */

import { DrawingStore } from './splice';
import { GraphIndex } from './visible';

/** How a drawing came to be. */
export type Arranged = 'layout' | 'splice' | 'close' | 'restore';

export type ExpandPlan =
  | { kind: 'restore'; text: string }
  | { kind: 'splice'; base: { text: string; groups: Set<number>; open: number[] } }
  | { kind: 'close'; gid: number }
  | { kind: 'layout' };

/**
 * How to draw the open groups `next` when `shown` is on screen: `afresh` (a first view,
 * Tidy layout, Expand level, Collapse all) lays out; else a state shown before comes back,
 * groups opened since a kept drawing open in it, one group closing closes in place.
 */
export function planExpand(
  drawings: DrawingStore,
  index: GraphIndex,
  shown: Set<number>,
  next: Set<number>,
  afresh: boolean
): ExpandPlan {
  if (afresh) {
    return { kind: 'layout' };
  }
  const text = drawings.get(next);
  if (text !== undefined) {
    return { kind: 'restore', text };
  }
  const base = drawings.baseFor(next, g => index.depth[g], shown);
  if (base) {
    return { kind: 'splice', base };
  }
  const gid = closedGroup(index, shown, next);
  return gid === null ? { kind: 'layout' } : { kind: 'close', gid };
}

/** The group whose closing turns `shown` into `next` (it and what it holds leave the
 * expanded set, nothing else changes), if there is one. */
export function closedGroup(index: GraphIndex, shown: Set<number>, next: Set<number>): number | null {
  const gone = [...shown].filter(g => !next.has(g));
  if (!gone.length || [...next].some(g => !shown.has(g))) {
    return null;
  }
  const top = gone.find(g => !gone.includes(index.graph.groups[g].parent ?? -1));
  return top !== undefined && gone.every(g => index.groupChain(g).includes(top)) ? top : null;
}

/** Every group open in `expanded`, and its children: one more level. */
export function levelBelow(index: GraphIndex, expanded: Set<number>): Set<number> {
  const next = new Set(expanded);
  for (const gid of expanded) {
    for (const c of index.graph.groups[gid].groups) {
      next.add(c);
    }
  }
  return next;
}

/** What was open inside each group when a click closed it: opening it again opens that
 * too (closing and reopening brings the drawing from before back, exactly). */
export class ReopenMemory {
  private readonly inside = new Map<number, number[]>();

  /** Group ids of another program. */
  clear(): void {
    this.inside.clear();
  }

  /** The open groups once `gid` opens: with its ancestors, and with what was open inside
   * it when a click closed it. */
  opened(index: GraphIndex, expanded: Set<number>, gid: number): Set<number> {
    const next = this.wouldOpen(index, expanded, gid);
    this.inside.delete(gid);
    return next;
  }

  /** What `opened` would open, remembering all (what is laid out ahead of a click). */
  wouldOpen(index: GraphIndex, expanded: Set<number>, gid: number): Set<number> {
    const next = index.expand(expanded, gid);
    for (const g of this.inside.get(gid) ?? []) {
      next.add(g);
    }
    return next;
  }

  /** Collapse all: the top level only, and a fresh start (what was open inside a group
   * closed earlier is forgotten: a group opened next opens one level, as after a run). */
  collapsedAll(index: GraphIndex): Set<number> {
    this.inside.clear();
    return index.expandToDepth(0);
  }

  /** The open groups once `gid` closes (and everything in it), remembering what was open
   * inside it. */
  closed(index: GraphIndex, expanded: Set<number>, gid: number): Set<number> {
    this.inside.set(
      gid,
      index.descendants(gid).filter(g => g !== gid && expanded.has(g))
    );
    return index.collapse(expanded, gid);
  }
}
