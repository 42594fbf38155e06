/**
 * The TypeScript views against the Python ones, on real traced programs: the pytest
 * `tests/test_labextension_unit.py` writes, for each program of the test zoo, its
 * MIME payload and what `Graph.view` and the DOT renderer give for several
 * expansions, and points JAXVIZ_PARITY_FIXTURES at the file.
 */

import { strict as assert } from 'node:assert';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';

import { legendKinds, viewToDot } from '../src/graph/dot';
import { groupHeat } from '../src/shared/format';
import { ProgramPayload, payloadProblem } from '../src/shared/payload';
import { GraphIndex, buildView, visibleItems } from '../src/graph/visible';

// eslint-disable-next-line @typescript-eslint/no-var-requires
const viz = require('@viz-js/viz') as typeof import('@viz-js/viz');

interface PyView {
  expanded: number[];
  nodes: number[];
  groups: number[];
  edges: [string, string, number, string][];
  /** Labels of the collapsed boxes (`g<id>`) and expanded clusters (`cluster_g<id>`). */
  labels: { [id: string]: string };
  /** The attributes that make the picture (shape, fill, outline, font size…) of every
   * visible node, box and cluster, as the kernel's DOT has them. */
  styles: { [id: string]: { [key: string]: string } };
}

/** The attributes of every node, box and cluster of our DOT (`"n3" [...]`, and a
 * cluster's `graph [id="cluster_g2" ...]`), unquoted, restricted to `keys`. */
function dotStyles(dot: string, keys: Set<string>): { [id: string]: { [key: string]: string } } {
  const out: { [id: string]: { [key: string]: string } } = {};
  for (const m of dot.matchAll(/^\s*(?:"[ng]\d+"|graph) \[(id="(?:cluster_)?[ng]\d+".*)\]$/gm)) {
    const attrs: { [key: string]: string } = {};
    for (const a of m[1].matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) {
      attrs[a[1]] = a[2].replace(/\\(["\\])/g, '$1');
    }
    out[attrs.id] = Object.fromEntries(Object.entries(attrs).filter(([k]) => keys.has(k)));
  }
  return out;
}

/** Box and cluster labels of our DOT (without the ▸/▾ markers), unquoted. */
function dotLabels(dot: string): { [id: string]: string } {
  const out: { [id: string]: string } = {};
  const unquote = (s: string) => s.replace(/\\(["\\n])/g, (_, c) => (c === 'n' ? '\n' : c));
  for (const m of dot.matchAll(/\[id="((?:cluster_)?g\d+)" class="[^"]*" label="((?:[^"\\]|\\.)*)"/g)) {
    out[m[1]] = unquote(m[2]);
  }
  return out;
}

interface Case {
  name: string;
  payload: ProgramPayload;
  views: PyView[];
  heat: { [gid: string]: { text: string; fill: string; font: string } };
  dot_ids: string[];
  /** The entries of the kernel's legend, in order. */
  legend_kinds: string[];
}

const file = process.env.JAXVIZ_PARITY_FIXTURES;
/** As STYLE_KEYS in tests/test_labextension_unit.py. */
const STYLE_KEYS = new Set([
  'shape',
  'style',
  'fillcolor',
  'color',
  'fontcolor',
  'fontsize',
  'penwidth',
  'peripheries',
  'labeljust'
]);

describe(
  'parity with jaxviz.graph (Python)',
  { skip: file ? false : 'JAXVIZ_PARITY_FIXTURES not set (run from pytest)' },
  () => {
    const cases: Case[] = file ? JSON.parse(readFileSync(file, 'utf-8')) : [];

    it('has cases', () => {
      assert.ok(cases.length >= 5, `${cases.length} cases`);
    });

    for (const c of cases) {
      it(`${c.name}: same visible items and aggregated edges`, () => {
        assert.equal(payloadProblem(c.payload), null);
        const index = new GraphIndex(c.payload.graph);
        for (const pv of c.views) {
          const view = buildView(index, pv.expanded);
          const items = visibleItems(view);
          assert.deepEqual(
            [...items.nodes].sort((a, b) => a - b),
            pv.nodes,
            `nodes at ${pv.expanded}`
          );
          assert.deepEqual(
            [...items.groups].sort((a, b) => a - b),
            pv.groups,
            `groups at ${pv.expanded}`
          );
          const ours = view.edges
            .map(e => [
              e.src,
              e.dst,
              e.avals.length,
              e.avals.length === 1 ? e.avals[0].text : `${e.avals.length} values`
            ])
            .sort();
          assert.deepEqual(ours, [...pv.edges].sort(), `edges at ${pv.expanded}`);
          const dot = viewToDot(view, { markers: false });
          assert.deepEqual(dotLabels(dot), pv.labels, `labels at ${pv.expanded}`);
          assert.deepEqual(dotStyles(dot, STYLE_KEYS), pv.styles, `colours and shapes at ${pv.expanded}`);
        }
      });

      it(`${c.name}: the same legend entries as the kernel's drawing`, () => {
        assert.deepEqual(legendKinds(c.payload.graph), c.legend_kinds);
      });

      it(`${c.name}: same cost heat as the kernel's renderer`, () => {
        for (const [gid, heat] of Object.entries(c.heat)) {
          const h = groupHeat(c.payload.graph.groups, Number(gid));
          assert.ok(h, `heat of group ${gid}`);
          assert.equal(h!.text, heat.text);
          assert.equal(h!.fill, heat.fill);
          assert.equal(h!.font, heat.font);
        }
      });

      it(`${c.name}: the initial view lays out with the kernel's DOT ids`, async () => {
        const graphviz = await viz.instance();
        const index = new GraphIndex(c.payload.graph);
        const svg = graphviz.renderString(viewToDot(buildView(index, c.payload.expanded)), { format: 'svg' });
        const ids = [...svg.matchAll(/<g id="([ng]\d+)" class="node/g)].map(m => m[1]).sort();
        assert.deepEqual(ids, [...c.dot_ids].sort());
      });
    }
  }
);
