import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';

import { MIME_TYPE } from '../src/shared/payload';
import { expansionKey, initialExpansion, metadataWithExpansion, storedExpansion } from '../src/graph/persist';
import { GraphIndex } from '../src/graph/visible';
import { repeatGraph, smallGraph } from './fixtures';

const meta = (entry: unknown, extra: object = {}) => ({ ...extra, [MIME_TYPE]: entry });
const sorted = (s: Set<number>) => [...s].sort((a, b) => a - b);

describe('expansion state kept in the output metadata', () => {
  it('reads a stored state, ignoring what is not one', () => {
    assert.deepEqual(storedExpansion(meta({ expanded: [0, 2, 3], groups: 4 })), { expanded: [0, 2, 3], groups: 4 });
    assert.deepEqual(storedExpansion(meta({ expanded: [0, '2', 1.5, null, 3], groups: 4 })), {
      expanded: [0, 3],
      groups: 4
    });
    for (const bad of [
      undefined,
      null,
      'x',
      [],
      {},
      meta(null),
      meta([0, 2]),
      meta({ expanded: [0] }),
      meta({ expanded: 'all', groups: 4 }),
      meta({ expanded: [0], groups: '4' })
    ]) {
      assert.equal(storedExpansion(bad), null, JSON.stringify(bad));
    }
  });

  it('starts from the stored state when it fits the graph, else from the kernel', () => {
    const idx = new GraphIndex(smallGraph()); // 4 groups
    const start = (metadata: unknown, max = Infinity) => {
      const r = initialExpansion(idx, [0], metadata, max);
      return { expanded: sorted(r.expanded), stored: r.stored };
    };
    assert.deepEqual(start({}), { expanded: [0], stored: false });
    assert.deepEqual(start(undefined), { expanded: [0], stored: false });
    assert.deepEqual(start(meta({ expanded: [0, 2, 3], groups: 4 })), { expanded: [0, 2, 3], stored: true });
    // normalized: ancestors added, ids out of range or not integers dropped
    assert.deepEqual(start(meta({ expanded: [3], groups: 4 })), { expanded: [0, 2, 3], stored: true });
    assert.deepEqual(start(meta({ expanded: [1, 99, -1, 2.5], groups: 4 })), { expanded: [0, 1], stored: true });
    // another graph's state (other group count), or nothing valid left: the kernel's
    assert.deepEqual(start(meta({ expanded: [0, 2, 3], groups: 12 })), { expanded: [0], stored: false });
    assert.deepEqual(start(meta({ expanded: [7, 40], groups: 4 })), { expanded: [0], stored: false });
    // more than the layout takes: the kernel's
    assert.deepEqual(start(meta({ expanded: [1, 3], groups: 4 }), 3), { expanded: [0], stored: false });
    // no kernel state: the root
    assert.deepEqual(sorted(initialExpansion(idx, undefined, {}).expanded), [0]);
    // the kernel's state is normalized too
    assert.deepEqual(sorted(initialExpansion(idx, [3, 50], {}).expanded), [0, 2, 3]);
  });

  it('restores a state through a repeat group (ids not in tree order)', () => {
    const idx = new GraphIndex(repeatGraph()); // group 4 holds layers 1..3
    const r = initialExpansion(idx, [0], meta({ expanded: [2], groups: 5 }));
    assert.deepEqual(sorted(r.expanded), [0, 2, 4]);
  });

  it('writes the state, keeps other metadata, and only when it changes', () => {
    const idx = new GraphIndex(smallGraph());
    const other = { 'image/png': { width: 3 } };
    const m1 = metadataWithExpansion(other, idx, [0], new Set([3]));
    assert.deepEqual(m1, { 'image/png': { width: 3 }, [MIME_TYPE]: { expanded: [0, 2, 3], groups: 4 } });
    assert.deepEqual(other, { 'image/png': { width: 3 } }, 'the given metadata is not changed');
    assert.equal(metadataWithExpansion(m1, idx, [0], new Set([0, 2, 3])), null, 'already stored');
    const m2 = metadataWithExpansion(m1, idx, [0], new Set([0, 1, 2, 3]));
    assert.deepEqual(m2?.[MIME_TYPE], { expanded: [0, 1, 2, 3], groups: 4 });
    // back to the kernel's state: the entry goes, the rest stays
    assert.deepEqual(metadataWithExpansion(m2, idx, [0], new Set([0])), { 'image/png': { width: 3 } });
    assert.equal(metadataWithExpansion({}, idx, [0], new Set([0])), null);
    assert.equal(metadataWithExpansion(undefined, idx, [0], new Set([0])), null);
    // a malformed entry is replaced; other keys of it kept
    assert.deepEqual(
      metadataWithExpansion(meta({ isolated: false, expanded: 'x' }), idx, [0], new Set([1]))?.[MIME_TYPE],
      {
        isolated: false,
        expanded: [0, 1],
        groups: 4
      }
    );
    // what is written reads back as the same state
    const back = initialExpansion(idx, [0], metadataWithExpansion({}, idx, [0], new Set([3])));
    assert.equal(expansionKey(back.expanded), '0,2,3');
    assert.ok(back.stored);
  });
});
