/**
 * The visual language, read from `jaxviz/visual.json`: the one file that the kernel's
 * renderers (`jaxviz/visual.py`) and this extension draw with, bundled into the lab
 * extension by webpack and into the standalone viewer by esbuild. Change a colour, a
 * shape, the heat scale or the legend's wording there, never here.
 */

import visual from '../../jaxviz/visual.json';

import { LegendEntry } from './model';

/** DOT attributes, values as Graphviz reads them. */
export type DotAttrs = { readonly [key: string]: string };

/** A legend entry: its colour and shape, its short text and its tooltip (`label`). */
export interface LegendSpec extends LegendEntry {
  text: string;
}

/** One colour/shape per kind of value (inputs by kind, outputs, equations, groups, folds,
 * weak types), as every legend shows them. */
export const LEGEND: { readonly [kind: string]: LegendSpec } = visual.legend;
/** The order of the legend's entries. */
export const LEGEND_ORDER: readonly string[] = visual.legend_order;

/** A group's box or open cluster, by kind; `BOX_FILL`/`CLUSTER_FILL` for other kinds. */
export const GROUP_FILL: { readonly [kind: string]: string } = visual.group_fill;
export const BOX_FILL: string = visual.box_fill;
export const CLUSTER_FILL: string = visual.cluster_fill;
/** An open group's outline and label. */
export const CLUSTER: DotAttrs = visual.cluster;
/** A train step's phases (forward, backward, update) stand out: a heavier outline and a
 * bigger label, as a box and as an open group. */
export const PHASE: DotAttrs = visual.phase;
/** A "block ×48" box is drawn as a stack (a double outline), also when cost colours its
 * fill; opened, its cluster has a dashed outline. */
export const REPEAT_BOX: DotAttrs = visual.repeat_box;
export const REPEAT_CLUSTER_STYLE: string = visual.repeat_cluster_style;

/** Graph, node and edge defaults of every drawing; the layout's limits on dense views;
 * the legend's cluster. */
export const DOT_GRAPH: DotAttrs = visual.dot.graph;
export const DOT_NODE: DotAttrs = visual.dot.node;
export const DOT_EDGE: DotAttrs = visual.dot.edge;
export const DOT_DENSE: DotAttrs = visual.dot.dense;
export const LEGEND_CLUSTER: DotAttrs = visual.dot.legend_cluster;
export const LEGEND_FONTSIZE: string = visual.dot.legend_fontsize;

/** Beyond this many edges the avals move to the tooltips and the layout's iteration
 * limits are lowered (edge labels are what makes dot slow on big views); beyond
 * MAX_CURVED_EDGES edges are straight. */
export const MAX_LABELLED_EDGES: number = visual.edges.max_labelled;
export const MAX_CURVED_EDGES: number = visual.edges.max_curved;

/** The cost heat scale (yellow to brown), the tenfolds of share it spans, the program
 * size below which nothing is shaded, and its text colours. */
export const HEAT_STOPS: readonly string[] = visual.heat.stops;
export const HEAT_DECADES: number = visual.heat.decades;
export const HEAT_MIN_FLOPS: number = visual.heat.min_flops;
export const HEAT_LIGHT_TEXT_ABOVE: number = visual.heat.light_text_above;
export const HEAT_LIGHT_TEXT: string = visual.heat.light_text;
export const HEAT_DARK_TEXT: string = visual.heat.dark_text;

/** A group whose compiled collectives move data: its box's outline (the fill stays the
 * FLOP heat) and the mark before its communication line; the primitives drawn as
 * communication nodes (the legend's "collective"). */
export const COMM_STYLE: DotAttrs = { color: visual.communication.color, penwidth: visual.communication.penwidth };
export const COMM_MARK: string = visual.communication.mark;
export const COLLECTIVE_PRIMITIVES: ReadonlySet<string> = new Set(visual.communication.primitives);

/** A diff's statuses: the fill and outline of what was added, removed or changed. */
export const MARK_STYLE: { readonly [status: string]: { fillcolor: string; color: string } } = visual.marks;
