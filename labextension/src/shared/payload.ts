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

/**
 * The payload with its graph inflated (see `jaxviz/render/payload.py`: graphs over
 * 256 KB travel gzipped). Uses the platform's DecompressionStream: no dependency.
 */
export async function inflatePayload(data: unknown): Promise<unknown> {
  const p = data as { graph?: unknown } | null;
  if (!p || typeof p !== 'object' || !isCompressed(p.graph)) {
    return data;
  }
  const raw = Uint8Array.from(atob(p.graph.data), c => c.charCodeAt(0));
  const stream = new Blob([raw]).stream().pipeThrough(new DecompressionStream('gzip'));
  const graph = JSON.parse(await new Response(stream).text());
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
