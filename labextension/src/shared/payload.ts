/**
 * The JSON the kernel sends: the program payload (MIME type
 * `application/vnd.jaxviz+json`, see `jaxviz/render/payload.py`) with the graph
 * model of `jaxviz/graph.py` (schema "jaxviz.graph", version 1), and the messages
 * of the "jaxviz" comm (see `jaxviz/ipython/bridge.py`): their types are generated from
 * `jaxviz/schema/messages.json`.
 */

import type { CompressedGraph, GraphJSON, ProgramPayload as ShippedPayload } from './messages';

export const MIME_TYPE = 'application/vnd.jaxviz+json';
export const COMM_TARGET = 'jaxviz';

// The JSON's types, generated from jaxviz/schema/messages.json (see build-schema.mjs).
export type {
  Aval,
  CompileCause,
  CompileEvent,
  CompressedGraph,
  DeviceInfo,
  DiffMessage,
  Event,
  EventMessage,
  EventsMessage,
  FrontendMessage,
  FunctionInfo,
  GraphEdge,
  GraphGroup,
  GraphJSON,
  GraphMessage,
  GraphNode,
  InputJSON,
  KernelMessage,
  LegendEntry,
  NodeKind,
  SnapshotMessage,
  SourceLoc,
  StaleEvent
} from './messages';
export type { ShippedPayload };

/** A program payload as the view reads it: its graph inflated (see `inflatePayload`). */
export interface ProgramPayload extends Omit<ShippedPayload, 'graph'> {
  graph: GraphJSON;
}

function isCompressed(g: unknown): g is CompressedGraph {
  return !!g && typeof g === 'object' && (g as CompressedGraph).encoding === 'gzip+base64';
}

/** A graph as a big one travels: each distinct source location and aval written once, in
 * `sources` and `avals`, nodes, edges and groups holding indices into them. */
interface GraphWithTables {
  sources?: unknown[];
  avals?: unknown[];
  nodes: { source: unknown; outputs: unknown[] }[];
  edges: { aval: unknown }[];
  groups: { source: unknown }[];
}

/** Items written as columns, one list per field (`Graph.to_columns`). */
type Columns = Record<string, unknown[]>;

/** The items of `columns` as one object each: `{label: [a, b]}` → `[{label: a}, {label: b}]`;
 * items written one object each (notebooks saved before columns) as they are. */
function asRows<T>(items: T[] | Columns): T[] {
  if (Array.isArray(items)) {
    return items;
  }
  const fields = Object.entries(items);
  const count = fields.length ? fields[0][1].length : 0;
  const rows = new Array<T>(count);
  for (let i = 0; i < count; i++) {
    const row: Record<string, unknown> = {};
    for (const [field, values] of fields) {
      row[field] = values[i];
    }
    rows[i] = row as T;
  }
  return rows;
}

/** A big graph as it travels, its items in columns or (saved before) one object each. */
type ShippedGraph = Omit<GraphWithTables, 'nodes' | 'edges' | 'groups'> & {
  [items in 'nodes' | 'edges' | 'groups']: GraphWithTables[items] | Columns;
};

/** The graph with one object per item (as `as_rows` in `jaxviz/render/payload.py`). */
function withRows(graph: ShippedGraph): GraphWithTables {
  return { ...graph, nodes: asRows(graph.nodes), edges: asRows(graph.edges), groups: asRows(graph.groups) };
}

/** The graph JSON in full: each index into its tables replaced by the entry (as
 * `without_tables` in `jaxviz/render/payload.py`); a graph without tables as it is. */
function withoutTables(graph: GraphWithTables): unknown {
  const { sources, avals } = graph;
  if (!sources || !avals) {
    return graph;
  }
  for (const item of [...graph.nodes, ...graph.groups]) {
    if (typeof item.source === 'number') {
      item.source = sources[item.source];
    }
  }
  for (const node of graph.nodes) {
    node.outputs = node.outputs.map(i => avals[i as number]);
  }
  for (const edge of graph.edges) {
    edge.aval = avals[edge.aval as number];
  }
  delete graph.sources;
  delete graph.avals;
  return graph;
}

/**
 * The payload with its graph inflated (see `jaxviz/render/payload.py`: big graphs travel
 * gzipped, their items in columns, their source locations and avals in tables). Uses the
 * platform's DecompressionStream: no dependency.
 */
export async function inflatePayload(data: unknown): Promise<unknown> {
  const p = data as { graph?: unknown } | null;
  if (!p || typeof p !== 'object' || !isCompressed(p.graph)) {
    return data;
  }
  const raw = Uint8Array.from(atob(p.graph.data), c => c.charCodeAt(0));
  const stream = new Blob([raw]).stream().pipeThrough(new DecompressionStream('gzip'));
  const graph = withoutTables(withRows(JSON.parse(await new Response(stream).text()) as ShippedGraph));
  return { ...p, graph };
}

/** Why a payload cannot be shown, or null when it can. */
export function payloadProblem(data: unknown): string | null {
  const p = data as ProgramPayload | null;
  if (!p || typeof p !== 'object') {
    return 'no jaxviz payload';
  }
  if (p.schema !== 'jaxviz.program') {
    return `unknown payload schema ${JSON.stringify(p.schema)}`;
  }
  if (p.version !== 1) {
    return `payload version ${p.version} is newer than this extension understands (1)`;
  }
  if (p.graph === null && p.graph_omitted) {
    return `the graph was not sent to the browser (${p.graph_omitted})`;
  }
  const g = p.graph;
  if (!g || !Array.isArray(g.nodes) || !Array.isArray(g.edges) || !Array.isArray(g.groups)) {
    return 'the payload has no graph';
  }
  if (g.version !== 1) {
    return `graph version ${g.version} is newer than this extension understands (1)`;
  }
  return null;
}

/**
 * Whether two outputs' payloads show the same program the same way: a display the
 * kernel updates with dot's static drawing added (`program_mimebundles`) carries the
 * payload it showed first, unchanged, where dot's fit kept the view.
 */
export function samePayload(a: unknown, b: unknown): boolean {
  return a === b || (a !== undefined && b !== undefined && JSON.stringify(a) === JSON.stringify(b));
}
