import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';

import { ReopenMemory, levelBelow, planExpand } from '../src/graph/expand';
import { DrawingStore } from '../src/graph/splice';
import { GraphIndex } from '../src/graph/visible';
import { smallGraph } from './fixtures';

// smallGraph: the root 0 holds the group 1 and the scan 2, which holds its body 3.
const set = (...ids: number[]) => new Set(ids);

describe('what an expand does to the drawing on screen', () => {
  const index = new GraphIndex(smallGraph());

  it('lays out afresh when asked, whatever is kept', () => {
    const drawings = new DrawingStore();
    drawings.set([0, 2], 'kept');
    assert.deepEqual(planExpand(drawings, index, set(0), set(0, 2), true), { kind: 'layout' });
  });

  it('brings back a drawing of the same open groups as it was', () => {
    const drawings = new DrawingStore();
    drawings.set([0, 2], 'kept');
    assert.deepEqual(planExpand(drawings, index, set(0), set(0, 2), false), { kind: 'restore', text: 'kept' });
  });

  it('opens the groups opened since a kept drawing in it, parents first', () => {
    const drawings = new DrawingStore();
    drawings.set([0], 'root');
    const plan = planExpand(drawings, index, set(0), set(0, 2, 3), false);
    assert.equal(plan.kind, 'splice');
    assert.deepEqual(plan.kind === 'splice' && plan.base.open, [2, 3]);
    assert.deepEqual(plan.kind === 'splice' && plan.base.text, 'root');
  });

  it('closes one group in place: the outermost of those that leave', () => {
    const drawings = new DrawingStore();
    drawings.set([0, 2, 3], 'open');
    assert.deepEqual(planExpand(drawings, index, set(0, 2, 3), set(0), false), { kind: 'close', gid: 2 });
  });

  it('lays out what no kept drawing nor one closing reaches', () => {
    const drawings = new DrawingStore();
    assert.deepEqual(planExpand(drawings, index, set(0), set(0, 2), false), { kind: 'layout' });
    // Two unrelated changes at once (2 closes, 1 opens): no single close.
    drawings.set([0, 2], 'open');
    assert.deepEqual(planExpand(new DrawingStore(), index, set(0, 2), set(0, 1), false), { kind: 'layout' });
  });

  it('reopens what was open inside a group a click closed, once', () => {
    const memory = new ReopenMemory();
    const closed = memory.closed(index, set(0, 2, 3), 2);
    assert.deepEqual([...closed].sort(), [0]);
    // What is laid out ahead of the click: what it will open, remembering all.
    assert.deepEqual([...memory.wouldOpen(index, closed, 2)].sort(), [0, 2, 3]);
    assert.deepEqual([...memory.wouldOpen(index, closed, 2)].sort(), [0, 2, 3]);
    assert.deepEqual([...memory.opened(index, closed, 2)].sort(), [0, 2, 3]);
    assert.deepEqual([...memory.opened(index, closed, 2)].sort(), [0, 2]);
  });

  it('forgets what was open inside closed groups on Collapse all', () => {
    const memory = new ReopenMemory();
    const closed = memory.closed(index, set(0, 2, 3), 2);
    assert.deepEqual([...memory.collapsedAll(index)].sort(), [0]);
    assert.deepEqual([...memory.opened(index, closed, 2)].sort(), [0, 2]);
  });

  it('opens one more level: the children of every open group', () => {
    assert.deepEqual([...levelBelow(index, set(0))].sort(), [0, 1, 2]);
  });
});
