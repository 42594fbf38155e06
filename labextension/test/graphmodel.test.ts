import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';

import { GraphModel, Transform } from '../src/graph/model';
import { buildView } from '../src/graph/visible';
import { smallPayload } from './fixtures';

describe('GraphModel', () => {
  it('loads a program: its index, inputs, a fresh zoom and direction, and says so', () => {
    const model = new GraphModel();
    const loaded: (string | null)[] = [];
    model.payloadChanged.connect((_, p) => void loaded.push(p?.name ?? null));
    model.setTransform({ scale: 2, tx: 5 });
    model.drawSideways();
    const x = { name: 'x', kind: 'traced', aval: null, value: null, source: null };
    model.load({ ...smallPayload(), inputs: [x] });
    assert.deepEqual(loaded, ['f']);
    assert.ok(model.index);
    assert.deepEqual(model.transform, { scale: 1, tx: 0, ty: 0 });
    assert.equal(model.rankdir, 'TB');
    assert.equal(model.input('x')?.kind, 'traced');
    model.load(null);
    assert.equal(model.index, null);
    assert.deepEqual(loaded, ['f', null]);
  });

  it('zooms about a point, which stays where it is on the canvas, within bounds', () => {
    const model = new GraphModel();
    const seen: Transform[] = [];
    model.transformChanged.connect((_, t) => void seen.push(t));
    model.setTransform({ tx: 10, ty: 20 });
    model.zoomAbout(2, 110, 220);
    const { scale, tx, ty } = model.transform;
    assert.equal(scale, 2);
    // The drawing's point under (110, 220) before the zoom is under it after.
    assert.equal((110 - tx) / scale, (110 - 10) / 1);
    assert.equal((220 - ty) / scale, (220 - 20) / 1);
    model.zoomAbout(1000, 0, 0);
    assert.equal(model.transform.scale, 4);
    assert.equal(seen.length, 3);
  });

  it('shows a view: its open groups, its DOT, the edges by drawn id and the labels in and out', () => {
    const model = new GraphModel();
    model.load(smallPayload());
    const view = buildView(model.index!, [0]);
    let shown = 0;
    model.viewChanged.connect(() => void shown++);
    model.show(view, 'digraph {}');
    assert.equal(shown, 1);
    assert.equal(model.dot, 'digraph {}');
    assert.deepEqual([...model.expanded], [...view.expanded]);
    const e = view.edges[0];
    assert.equal(model.edge(`e_${e.src}_${e.dst}`), e);
    assert.ok(model.edgeLabels(e.dst).ins.length >= 1);
  });

  it('searches the loaded graph, and searches again when another is loaded', () => {
    const model = new GraphModel();
    model.load(smallPayload());
    const queries: string[] = [];
    model.searchChanged.connect((_, q) => void queries.push(q));
    model.search('tanh');
    assert.deepEqual(queries, ['tanh']);
    assert.equal(model.matches.length, 1);
    model.load(null);
    assert.equal(model.matches.length, 0, 'no graph, no match');
  });
});
