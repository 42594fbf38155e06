import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';

import { viewToDot } from '../src/graph/dot';
import { LayoutCache } from '../src/graph/layout';
import { GraphIndex, buildView } from '../src/graph/visible';
import { smallGraph } from './fixtures';

// The Graphviz build the browser uses (WebAssembly), here in Node.
// eslint-disable-next-line @typescript-eslint/no-var-requires
const viz = require('@viz-js/viz') as typeof import('@viz-js/viz');

describe('LayoutCache', () => {
  it('lays out each expansion state once and returns the same layout when it comes back', async () => {
    const instance = await viz.instance();
    const cache = new LayoutCache(dot => instance.renderString(dot, { engine: 'dot', format: 'svg' }));
    const idx = new GraphIndex(smallGraph());
    const collapsed = viewToDot(buildView(idx, [0]));
    const opened = viewToDot(buildView(idx, [0, 1]));
    assert.notEqual(collapsed, opened);
    const first = await cache.svg(collapsed);
    await cache.svg(opened);
    const again = await cache.svg(collapsed); // the group closed again
    assert.equal(again, first);
    assert.match(first, /<svg/);
    assert.deepEqual([cache.misses, cache.hits], [2, 1]);
  });

  it('keeps the most recently used layouts up to its capacity', async () => {
    let renders = 0;
    const cache = new LayoutCache(dot => `<svg>${dot} ${++renders}</svg>`, 2);
    await cache.svg('a');
    await cache.svg('b');
    await cache.svg('a'); // a is now the most recent
    await cache.svg('c'); // evicts b
    assert.equal(cache.size, 2);
    assert.equal(await cache.svg('a'), '<svg>a 1</svg>');
    assert.equal(await cache.svg('b'), '<svg>b 4</svg>', 'b was laid out again');
    assert.equal(renders, 4);
  });
});
