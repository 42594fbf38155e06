import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';

import { LayoutCache, LayoutReply, LayoutRequest, WorkerLayout, WorkerLike } from '../src/graph/layout';

/** A stand-in for the layout worker: it keeps the requests, and the test answers them. */
class FakeWorker implements WorkerLike {
  onmessage: ((ev: { data: LayoutReply }) => void) | null = null;
  onerror: ((ev: { message?: string; preventDefault?: () => void }) => void) | null = null;
  readonly received: LayoutRequest[] = [];
  terminated = false;

  postMessage(message: LayoutRequest): void {
    this.received.push(message);
  }
  terminate(): void {
    this.terminated = true;
  }
  reply(data: LayoutReply): void {
    this.onmessage?.({ data });
  }
  /** The worker answering like Graphviz would, for every request so far. */
  answerAll(): void {
    for (const r of this.received.splice(0)) {
      this.reply({ id: r.id, svg: `<svg>${r.dot}</svg>` });
    }
  }
}

const tick = () => new Promise(resolve => setImmediate(resolve));

function setup(spawn?: () => WorkerLike) {
  const workers: FakeWorker[] = [];
  const onMain: string[] = [];
  const layout = new WorkerLayout(
    spawn ??
      (() => {
        const w = new FakeWorker();
        workers.push(w);
        return w;
      }),
    dot => {
      onMain.push(dot);
      if (dot === 'bad') {
        throw new Error('syntax error in line 1');
      }
      return `<svg main>${dot}</svg>`;
    }
  );
  return { layout, workers, onMain };
}

describe('WorkerLayout', () => {
  it('makes the worker on first use only, and matches answers to requests by id', async () => {
    const { layout, workers, onMain } = setup();
    assert.equal(workers.length, 0, 'no worker before the first layout');
    const a = layout.render('a');
    const b = layout.render('b');
    assert.equal(workers.length, 1, 'one worker for all requests');
    const w = workers[0];
    assert.deepEqual(
      w.received.map(r => r.dot),
      ['a', 'b']
    );
    assert.notEqual(w.received[0].id, w.received[1].id);
    assert.equal(layout.inFlight, 2);
    // Answered out of order: each promise still gets its own SVG.
    const [ra, rb] = w.received;
    w.reply({ id: rb.id, svg: '<svg>B</svg>' });
    w.reply({ id: ra.id, svg: '<svg>A</svg>' });
    assert.deepEqual(await Promise.all([a, b]), ['<svg>A</svg>', '<svg>B</svg>']);
    assert.equal(layout.inFlight, 0);
    assert.deepEqual(onMain, []);
    assert.equal(layout.lastMode, 'worker');
    assert.equal(layout.workerLayouts, 2);
    // An answer to nothing (a duplicate, a stray) is ignored.
    w.reply({ id: ra.id, svg: '<svg>again</svg>' });
    assert.equal(layout.fellBack, false);
  });

  it("passes Graphviz's error for one DOT to that request only, and keeps the worker", async () => {
    const { layout, workers, onMain } = setup();
    const bad = layout.render('bad');
    const good = layout.render('good');
    const w = workers[0];
    w.reply({ id: w.received[0].id, error: 'syntax error in line 1 near }' });
    w.reply({ id: w.received[1].id, svg: '<svg>good</svg>' });
    await assert.rejects(bad, /syntax error in line 1 near \}/);
    assert.equal(await good, '<svg>good</svg>');
    assert.equal(layout.fellBack, false);
    assert.equal(w.terminated, false);
    assert.deepEqual(onMain, [], 'a Graphviz error is not laid out again on the main thread');
    const next = layout.render('next');
    w.received.splice(0, 2);
    w.answerAll();
    assert.equal(await next, '<svg>next</svg>');
    assert.equal(workers.length, 1);
  });

  it('lays out on the main thread, for good, when no worker can be made', async () => {
    let spawns = 0;
    const { layout, onMain } = setup(() => {
      spawns++;
      throw new Error('Worker is not defined');
    });
    assert.equal(await layout.render('a'), '<svg main>a</svg>');
    assert.equal(await layout.render('b'), '<svg main>b</svg>');
    assert.equal(spawns, 1, 'tried once, and remembered');
    assert.deepEqual(onMain, ['a', 'b']);
    assert.equal(layout.fellBack, true);
    assert.equal(layout.lastMode, 'main');
    // Graphviz errors on the main thread still reach the caller.
    await assert.rejects(layout.render('bad'), /syntax error in line 1/);
  });

  it('sends what the worker held, and all later work, to the main thread when it fails to load', async () => {
    const { layout, workers, onMain } = setup();
    const a = layout.render('a');
    const b = layout.render('b');
    const w = workers[0];
    let prevented = false;
    w.onerror?.({ message: 'NetworkError: 404', preventDefault: () => (prevented = true) });
    assert.deepEqual(await Promise.all([a, b]), ['<svg main>a</svg>', '<svg main>b</svg>']);
    assert.ok(prevented, 'the error is handled, not left to the console as uncaught');
    assert.ok(w.terminated);
    assert.equal(layout.fellBack, true);
    assert.equal(await layout.render('c'), '<svg main>c</svg>');
    assert.equal(workers.length, 1, 'no second worker');
    assert.deepEqual(onMain, ['a', 'b', 'c']);
    // A late answer from the dead worker changes nothing.
    w.reply({ id: 1, svg: '<svg>late</svg>' });
    assert.equal(layout.lastMode, 'main');
  });

  it('falls back when Graphviz cannot load inside the worker', async () => {
    const { layout, workers, onMain } = setup();
    const a = layout.render('a');
    const w = workers[0];
    w.reply({ id: w.received[0].id, error: 'Graphviz did not load: CompileError', fatal: true });
    assert.equal(await a, '<svg main>a</svg>');
    assert.ok(w.terminated);
    assert.deepEqual(onMain, ['a']);
    assert.equal(await layout.render('b'), '<svg main>b</svg>');
  });

  it('falls back when posting to the worker throws', async () => {
    const w = new FakeWorker();
    w.postMessage = () => {
      throw new Error('DataCloneError');
    };
    const { layout, onMain } = setup(() => w);
    assert.equal(await layout.render('a'), '<svg main>a</svg>');
    assert.deepEqual(onMain, ['a']);
    assert.equal(layout.fellBack, true);
  });

  it('sits behind LayoutCache: a DOT already laid out does not go to the worker again', async () => {
    const { layout, workers } = setup();
    const cache = new LayoutCache(dot => layout.render(dot));
    const first = cache.svg('a');
    await tick();
    workers[0].answerAll();
    assert.equal(await first, '<svg>a</svg>');
    assert.equal(await cache.svg('a'), '<svg>a</svg>');
    assert.equal(layout.workerLayouts, 1);
    assert.deepEqual([cache.misses, cache.hits], [1, 1]);
  });
});
