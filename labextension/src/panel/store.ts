/**
 * The panel's state for one kernel: functions, recompiles, stale captures and
 * devices, fed by the "jaxviz" comm (a snapshot, then events). Pure logic, no DOM:
 * bounded memory however many events arrive.
 */

import { CompileEvent, DeviceInfo, FunctionInfo, SnapshotMessage, StaleEvent } from '../shared/payload';

/** At most this many recompiles / stale warnings are kept; older ones are counted. */
export const MAX_KEPT = 2000;

export interface FunctionEntry {
  name: string;
  summary: string;
  eqnCount: number | null;
  compiles: number;
  traces: number;
  hasGraph: boolean;
  /** Order of last activity (higher: more recent). */
  seq: number;
}

export class PanelStore {
  functions = new Map<string, FunctionEntry>();
  /** Oldest first; newest are appended. */
  compiles: CompileEvent[] = [];
  stale: StaleEvent[] = [];
  devices: DeviceInfo[] = [];
  devicesNote: string | null = null;
  /** Events seen in total (including those dropped from memory); `recompile`: the
   * compiles that were not a function's first. */
  totals = { compile: 0, recompile: 0, stale: 0, program: 0 };
  /** Bumped on every change, so views can skip redundant renders. */
  revision = 0;
  /** Bumped by what each part of the panel shows, so that a view renders only the parts
   * that changed. */
  readonly revisions = { functions: 0, compiles: 0, stale: 0, devices: 0 };
  /** Bumped when everything was replaced (a reset or a snapshot): lists start over. */
  epoch = 0;
  private seq = 0;

  reset(): void {
    this.functions.clear();
    this.compiles = [];
    this.stale = [];
    this.devices = [];
    this.devicesNote = null;
    this.totals = { compile: 0, recompile: 0, stale: 0, program: 0 };
    this.revision++;
    this.epoch++;
    this.touch('functions', 'compiles', 'stale', 'devices');
  }

  private touch(...parts: (keyof PanelStore['revisions'])[]): void {
    for (const part of parts) {
      this.revisions[part]++;
    }
  }

  get droppedCompiles(): number {
    return this.totals.compile - this.compiles.length;
  }

  get droppedStale(): number {
    return this.totals.stale - this.stale.length;
  }

  applySnapshot(msg: SnapshotMessage): void {
    this.reset();
    for (const f of msg.functions ?? []) {
      this.upsertFunction(f);
    }
    this.compiles = (msg.compiles ?? []).slice(-MAX_KEPT);
    this.stale = (msg.stale ?? []).slice(-MAX_KEPT);
    this.devices = msg.devices ?? [];
    this.devicesNote = msg.devices_note ?? null;
    this.totals.compile = Math.max(msg.totals?.compile ?? 0, this.compiles.length);
    this.totals.stale = Math.max(msg.totals?.stale ?? 0, this.stale.length);
    this.totals.program = msg.totals?.program ?? 0;
    // Compiles dropped from the kernel's history are not known one by one: counted as
    // recompiles only when the kept ones are all recompiles (a flood).
    const kept = this.compiles.filter(isWarning).length;
    const dropped = this.totals.compile - this.compiles.length;
    this.totals.recompile = kept + (kept === this.compiles.length ? dropped : 0);
    this.revision++;
  }

  /** Apply one pushed event; returns false for kinds this version does not know. */
  applyEvent(kind: string, payload: unknown): boolean {
    switch (kind) {
      case 'program': {
        const p = (payload ?? {}) as { name?: string; summary?: string; eqn_count?: number };
        if (!p.name) {
          return false;
        }
        const f = this.upsertFunction({ name: p.name, summary: p.summary, eqn_count: p.eqn_count });
        f.traces += 1;
        f.hasGraph = true;
        this.totals.program++;
        this.touch('functions');
        break;
      }
      case 'compile': {
        const c = (payload ?? {}) as CompileEvent;
        if (!c.function) {
          return false;
        }
        push(this.compiles, c);
        this.totals.compile++;
        if (isWarning(c)) {
          this.totals.recompile++;
        }
        const f = this.upsertFunction({ name: c.function });
        f.compiles = Math.max(f.compiles + 1, c.count ?? 0);
        this.touch('functions', 'compiles');
        break;
      }
      case 'stale': {
        const s = (payload ?? {}) as StaleEvent;
        push(this.stale, s);
        this.totals.stale++;
        this.touch('stale');
        break;
      }
      case 'devices': {
        this.devices = Array.isArray(payload) ? (payload as DeviceInfo[]) : [];
        this.devicesNote = null;
        this.touch('devices');
        break;
      }
      default:
        return false;
    }
    this.revision++;
    return true;
  }

  upsertFunction(f: FunctionInfo): FunctionEntry {
    let entry = this.functions.get(f.name);
    if (!entry) {
      entry = { name: f.name, summary: '', eqnCount: null, compiles: 0, traces: 0, hasGraph: false, seq: 0 };
      this.functions.set(f.name, entry);
    }
    if (f.summary) {
      entry.summary = f.summary;
    }
    if (f.eqn_count !== undefined && f.eqn_count !== null) {
      entry.eqnCount = f.eqn_count;
    }
    if (f.compiles !== undefined) {
      entry.compiles = Math.max(entry.compiles, f.compiles);
    }
    if (f.traces !== undefined) {
      entry.traces = Math.max(entry.traces, f.traces);
    }
    if (f.has_graph) {
      entry.hasGraph = true;
    }
    entry.seq = ++this.seq;
    return entry;
  }

  /** Functions, most recently active first. */
  functionList(): FunctionEntry[] {
    return [...this.functions.values()].sort((a, b) => b.seq - a.seq);
  }

  /** The function list as the panel shows it: the programs of `%%jaxpr` cells ("In[3]")
   * that were not compiled under their own name are left out (`cells`): what they
   * compile is listed under the jitted function they call ("train_step · 6 compiles"),
   * and their graph is under the cell. */
  shownFunctions(): { functions: FunctionEntry[]; cells: FunctionEntry[] } {
    const functions: FunctionEntry[] = [];
    const cells: FunctionEntry[] = [];
    for (const f of this.functionList()) {
      (isCellProgram(f.name) && f.compiles === 0 ? cells : functions).push(f);
    }
    return { functions, cells };
  }

  /** The newest `limit` recompiles, newest first. */
  recentCompiles(limit: number): CompileEvent[] {
    return this.compiles.slice(-limit).reverse();
  }

  recentStale(limit: number): StaleEvent[] {
    return this.stale.slice(-limit).reverse();
  }
}

function push<T>(list: T[], item: T): void {
  list.push(item);
  // Drop in chunks, so that a flood costs amortised O(1) per event.
  if (list.length > MAX_KEPT + MAX_KEPT / 4) {
    list.splice(0, list.length - MAX_KEPT);
  }
}

/** A `%%jaxpr` cell's program, named after the cell's prompt. */
export function isCellProgram(name: string): boolean {
  return /^In\[\d+\]$/.test(name) || name === 'cell';
}

/** Why a listed function's graph cannot be shown, for the panel to say (null: it can). */
export function noGraphReason(f: FunctionEntry): string | null {
  if (f.hasGraph) {
    return null;
  }
  if (f.traces > 0) {
    return 'graph not kept: it was traced while the panel was not connected (as in Run All); run its cell again to see it here';
  }
  return `no graph: compiled by jax.jit, not traced by jaxviz; run %jaxpr ${f.name}(…) to draw it`;
}

/** A compile is a warning when it is not the function's first one (a recompile). */
export function isWarning(c: CompileEvent): boolean {
  return (c.count ?? 1) > 1 || (c.causes ?? []).some(x => x.kind !== 'first_call');
}
