/** Small text helpers shared by the graph view, DOT and the panel. */

import { Aval, GraphGroup, GraphNode, SourceLoc } from './payload';
import {
  HEAT_DARK_TEXT,
  HEAT_DECADES,
  HEAT_LIGHT_TEXT,
  HEAT_LIGHT_TEXT_ABOVE,
  HEAT_MIN_FLOPS,
  HEAT_STOPS
} from './visual';

/** As `SourceLoc.short()` in Python: "cell line 3", "In[5] line 2" or "file.py:12". */
export function shortSource(s: SourceLoc | null | undefined): string {
  if (!s) {
    return '';
  }
  if (s.cell_line !== null && s.cell_line !== undefined) {
    return `cell line ${s.cell_line}`;
  }
  if (s.cell) {
    return `${s.cell} line ${s.line}`;
  }
  const file = (s.file || '').split('/').pop();
  return `${file}:${s.line}`;
}

export function avalDetail(a: Aval): string {
  const shape = `[${a.shape.join(', ')}]`;
  return `${a.text}  (shape ${shape}, dtype ${a.dtype}${a.weak_type ? ', weakly typed' : ''})`;
}

export interface TooltipLine {
  key?: string;
  text: string;
  mono?: boolean;
}

export function nodeTooltip(
  n: GraphNode,
  inputInfo?: { kind: string; value: string | null; source: string | null }
): {
  title: string;
  lines: TooltipLine[];
} {
  const lines: TooltipLine[] = [];
  let title = n.label;
  if (n.kind === 'eqn') {
    title = n.primitive ?? n.label;
    lines.push({ key: 'kind', text: 'equation' });
  } else if (n.kind === 'output') {
    lines.push({ key: 'kind', text: 'output' });
  } else {
    const kind = n.input_kind ?? inputInfo?.kind ?? 'traced';
    lines.push({ key: 'kind', text: `${kind} input${inputInfo?.source ? ` (${inputInfo.source})` : ''}` });
    if (inputInfo?.value) {
      lines.push({ key: 'value', text: inputInfo.value, mono: true });
    }
  }
  n.outputs.forEach((a, i) => {
    lines.push({ key: n.outputs.length > 1 ? `out ${i}` : 'aval', text: avalDetail(a), mono: true });
  });
  if (n.literals.length) {
    lines.push({ key: 'literals', text: n.literals.join(', '), mono: true });
  }
  for (const [k, v] of Object.entries(n.params ?? {})) {
    if (!isEmptyParam(v)) {
      lines.push({ key: k, text: v, mono: true });
    }
  }
  if (n.source) {
    lines.push({ key: 'source', text: `${shortSource(n.source)} in ${n.source.function}` });
    if (n.source.text) {
      lines.push({ text: n.source.text.trim(), mono: true });
    }
  }
  const cost = tooltipCost(n.flops, n.bytes);
  if (cost) {
    lines.push({ key: 'cost (estimate)', text: cost });
  }
  return { title, lines };
}

/** Parameter values that say nothing (`accuracy: None`, `sharding: None`, empty
 * tuples): left out of tooltips. */
export function isEmptyParam(value: unknown): boolean {
  if (value === null || value === undefined) {
    return true;
  }
  const v = String(value).trim();
  return v === '' || v === 'None' || v === 'null' || v === '()' || v === '[]' || v === '{}';
}

/** A cost for a tooltip: only the parts that were counted ("48 B", not "0 FLOP · 48 B";
 * nothing when both are zero). */
export function tooltipCost(flops?: number, nbytes?: number): string {
  const parts: string[] = [];
  if (flops) {
    parts.push(fmtCount(flops, 'FLOP'));
  }
  if (nbytes) {
    parts.push(fmtCostBytes(nbytes));
  }
  return parts.join(' · ');
}

/** As `size_text` in jaxviz/graph.py: "107 eqns"; "48 × 107 eqns" for a repeat group. */
export function sizeText(groups: GraphGroup[], gid: number): string {
  const g = groups[gid];
  if (g.kind === 'repeat' && g.groups.length) {
    return `${g.groups.length} × ${groups[g.groups[0]].n_eqns} eqns`;
  }
  return `${g.n_eqns} eqns`;
}

/** As `repeat_text` in jaxviz/graph.py: "48 identical block layers". */
export function repeatText(groups: GraphGroup[], gid: number): string {
  const g = groups[gid];
  const name = g.groups.length ? groups[g.groups[0]].name : g.name;
  return `${g.groups.length} identical ${name} layers`;
}

export function groupTooltip(
  g: GraphGroup,
  ins: string[],
  outs: string[],
  groups?: GraphGroup[]
): { title: string; lines: TooltipLine[] } {
  const repeat = g.kind === 'repeat' && groups;
  const lines: TooltipLine[] = [
    { key: 'kind', text: repeat ? `repeat: ${repeatText(groups, g.id)}` : g.kind },
    { key: 'equations', text: repeat ? `${g.n_eqns} (${sizeText(groups, g.id)})` : String(g.n_eqns) },
    { key: 'in', text: ins.join(', ') || '-', mono: true },
    { key: 'out', text: outs.join(', ') || '-', mono: true }
  ];
  if (g.source) {
    lines.push({ key: 'called at', text: `${shortSource(g.source)} in ${g.source.function}` });
    if (g.source.text) {
      lines.push({ text: g.source.text.trim(), mono: true });
    }
  }
  const cost = tooltipCost(g.flops, g.bytes);
  if (cost) {
    lines.push({ key: 'cost (estimate)', text: cost });
  }
  if (g.collectives) {
    const noun = g.collectives === 1 ? 'collective' : 'collectives';
    const text = `${g.collectives} ${noun} · ${fmtCostBytes(g.comm_bytes ?? 0)} per device and run`;
    lines.push({ key: 'communication (compiled HLO)', text });
  }
  lines.push({ text: repeat ? 'click to expand: one box per layer' : 'click to expand' });
  return { title: g.repeat || g.name, lines };
}

export function tooltipText(t: { title: string; lines: TooltipLine[] }): string {
  return [t.title, ...t.lines.map(l => (l.key ? `${l.key}: ${l.text}` : l.text))].join('\n');
}

export function formatSeconds(s: number | null | undefined): string {
  if (s === null || s === undefined || !isFinite(s)) {
    return '';
  }
  if (s < 1e-3) {
    return `${Math.round(s * 1e6)} µs`;
  }
  if (s < 1) {
    return `${(s * 1e3).toFixed(1)} ms`;
  }
  return `${s.toFixed(2)} s`;
}

export function formatBytes(n: number | null | undefined): string {
  if (n === null || n === undefined || !isFinite(n)) {
    return '';
  }
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return `${v.toFixed(u === 0 ? 0 : 1)} ${units[u]}`;
}

/** A value from the kernel (a cause's before/after) as short text. */
export function shortValue(v: unknown, max = 80): string {
  let s: string;
  if (typeof v === 'string') {
    s = v;
  } else if (v === undefined) {
    s = '';
  } else {
    try {
      s = JSON.stringify(v);
    } catch {
      s = String(v);
    }
  }
  return s.length > max ? `${s.slice(0, max - 1)}…` : s;
}

// ------------------------------------------------------------------ costs (as jaxviz/costs.py)

/** Three significant digits, as Python's `:.3g` (ties to even: 122.5 → 122, where
 * `toPrecision` gives 123), which the kernel's labels use. */
export function g3(v: number): string {
  const [mantissa, exponent] = Math.abs(v).toExponential(60).split('e'); // the exact digits
  const digits = mantissa.replace('.', '');
  const tie = digits[3] === '5' && /^0*$/.test(digits.slice(4));
  if (tie && Number(digits[2]) % 2 === 0) {
    return String(Math.sign(v) * Number(`${digits[0]}.${digits.slice(1, 3)}e${exponent}`));
  }
  return String(Number(v.toPrecision(3)));
}

const PREFIXES: [number, string][] = [
  [1e15, 'P'],
  [1e12, 'T'],
  [1e9, 'G'],
  [1e6, 'M'],
  [1e3, 'k']
];

export function fmtCount(value: number, unit = ''): string {
  for (const [scale, prefix] of PREFIXES) {
    if (Math.abs(value) >= scale) {
      return `${g3(value / scale)} ${prefix}${unit}`;
    }
  }
  return `${g3(value)} ${unit}`.trimEnd();
}

export function fmtCostBytes(value: number): string {
  const scales: [number, string][] = [
    [2 ** 40, 'Ti'],
    [2 ** 30, 'Gi'],
    [2 ** 20, 'Mi'],
    [2 ** 10, 'Ki']
  ];
  for (const [scale, prefix] of scales) {
    if (Math.abs(value) >= scale) {
      return `${g3(value / scale)} ${prefix}B`;
    }
  }
  return `${value.toFixed(0)} B`;
}

/** "1.2 GFLOP · 3.4 MiB" (empty when nothing was counted). */
export function costLabel(flops?: number, nbytes?: number): string {
  if (!flops && !nbytes) {
    return '';
  }
  return `${fmtCount(flops ?? 0, 'FLOP')} · ${fmtCostBytes(nbytes ?? 0)}`;
}

// The heat scale (stops, decades, HEAT_MIN_FLOPS: a cheaper program is not shaded by
// share) is jaxviz/visual.json's, as costs.py's.

export function heatLevel(fraction: number): number {
  if (fraction <= 0) {
    return 0;
  }
  return Math.min(Math.max(1 + Math.log10(Math.min(fraction, 1)) / HEAT_DECADES, 0), 1);
}

export function heatColor(level: number): string {
  const pos = Math.min(Math.max(level, 0), 1) * (HEAT_STOPS.length - 1);
  const i = Math.min(Math.floor(pos), HEAT_STOPS.length - 2);
  const t = pos - i;
  const a = HEAT_STOPS[i];
  const b = HEAT_STOPS[i + 1];
  const hex = [1, 3, 5].map(j => {
    // Python's round(): halves to even.
    const v = parseInt(a.slice(j, j + 2), 16) * (1 - t) + parseInt(b.slice(j, j + 2), 16) * t;
    const r = Math.round(v);
    const even = Math.abs(v - Math.trunc(v)) === 0.5 && r % 2 === 1 ? r - 1 : r;
    return even.toString(16).toUpperCase().padStart(2, '0');
  });
  return `#${hex.join('')}`;
}

export interface Heat {
  text: string;
  share: number;
  fill: string;
  font: string;
}

/** How a group shows its estimated cost (null when none was computed). */
export function groupHeat(groups: { flops?: number; bytes?: number }[], gid: number): Heat | null {
  const g = groups[gid];
  const total = groups[0]?.flops ?? 0;
  if (!total || !(g.flops || g.bytes)) {
    return null;
  }
  const share = (g.flops ?? 0) / total;
  const level = total >= HEAT_MIN_FLOPS ? heatLevel(share) : 0; // as costs.group_heat
  const pct = share >= 0.01 ? `${Math.round(share * 100)}%` : share > 0 ? '<1%' : '0%';
  return {
    text: `${costLabel(g.flops, g.bytes)} · ${pct}`,
    share,
    fill: heatColor(level),
    font: level > HEAT_LIGHT_TEXT_ABOVE ? HEAT_LIGHT_TEXT : HEAT_DARK_TEXT
  };
}

/** Text with Markdown code spans (`like this`) as parts: plain text and code (shown
 * as <code>, never as raw backticks). An unmatched backtick stays as it is. */
export function codeSpans(text: string): { text: string; code: boolean }[] {
  const parts: { text: string; code: boolean }[] = [];
  const re = /`([^`]+)`/g;
  let last = 0;
  let m: RegExpExecArray | null;
  while ((m = re.exec(text)) !== null) {
    if (m.index > last) {
      parts.push({ text: text.slice(last, m.index), code: false });
    }
    parts.push({ text: m[1], code: true });
    last = m.index + m[0].length;
  }
  if (last < text.length) {
    parts.push({ text: text.slice(last), code: false });
  }
  return parts;
}
