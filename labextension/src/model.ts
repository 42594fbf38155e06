/**
 * The JSON the kernel sends: the program payload (MIME type
 * `application/vnd.jaxviz+json`, see `jaxviz/render/payload.py`) with the graph
 * model of `jaxviz/graph.py` (schema "jaxviz.graph", version 1), and the messages
 * of the "jaxviz" comm (see `jaxviz/bridge.py`).
 */

export const MIME_TYPE = 'application/vnd.jaxviz+json';
export const COMM_TARGET = 'jaxviz';

export interface Aval {
  shape: number[];
  dtype: string;
  weak_type: boolean;
  text: string;
}

export interface SourceLoc {
  file: string;
  line: number;
  function: string;
  cell_line: number | null;
  /** "In[5]": the notebook cell a function was defined in (absent in older payloads). */
  cell?: string | null;
  text: string | null;
}

export type NodeKind = 'eqn' | 'input' | 'const' | 'output';

export interface GraphNode {
  id: number;
  kind: NodeKind;
  label: string;
  group: number;
  primitive: string | null;
  input_kind: string | null;
  params: { [key: string]: string };
  outputs: Aval[];
  literals: string[];
  source: SourceLoc | null;
  /** Estimated cost (jaxviz.costs), when computed. */
  flops?: number;
  bytes?: number;
}

export interface GraphEdge {
  src: number;
  dst: number;
  aval: Aval;
  var: string;
}

export interface GraphGroup {
  id: number;
  name: string;
  kind: string;
  parent: number | null;
  groups: number[];
  nodes: number[];
  n_eqns: number;
  source: SourceLoc | null;
  repeat: string | null;
  flops?: number;
  bytes?: number;
}

export interface LegendEntry {
  color: string;
  shape: string;
  label: string;
}

export interface GraphJSON {
  schema: string;
  version: number;
  name: string;
  legend: { [kind: string]: LegendEntry };
  nodes: GraphNode[];
  edges: GraphEdge[];
  groups: GraphGroup[];
  root: number;
}

export interface InputJSON {
  name: string;
  kind: string;
  aval: Aval | null;
  value: string | null;
  source: string | null;
}

export interface ProgramPayload {
  schema: string;
  version: number;
  name: string;
  summary: string;
  timings?: { [key: string]: number };
  device?: string | null;
  inputs: InputJSON[];
  trace_output?: string;
  expanded: number[];
  graph: GraphJSON;
  /** Set when the kernel did not ship the graph (too big): why. */
  graph_omitted?: string;
}

/** A graph as it travels when big: the same JSON, gzipped and base64-encoded. */
export interface CompressedGraph {
  encoding: 'gzip+base64';
  data: string;
  bytes: number;
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

// ------------------------------------------------------------------ comm messages

export interface CompileCause {
  kind: string;
  path: string;
  before: unknown;
  after: unknown;
  /** The cause in words, when the tracker gives it. */
  text?: string;
}

export interface CompileEvent {
  function: string;
  call_site?: string | null;
  count?: number;
  causes?: CompileCause[];
  message?: string | null;
  suggestion?: string | null;
  durations?: { [key: string]: number | null } | null;
  time?: number | null;
}

export interface StaleEvent {
  function?: string | null;
  name: string;
  baked?: unknown;
  current?: unknown;
  message?: string | null;
  time?: number | null;
}

export interface DeviceInfo {
  id: number | string;
  platform: string;
  kind: string;
  memory: { [key: string]: number } | null;
}

export interface FunctionInfo {
  name: string;
  summary?: string | null;
  eqn_count?: number | null;
  compiles?: number;
  traces?: number;
  has_graph?: boolean;
}

export interface SnapshotMessage {
  type: 'snapshot';
  functions: FunctionInfo[];
  compiles: CompileEvent[];
  stale: StaleEvent[];
  devices: DeviceInfo[];
  devices_note?: string | null;
  totals?: { [kind: string]: number };
  version?: string;
}

export interface EventMessage {
  type: 'event';
  kind: string;
  payload: unknown;
}

/** A batch of events (sent when they come faster than the kernel's flush interval). */
export interface EventsMessage {
  type: 'events';
  events: { kind: string; payload: unknown }[];
}

export interface GraphMessage {
  type: 'graph';
  name: string;
  payload: ProgramPayload | null;
}

/** The kernel's answer to a `diff_request` (jaxviz/diff.py `diff_reply`): a recompile
 * against the compile before it, drawn by the kernel with the diff's colours. */
export interface DiffMessage {
  type: 'diff';
  function: string;
  count: number | null;
  svg: string | null;
  summary: string | null;
  error: string | null;
}
