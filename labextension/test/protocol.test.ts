import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';

import { checkedEvents, checkedKernelMessage, isFrontendMessage } from '../src/shared/protocol';
import { samePayload } from '../src/shared/payload';
import { smallPayload } from './fixtures';

/** Runs `fn` with console.warn recorded. */
function warnings(fn: () => void): string[] {
  const seen: string[] = [];
  const warn = console.warn;
  console.warn = (...args: unknown[]) => void seen.push(String(args[0]));
  try {
    fn();
  } finally {
    console.warn = warn;
  }
  return seen;
}

const compile = {
  function: 'step',
  count: 2,
  causes: [{ kind: 'shape', path: 'x', before: 'f32[3]', after: 'f32[4]' }]
};

describe('comm messages checked against jaxviz/schema/messages.json', () => {
  it('keeps the messages the kernel sends', () => {
    const messages = [
      { type: 'hello' },
      {
        type: 'snapshot',
        version: '0.1',
        functions: [{ name: 'f', compiles: 1 }],
        compiles: [compile],
        stale: [],
        devices: [{ id: 0, platform: 'cpu', kind: 'cpu', memory: null }],
        devices_note: null,
        totals: { compile: 1 }
      },
      { type: 'event', kind: 'compile', payload: compile },
      {
        type: 'events',
        events: [
          { kind: 'stale', payload: { name: 'lr', baked: 0.1 } },
          { kind: 'devices', payload: [] }
        ]
      },
      { type: 'graph', name: 'f', payload: smallPayload() },
      { type: 'graph', name: 'f', payload: null },
      { type: 'diff', function: 'f', count: 2, payload: null, svg: null, summary: null, error: 'no earlier compile' }
    ];
    const seen = warnings(() => {
      for (const m of messages) {
        assert.deepEqual(checkedKernelMessage(m), m, JSON.stringify(m).slice(0, 80));
      }
    });
    assert.deepEqual(seen, []);
  });

  it('drops a message that does not match, with a warning saying where', () => {
    const bad = [
      null,
      'snapshot',
      { type: 'nonsense' },
      { type: 'snapshot', functions: [], compiles: [], stale: [] },
      { type: 'graph', name: 'f', payload: { ...smallPayload(), graph: { nodes: 3 } } },
      { type: 'diff', function: 'f', count: 'two', svg: null, summary: null, error: null }
    ];
    const seen = warnings(() => {
      for (const m of bad) {
        assert.equal(checkedKernelMessage(m), null, JSON.stringify(m)?.slice(0, 80));
      }
    });
    assert.equal(seen.length, bad.length);
    assert.ok(seen.every(w => w.startsWith('jaxviz: dropped a message')));
    assert.match(seen[3], /must have required property 'devices'/);
  });

  it('keeps the valid events of a batch and drops the others', () => {
    const batch = {
      type: 'events',
      events: [
        { kind: 'compile', payload: compile },
        { kind: 'compile', payload: { count: 3 } },
        { kind: 'future-kind', payload: {} },
        { kind: 'stale', payload: { name: 'lr' } }
      ]
    };
    let kept: unknown[] = [];
    const seen = warnings(() => {
      assert.equal(checkedKernelMessage(batch), null);
      kept = checkedEvents(batch);
    });
    assert.deepEqual(kept, [batch.events[0], batch.events[3]]);
    assert.equal(seen.length, 2);
    assert.match(seen[0], /dropped an event/);
    assert.deepEqual(
      warnings(() => assert.deepEqual(checkedEvents({ type: 'event', kind: 'stale', payload: {} }), [])).length,
      1
    );
  });

  it('checks the requests the panel sends', () => {
    assert.ok(isFrontendMessage({ type: 'snapshot_request' }));
    assert.ok(isFrontendMessage({ type: 'diff_request', function: 'f', count: null }));
    assert.ok(!isFrontendMessage({ type: 'graph_request' }), 'a graph request names its function');
  });
});

describe('samePayload', () => {
  it('keeps the view a display update shows again, as sent anew', () => {
    const first = smallPayload([0]);
    const again = JSON.parse(JSON.stringify(first)) as unknown; // a message's new objects
    assert.ok(samePayload(first, again));
  });

  it('tells another expansion and another program apart', () => {
    const first = smallPayload([0]);
    assert.ok(!samePayload(first, smallPayload([0, 1])), 'dot narrowed the first view: shown anew');
    assert.ok(!samePayload(first, { ...first, name: 'other' }));
    assert.ok(!samePayload(first, undefined));
  });
});
