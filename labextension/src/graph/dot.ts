/**
 * View → Graphviz DOT, with the same ids, shapes and colours as the kernel's
 * renderer (`jaxviz/render/dot.py`, the reference: the parity tests check this one
 * against it): clusters `cluster_g<id>` for expanded groups, boxes `g<id>` for collapsed
 * ones, `n<id>` for nodes. Colours, shapes and limits: `jaxviz/visual.json` (./visual).
 */

import { GraphJSON } from '../shared/payload';
import { fmtCostBytes, groupHeat, shortSource, sizeText } from '../shared/format';
import {
  BOX_FILL,
  CLUSTER,
  CLUSTER_FILL,
  COLLECTIVE_PRIMITIVES,
  COMM_MARK,
  COMM_STYLE,
  DOT_DENSE,
  DOT_EDGE,
  DOT_GRAPH,
  DOT_NODE,
  GROUP_FILL,
  LEGEND,
  LEGEND_ORDER,
  MARK_STYLE,
  LegendSpec,
  MAX_CURVED_EDGES,
  MAX_LABELLED_EDGES,
  PHASE,
  REPEAT_BOX,
  REPEAT_CLUSTER_STYLE
} from '../shared/visual';
import {
  ItemId,
  View,
  VisibleEdge,
  edgeIsWeak,
  edgeLabel,
  groupItem,
  itemInGroup,
  nodeItem,
  openChain,
  phaseOrder
} from './visible';
import { ROW_ANCHORS, edgeRows, loopEdges, loopsBreakRows, rowAnchorEdges, rowMinlen } from './ranks';

/** The legend a graph is drawn with: the bundled visual language, each entry overridden by
 * what the payload's kernel sent (an output traced by another jaxviz version keeps the
 * colours of its static drawing). */
export function legendOf(graph: GraphJSON): { [kind: string]: LegendSpec } {
  const legend: { [kind: string]: LegendSpec } = {};
  for (const [kind, spec] of Object.entries(LEGEND)) {
    legend[kind] = { ...spec, ...(graph.legend?.[kind] ?? {}) };
  }
  return legend;
}

/** A DOT double-quoted string. Backslashes are doubled so that user text cannot
 * inject Graphviz escapes; newlines become centred line breaks. */
export function quote(s: string): string {
  return '"' + String(s).replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\r?\n/g, '\\n') + '"';
}

function attrs(a: { readonly [key: string]: string | undefined }): string {
  const parts: string[] = [];
  for (const [k, v] of Object.entries(a)) {
    if (v !== undefined) {
      parts.push(`${k}=${quote(v)}`);
    }
  }
  return `[${parts.join(' ')}]`;
}

export interface DotOptions {
  /** Label edges with shapes (default: when there are at most MAX_LABELLED_EDGES). */
  edgeLabels?: boolean;
  /** Mark expanded clusters/collapsed boxes with ▾/▸ (default true). */
  markers?: boolean;
  /** The rank direction (default TB: data flows down; LR: to the right). */
  rankdir?: 'TB' | 'LR';
  /** Hold the program's inputs on the top row and its outputs on the bottom row, an open
   * loop's node as its entry (`ranks.ts`; default: where a loop's cycle breaks the rows,
   * `loopsBreakRows`). Elsewhere dot mostly keeps the rows by itself, and the anchors
   * would only move everything: the widget adds them where it did not (`rowsProblem`). */
  rows?: boolean;
}

/** The DOT lines of a view's items: shared by the whole view and a group's own drawing. */
class DotWriter {
  readonly graph: GraphJSON;
  readonly lines: string[] = [];
  readonly labelled: boolean;
  private readonly legend: ReturnType<typeof legendOf>;
  private readonly markers: boolean;

  /** Whether the rows are held (`DotOptions.rows`). */
  readonly rows: boolean;

  constructor(
    private readonly view: View,
    private readonly options: DotOptions
  ) {
    this.graph = view.index.graph;
    this.rows = options.rows ?? loopsBreakRows(view);
    this.legend = legendOf(this.graph);
    this.markers = options.markers ?? true;
    this.labelled = options.edgeLabels ?? view.edges.length <= MAX_LABELLED_EDGES;
  }

  header(): void {
    const lines = this.lines;
    lines.push(`digraph ${quote(this.graph.name || 'program')} {`);
    lines.push(`  graph ${attrs({ ...DOT_GRAPH, rankdir: this.options.rankdir ?? 'TB' })}`);
    lines.push(`  node ${attrs(DOT_NODE)}`);
    lines.push(`  edge ${attrs(DOT_EDGE)}`);
  }

  private boxLine(child: number, indent: string): void {
    this.lines.push(`${indent}${quote(groupItem(child))} ${attrs(boxAttrs(this.graph, child, this.markers))}`);
  }

  private nodeLine(nid: number, indent: string): void {
    this.lines.push(`${indent}${quote(nodeItem(nid))} ${attrs(nodeAttrs(this.graph, nid, this.legend))}`);
  }

  /** As render/dot.py: open groups that only wrap one another are one cluster, the
   * outermost's, titled by their path; it holds what the innermost holds. */
  cluster(child: number, indent: string): void {
    const chain = openChain(this.view, child);
    this.lines.push(`${indent}subgraph ${quote(`cluster_g${child}`)} {`);
    this.lines.push(`${indent}  graph ${attrs(chainClusterAttrs(this.graph, chain, this.markers))}`);
    this.emitGroup(chain[chain.length - 1], indent + '  ');
    this.lines.push(`${indent}}`);
  }

  emitGroup(gid: number, indent: string): void {
    const { graph, view } = this;
    const g = graph.groups[gid];
    const isRoot = gid === (graph.root ?? 0);
    const ranked: { source: number[]; sink: number[] } = { source: [], sink: [] };
    for (const child of g.groups) {
      const cg = graph.groups[child];
      if (isRoot && !view.expanded.has(child) && (cg.kind === 'inputs' || cg.kind === 'outputs')) {
        ranked[cg.kind === 'inputs' ? 'source' : 'sink'].push(child);
      } else if (view.expanded.has(child)) {
        this.cluster(child, indent);
      } else {
        this.boxLine(child, indent);
      }
    }
    if (isRoot) {
      this.emitRootRanks(g.nodes, ranked, indent);
      g.nodes.filter(n => graph.nodes[n].kind === 'eqn').forEach(nid => this.nodeLine(nid, indent));
      return;
    }
    g.nodes.forEach(nid => this.nodeLine(nid, indent));
  }

  /** The program's inputs on top, its outputs at the bottom. */
  private emitRootRanks(nodes: number[], ranked: { source: number[]; sink: number[] }, indent: string): void {
    const ranks: [string[], 'source' | 'sink'][] = [
      [['input', 'const'], 'source'],
      [['output'], 'sink']
    ];
    for (const [kinds, rank] of ranks) {
      const members = nodes.filter(n => kinds.includes(this.graph.nodes[n].kind));
      if (members.length || ranked[rank].length) {
        this.lines.push(`${indent}subgraph ${quote(`rank_${rank}`)} {`);
        this.lines.push(`${indent}  graph [rank=${rank}]`);
        if (this.rows) {
          this.lines.push(`${indent}  ${quote(ROW_ANCHORS[rank])} ${INVISIBLE_POINT}`);
        }
        ranked[rank].forEach(child => this.boxLine(child, indent + '  '));
        members.forEach(nid => this.nodeLine(nid, indent + '  '));
        this.lines.push(`${indent}}`);
      }
    }
  }

  layoutLimits(): void {
    const edges = this.view.edges.length;
    if (edges > MAX_LABELLED_EDGES) {
      // As render/dot.py: straight edges in dense views (spline routing is most of the cost).
      const splines = edges > MAX_CURVED_EDGES ? 'line' : 'polyline';
      this.lines.push(`  graph ${attrs({ ...DOT_DENSE, splines })}`);
    }
  }

  /** An edge's line; `src`/`dst`: the DOT names of its ends when they are not the items;
   * `ranks`: whether it ranks its ends (not a loop's back edge), `minlen` how many
   * (`ranks.ts`). */
  edgeLine(e: VisibleEdge, withLabel: boolean, src = e.src, dst = e.dst, ranks = true, minlen?: number): void {
    const a: { [key: string]: string | undefined } = { id: `e_${e.src}_${e.dst}`, class: 'jaxviz-edge' };
    if (withLabel) {
      a.label = edgeLabel(e);
    }
    if (!ranks) {
      a.constraint = 'false';
    } else if (minlen) {
      a.minlen = String(minlen);
    }
    if (edgeIsWeak(e)) {
      a.style = 'dashed';
      a.color = this.legend.weak.color;
      a.class = 'jaxviz-edge jaxviz-weak';
    }
    this.lines.push(`  ${quote(src)} -> ${quote(dst)} ${attrs(a)}`);
  }
}

const INVISIBLE_POINT = '[label="" shape=point style=invis width=0 height=0]';
const RANK_ONLY = '[style=invis weight=0]';

export function viewToDot(view: View, options: DotOptions = {}): string {
  const w = new DotWriter(view, options);
  const lines = w.lines;
  w.header();
  w.emitGroup(w.graph.root ?? 0, '  ');
  w.layoutLimits();
  const loops = w.rows ? loopEdges(view) : { back: new Set<VisibleEdge>(), exits: [] };
  const rows = w.rows ? edgeRows(view) : { source: new Set<ItemId>(), sink: new Set<ItemId>() };
  for (const e of view.edges) {
    const row = rows.source.has(e.src) ? e.dst : rows.sink.has(e.dst) ? e.src : null;
    w.edgeLine(e, w.labelled, e.src, e.dst, !loops.back.has(e), row ? (rowMinlen(view, row) ?? undefined) : undefined);
  }
  // As render/dot.py: forward above backward above update, an invisible anchor between.
  phaseOrder(view).forEach(([ends, starts], k) => {
    const anchor = quote(`phase_order_${k}`);
    lines.push(`  ${anchor} ${INVISIBLE_POINT}`);
    ends.forEach(item => lines.push(`  ${quote(item)} -> ${anchor} [style=invis]`));
    starts.forEach(item => lines.push(`  ${anchor} -> ${quote(item)} [style=invis]`));
  });
  // As render/dot.py: what reads a loop's results below its body; the rows of inputs
  // and outputs (ranks.ts). They only rank: no pull on where things go.
  loops.exits.forEach(([ends, readers], k) => {
    const anchor = quote(`loop_exit_${k}`);
    lines.push(`  ${anchor} ${INVISIBLE_POINT}`);
    ends.forEach(item => lines.push(`  ${quote(item)} -> ${anchor} ${RANK_ONLY}`));
    readers.forEach(item => lines.push(`  ${anchor} -> ${quote(item)} ${RANK_ONLY}`));
  });
  for (const [a, b] of w.rows ? rowAnchorEdges(view, loops.back) : []) {
    const minlen = rowMinlen(view, a === ROW_ANCHORS.source ? b : a);
    lines.push(`  ${quote(a)} -> ${quote(b)} [style=invis weight=0${minlen ? ` minlen=${minlen}` : ''}]`);
  }
  lines.push('}');
  return lines.join('\n') + '\n';
}

/** The DOT name of the invisible stand-in for an outside item that an edge into (`in`)
 * or out of (`out`) an opened group comes from or goes to. */
export function stubName(item: ItemId, side: 'in' | 'out'): string {
  return `stub_${side}_${item}`;
}

/**
 * The DOT of one expanded group of `view` drawn on its own (for splicing into a drawing
 * where it was a box): its cluster, with the same ids, labels and colours as in the whole
 * view's DOT, the edges among its items, and each edge that crosses its border drawn
 * from (or to) an invisible stand-in for the outside item, on the first rank for inputs
 * and the last for outputs: inputs enter from the top (left when drawn left to right),
 * outputs leave at the bottom. Crossing edges are not labelled: their outside part
 * keeps the label it had. `order`: the outside items in the order their edges meet the
 * group's box along its border (left to right; top to bottom when drawn left to right),
 * kept by the stand-ins so that the edges do not cross where they join.
 */
export function groupToDot(
  view: View,
  groupId: number,
  options: DotOptions = {},
  order: { in?: ItemId[]; out?: ItemId[] } = {}
): string {
  const w = new DotWriter(view, options);
  const lines = w.lines;
  const inGroup = (item: ItemId) => itemInGroup(view.index, item, groupId);
  w.header();
  w.cluster(groupId, '  ');
  const crossing = view.edges.filter(e => inGroup(e.src) !== inGroup(e.dst));
  for (const side of ['in', 'out'] as const) {
    const ends = new Set(crossing.map(e => (side === 'in' ? e.src : e.dst)).filter(item => !inGroup(item)));
    const rank = (item: ItemId) => {
      const k = order[side]?.indexOf(item) ?? -1;
      return k < 0 ? Infinity : k;
    };
    const outside = [...ends].sort((a, b) => rank(a) - rank(b));
    if (outside.length) {
      lines.push(`  subgraph ${quote(`stubs_${side}`)} {`);
      lines.push(`    graph [rank=${side === 'in' ? 'source' : 'sink'}]`);
      outside.forEach(item =>
        lines.push(`    ${quote(stubName(item, side))} [label="" shape=point style=invis width=0.01 height=0.01]`)
      );
      // Flat edges keep the stand-ins in this order across their rank.
      for (let i = 0; i + 1 < outside.length && order[side]; i++) {
        lines.push(
          `    ${quote(stubName(outside[i], side))} -> ${quote(stubName(outside[i + 1], side))} [style=invis]`
        );
      }
      lines.push('  }');
    }
  }
  w.layoutLimits();
  for (const e of view.edges) {
    if (inGroup(e.src) && inGroup(e.dst)) {
      w.edgeLine(e, w.labelled);
    } else if (inGroup(e.dst)) {
      w.edgeLine(e, false, stubName(e.src, 'in'), e.dst);
    } else if (inGroup(e.src)) {
      w.edgeLine(e, false, e.src, stubName(e.dst, 'out'));
    }
  }
  lines.push('}');
  return lines.join('\n') + '\n';
}

/** Primitives that run sub-programs: a literal operand (a scan's initial carry 0.0) next
 * to their name reads as a version ("scan 0.0"); it stays in the tooltip. */
const HIGHER_ORDER = new Set([
  'scan',
  'while',
  'cond',
  'pjit',
  'jit',
  'closed_call',
  'core_call',
  'remat',
  'checkpoint',
  'custom_jvp_call',
  'custom_vjp_call',
  'custom_vjp_call_jaxpr',
  'shard_map',
  'xla_call',
  'xla_pmap'
]);

/** ``⇄ 3 collectives · 1.2 MiB · 40%``: what a group's compiled collectives move, and its
 * share of the program's (as costs.comm_label); null when it moves nothing. */
export function commLabel(groups: { collectives?: number; comm_bytes?: number }[], gid: number): string | null {
  const g = groups[gid];
  if (!g.collectives) {
    return null;
  }
  const total = groups[0]?.comm_bytes ?? 0;
  const share = total ? (g.comm_bytes ?? 0) / total : 0;
  const pct = share >= 0.01 ? `${Math.round(share * 100)}%` : '<1%';
  const noun = g.collectives === 1 ? 'collective' : 'collectives';
  return `${COMM_MARK} ${g.collectives} ${noun} · ${fmtCostBytes(g.comm_bytes ?? 0)} · ${pct}`;
}

/** ``⇄ 1 collective · 795 KiB``: the compiled collectives an open group holds itself, not
 * inside one of its groups (as costs.own_comm_label); null when there are none. */
export function ownCommLabel(
  groups: { collectives?: number; comm_bytes?: number; groups: number[] }[],
  gid: number
): string | null {
  const g = groups[gid];
  const inner = (key: 'collectives' | 'comm_bytes') => g.groups.reduce((sum, c) => sum + (groups[c][key] ?? 0), 0);
  const n = (g.collectives ?? 0) - inner('collectives');
  if (n <= 0) {
    return null;
  }
  const nbytes = (g.comm_bytes ?? 0) - inner('comm_bytes');
  return `${COMM_MARK} ${n} ${n === 1 ? 'collective' : 'collectives'} · ${fmtCostBytes(nbytes)}`;
}

/** An equation's label: its primitive, with its literal operands for plain operations
 * ("mul 2.0"). */
export function eqnLabel(n: { label: string; primitive: string | null; literals: string[] }): string {
  const lits = n.literals.length && !HIGHER_ORDER.has(n.primitive ?? n.label) ? ` ${n.literals.join(', ')}` : '';
  return `${n.label}${lits}`;
}

/** A collapsed group's box: its DOT attributes (the canvas draws with the same). */
export function boxAttrs(graph: GraphJSON, child: number, markers = true): { [key: string]: string } {
  return mark(plainBoxAttrs(graph, child, markers), graph, 'g', child);
}

function plainBoxAttrs(graph: GraphJSON, child: number, markers: boolean): { [key: string]: string } {
  const cg = graph.groups[child];
  const where = cg.source ? `\n${shortSource(cg.source)}` : '';
  const size = cg.kind === 'inputs' || cg.kind === 'outputs' ? '' : `\n${sizeText(graph.groups, child)}`;
  const a: { [key: string]: string } = {
    id: groupItem(child),
    class: `jaxviz-group jaxviz-group-${cg.kind}`,
    label: `${markers ? '▸ ' : ''}${cg.repeat || cg.name}${size}${where}`,
    shape: 'box3d',
    style: 'filled',
    fillcolor: GROUP_FILL[cg.kind] ?? BOX_FILL,
    ...(cg.kind === 'repeat' ? REPEAT_BOX : {}),
    ...(cg.kind === 'phase' ? PHASE : {})
  };
  if (cg.parent !== null && graph.groups[cg.parent].kind === 'repeat') {
    // As render/dot.py: the layers of an open fold in one straight column.
    a.group = `repeat_g${cg.parent}`;
  }
  const heat = groupHeat(graph.groups, child);
  if (heat) {
    a.label += `\n${heat.text}`;
    a.fillcolor = heat.fill;
    a.fontcolor = heat.font;
  }
  const comm = commLabel(graph.groups, child); // as render/dot.py: the outline, beside the fill
  if (comm) {
    a.label += `\n${comm}`;
    Object.assign(a, COMM_STYLE);
  }
  return a;
}

/** An expanded group's cluster: its DOT graph attributes (the canvas draws with the same). */
export function clusterAttrs(graph: GraphJSON, child: number, markers = true): { [key: string]: string } {
  return mark(plainClusterAttrs(graph, child, markers), graph, 'g', child, true);
}

/** The cluster of open groups that only wrap one another (`openChain`, outermost first):
 * the outermost's look and id, titled by their path and the innermost's own title
 * (`forward › loss_fn › GPT (584 eqns) · cell line 5`, as render/dot.py's chain_label). */
export function chainClusterAttrs(graph: GraphJSON, chain: number[], markers = true): { [key: string]: string } {
  const path = chainPath(graph, chain).map(name => `${name} › `);
  const plain = plainClusterAttrs(graph, chain[0], markers);
  plain.label = `${markers ? '▾ ' : ''}${path.join('')}${clusterTitle(graph, chain[chain.length - 1])}`;
  return mark(plain, graph, 'g', chain[0], true);
}

/** The names a chain's title gives the groups before its innermost (as graph.py's
 * Graph.chain_path): a repeat text that only adds the next group's name (`forward ·
 * d_loss_fn`, followed by `d_loss_fn`) gives way to the group's name. */
function chainPath(graph: GraphJSON, chain: number[]): string[] {
  return chain.slice(0, -1).map((gid, k) => {
    const g = graph.groups[gid];
    const next = graph.groups[chain[k + 1]];
    return g.repeat && g.repeat.endsWith(` · ${next.repeat || next.name}`) ? g.name : g.repeat || g.name;
  });
}

/** An open group's own title: `block ×48 (48 × 107 eqns) · cell line 5` (as
 * render/dot.py's cluster_label). */
function clusterTitle(graph: GraphJSON, gid: number): string {
  const g = graph.groups[gid];
  const where = g.source ? ` · ${shortSource(g.source)}` : '';
  const comm = ownCommLabel(graph.groups, gid);
  return `${g.repeat || g.name} (${sizeText(graph.groups, gid)})${where}${comm ? ` · ${comm}` : ''}`;
}

function plainClusterAttrs(graph: GraphJSON, child: number, markers: boolean): { [key: string]: string } {
  const cg = graph.groups[child];
  return {
    id: `cluster_g${child}`,
    class: `jaxviz-cluster jaxviz-group-${cg.kind}`,
    label: `${markers ? '▾ ' : ''}${clusterTitle(graph, child)}`,
    style: cg.kind === 'repeat' ? REPEAT_CLUSTER_STYLE : 'rounded,filled',
    fillcolor: GROUP_FILL[cg.kind] ?? CLUSTER_FILL,
    ...CLUSTER,
    ...(cg.kind === 'phase' ? PHASE : {})
  };
}

/** A node's DOT attributes (the canvas draws with the same). */
export function nodeAttrs(
  graph: GraphJSON,
  nid: number,
  legend: { [kind: string]: LegendSpec }
): { [key: string]: string } {
  return mark(plainNodeAttrs(graph, nid, legend), graph, 'n', nid);
}

/** As render/dot.py's _mark: a diff's status colours the item (a cluster: its outline
 * only), a removed one is dashed, and its note joins the label and the tooltip. */
function mark(
  attrs: { [key: string]: string },
  graph: GraphJSON,
  kind: 'n' | 'g',
  id: number,
  cluster = false
): { [key: string]: string } {
  const status = graph.marks?.[kind === 'n' ? 'nodes' : 'groups'][String(id)];
  if (status === undefined) {
    return attrs;
  }
  const style = MARK_STYLE[status];
  const out: { [key: string]: string } = {
    ...attrs,
    color: style.color,
    penwidth: '2',
    class: `${attrs.class ?? ''} jaxviz-${status}`.trim()
  };
  if (!cluster) {
    out.fillcolor = style.fillcolor;
  }
  if (status === 'removed') {
    out.style = `${attrs.style ?? 'filled'},dashed`;
  }
  const note = graph.marks?.notes[`${kind}${id}`];
  if (note) {
    out.label = `${attrs.label ?? ''}${cluster ? ' · ' : '\n'}${note}`;
    out.tooltip = `${attrs.tooltip ?? ''}\n${status}: ${note}`;
  }
  return out;
}

function plainNodeAttrs(
  graph: GraphJSON,
  nid: number,
  legend: { [kind: string]: LegendSpec }
): { [key: string]: string } {
  const n = graph.nodes[nid];
  const where = n.source ? `\n${shortSource(n.source)}` : '';
  const base = { id: nodeItem(nid), class: `jaxviz-${n.kind}` };
  const placed = n.params.sharding ? `\n${n.params.sharding}` : ''; // an input's or output's sharding
  if (n.kind === 'eqn') {
    const collective = n.primitive !== null && COLLECTIVE_PRIMITIVES.has(n.primitive) && legend.collective;
    return {
      ...base,
      // not themed as the other equations (base.css): a communication node keeps its colour
      class: collective ? 'jaxviz-collective' : base.class,
      label: `${eqnLabel(n)}${where}`,
      shape: 'box',
      style: 'rounded,filled',
      fillcolor: collective ? legend.collective.color : legend.eqn.color
    };
  }
  if (n.kind === 'output') {
    const look = legend[n.input_kind === 'lost' ? 'lost' : 'output']; // lost: computed, dropped
    return {
      ...base,
      label: `${n.label}\n${n.outputs.length ? n.outputs[0].text : ''}${placed}`,
      shape: look.shape,
      style: 'style' in look ? String(look.style) : 'filled',
      fillcolor: look.color
    };
  }
  const kind = n.input_kind && legend[n.input_kind] ? n.input_kind : 'traced';
  const aval = n.outputs.length ? `\n${n.outputs[0].text}` : '';
  return {
    ...base,
    class: `jaxviz-${n.kind} jaxviz-input-${kind}`,
    label: `${n.label}${aval}${placed}`,
    shape: legend[kind].shape,
    style: 'filled',
    fillcolor: legend[kind].color
  };
}

/** The legend kinds a graph uses (as the kernel's renderer chooses them), for the
 * view's HTML legend: the legend drawn in DOT is the kernel's, in its static drawing. */
export function legendKinds(graph: GraphJSON): string[] {
  const kinds = new Set<string>(['output']);
  for (const n of graph.nodes) {
    if (n.input_kind) {
      kinds.add(n.input_kind);
    }
    if (n.primitive !== null && COLLECTIVE_PRIMITIVES.has(n.primitive)) {
      kinds.add('collective');
    }
  }
  for (const e of graph.edges.slice(0, 5000)) {
    if (e.aval.weak_type) {
      kinds.add('weak');
      break;
    }
  }
  if (graph.groups.some(g => g.kind === 'repeat')) {
    kinds.add('repeat');
  }
  return LEGEND_ORDER.filter(k => kinds.has(k));
}
