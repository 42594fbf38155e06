import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';

import { MAX_KEPT, PanelStore, isCellProgram, isWarning, noGraphReason } from '../src/panel/store';

const snapshot = {
  type: 'snapshot' as const,
  functions: [{ name: 'f', summary: 'f: 3 equations', eqn_count: 3, compiles: 1, has_graph: true }],
  compiles: [{ function: 'f', count: 1, causes: [] }],
  stale: [],
  devices: [{ id: 0, platform: 'cpu', kind: 'cpu', memory: null }],
  totals: { compile: 1, stale: 0, program: 1 }
};

describe('PanelStore', () => {
  it('applies a snapshot, then events', () => {
    const s = new PanelStore();
    s.applySnapshot(snapshot);
    assert.equal(s.functions.get('f')!.eqnCount, 3);
    assert.ok(
      s.applyEvent('compile', {
        function: 'f',
        count: 2,
        causes: [{ kind: 'shape', path: 'x', before: 'f32[3]', after: 'f32[4]' }]
      })
    );
    assert.equal(s.functions.get('f')!.compiles, 2);
    assert.ok(s.applyEvent('program', { name: 'g', summary: 'g: 1 equations', eqn_count: 1 }));
    assert.deepEqual(
      s.functionList().map(f => f.name),
      ['g', 'f'],
      'most recent first'
    );
    assert.ok(s.functions.get('g')!.hasGraph);
    assert.ok(s.applyEvent('stale', { name: 'lr', baked: 0.1, current: 0.01 }));
    assert.ok(s.applyEvent('devices', [{ id: 0, platform: 'gpu', kind: 'H100', memory: { bytes_in_use: 1 } }]));
    assert.equal(s.devices[0].kind, 'H100');
    assert.equal(s.applyEvent('unknown-kind', {}), false);
    assert.equal(s.applyEvent('compile', { count: 1 }), false, 'a compile event needs a function');
    const recent = s.recentCompiles(10);
    assert.equal(recent[0].count, 2, 'newest first');
    assert.ok(isWarning(recent[0]));
    assert.ok(!isWarning(recent[1]));
    assert.ok(
      !isWarning({ function: 'f', count: 1, causes: [{ kind: 'first_call', path: 'f', before: null, after: 'x' }] })
    );
    assert.ok(isWarning({ function: 'f', causes: [{ kind: 'static_value', path: 'n', before: 1, after: 2 }] }));
  });

  it('keeps memory bounded under a flood of events, counting what it dropped', () => {
    const s = new PanelStore();
    const t0 = Date.now();
    for (let i = 1; i <= 50000; i++) {
      s.applyEvent('compile', { function: `f${i % 7}`, count: i, causes: [] });
    }
    assert.ok(Date.now() - t0 < 2000, 'a flood is handled in amortised O(1) per event');
    assert.ok(s.compiles.length <= MAX_KEPT * 1.25);
    assert.equal(s.totals.compile, 50000);
    assert.equal(s.droppedCompiles, 50000 - s.compiles.length);
    assert.equal(s.recentCompiles(100).length, 100);
    assert.equal(s.recentCompiles(100)[0].count, 50000);
    assert.equal(s.functions.size, 7);
  });

  it('reset forgets everything (kernel restart)', () => {
    const s = new PanelStore();
    s.applySnapshot(snapshot);
    const rev = s.revision;
    s.reset();
    assert.equal(s.functions.size, 0);
    assert.equal(s.compiles.length, 0);
    assert.equal(s.devices.length, 0);
    assert.ok(s.revision > rev);
  });
});

describe('PanelStore, as the panel lists it', () => {
  it('counts recompiles apart from first compiles', () => {
    const s = new PanelStore();
    s.applyEvent('compile', {
      function: 'step',
      count: 1,
      causes: [{ kind: 'first_call', path: 'step', before: null, after: 'x' }]
    });
    s.applyEvent('compile', {
      function: 'step',
      count: 2,
      causes: [{ kind: 'shape', path: 'v', before: '[3]', after: '[4]' }]
    });
    s.applyEvent('compile', { function: 'other', count: 1, causes: [] });
    assert.equal(s.totals.compile, 3);
    assert.equal(s.totals.recompile, 1);
    s.applySnapshot({
      ...snapshot,
      compiles: [
        { function: 'f', count: 1 },
        { function: 'f', count: 2 }
      ],
      totals: { compile: 2, stale: 0, program: 1 }
    });
    assert.equal(s.totals.recompile, 1);
  });

  it('folds cell programs that compiled nothing of their own, and says why a function has no graph', () => {
    const s = new PanelStore();
    s.applyEvent('program', { name: 'In[3]', summary: 'In[3]: 82 equations', eqn_count: 82 });
    s.applyEvent('compile', { function: 'train_step', count: 6 });
    s.applyEvent('program', { name: 'In[7]', eqn_count: 3 });
    s.applyEvent('compile', { function: 'In[7]', count: 1 });
    const { functions, cells } = s.shownFunctions();
    assert.deepEqual(
      functions.map(f => f.name),
      ['In[7]', 'train_step']
    );
    assert.deepEqual(
      cells.map(f => f.name),
      ['In[3]']
    );
    assert.equal(noGraphReason(s.functions.get('In[3]')!), null);
    assert.match(noGraphReason(s.functions.get('train_step')!)!, /not traced by jaxviz; run %jaxpr train_step/);
    s.upsertFunction({ name: 'late', traces: 1 });
    assert.match(noGraphReason(s.functions.get('late')!)!, /panel was not connected/);
    assert.ok(isCellProgram('In[12]') && !isCellProgram('In[x]') && !isCellProgram('train_step'));
  });
});

describe('PanelStore revisions', () => {
  it('bumps only what an event changes, and the epoch when everything is replaced', () => {
    const s = new PanelStore();
    s.applySnapshot(snapshot);
    const epoch = s.epoch;
    const before = { ...s.revisions };
    s.applyEvent('stale', { name: 'lr' });
    assert.deepEqual(s.revisions, { ...before, stale: before.stale + 1 });
    s.applyEvent('compile', { function: 'f', count: 2 });
    assert.deepEqual(s.revisions, {
      ...before,
      stale: before.stale + 1,
      compiles: before.compiles + 1,
      functions: before.functions + 1
    });
    s.applyEvent('devices', []);
    assert.equal(s.revisions.devices, before.devices + 1);
    assert.equal(s.epoch, epoch, 'events add to what is shown');
    s.applySnapshot(snapshot);
    assert.ok(s.epoch > epoch, 'a snapshot replaces it');
  });
});
