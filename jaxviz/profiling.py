"""What a program cost where it ran: run reports and ``profile``.

- ``RunReport``: device, trace / lower / compile / first-run / steady-state times, XLA's
  ``cost_analysis()`` (FLOPs, bytes accessed, transcendentals) and ``memory_analysis()``
  (argument, output, temporary and generated-code bytes) where the backend gives them,
  jaxviz's own per-equation estimate beside them, and the achieved FLOP/s and bytes/s.
  Renders in notebooks (HTML) and terminals (rich), drawn by ``jaxviz.render.devices``.
- ``profile(fn, *args, device=None, repeats=5)``: all of that for one function call;
  ``report_cell_run(cell, repeats)`` for a ``%%jaxpr`` cell that ran.
- On several devices, the report also names the mesh, counts and sizes the collectives of
  the compiled HLO (those the SPMD partitioner inserted too: ``executable_collectives``),
  and gives memory per device; ``attach_report(program, report)`` puts them on the
  program's graph (the communication heat, the shardings the compiler chose).
"""

from __future__ import annotations

import inspect
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import jax

from . import _jax_internals as internals
from .cells import CellProgram
from .costs import Cost, ProgramCosts, annotate_collectives, program_costs
from .devices import default_device, device_label, has_accelerator, place, resolve_device
from .display import Displayed
from .jaxprs import fresh_function
from .program import Program
from .sharding import (
    CollectiveCounts,
    compiled_shardings,
    hlo_collectives,
    mesh_text,
    scope_places,
    sharding_text,
)
from .text import fmt_bytes, fmt_count, fmt_flops, fmt_seconds
from .tracing import normalize_static_argnums, stage

DEFAULT_REPEATS = 5


# ---------------------------------------------------------------------- executables
def xla_cost(compiled: Any) -> tuple[dict[str, float] | None, dict[str, float]]:
    """``flops``, ``bytes accessed``, ``transcendentals`` from ``compiled.cost_analysis()``
    (None where the backend gives none), and apart from them the counts XLA gives as
    negative: its sign for a cost it could not count (-1 per custom call it cannot see
    into, such as a Pallas kernel compiled for a GPU), which are not counts."""
    try:
        cost = compiled.cost_analysis()
    except Exception:
        return None, {}
    if isinstance(cost, (list, tuple)):  # older JAX: one dict per executable
        cost = cost[0] if cost else None
    if not cost:
        return None, {}
    keys = ("flops", "bytes accessed", "transcendentals", "optimal_seconds")
    raw = {k: float(cost[k]) for k in keys if k in cost}
    uncounted = {k: v for k, v in raw.items() if v < 0 and k != "optimal_seconds"}
    out = {k: v for k, v in raw.items() if v >= 0}
    if "flops" not in uncounted:
        out.setdefault("flops", 0.0)  # XLA leaves out counts that are zero
    return out, uncounted


MEMORY_FIELDS = (("argument", "argument_size_in_bytes"), ("output", "output_size_in_bytes"),
                 ("temp", "temp_size_in_bytes"), ("generated_code", "generated_code_size_in_bytes"),
                 ("alias", "alias_size_in_bytes"), ("peak", "peak_memory_in_bytes"))


def xla_memory(compiled: Any) -> dict[str, int] | None:
    """Argument / output / temporary / generated-code / aliased bytes of the executable."""
    try:
        mem = compiled.memory_analysis()
    except Exception:
        return None
    if mem is None:
        return None
    out = {}
    for key, attr in MEMORY_FIELDS:
        value = getattr(mem, attr, None)
        if value is not None:
            out[key] = int(value)
    for key in ("peak", "alias"):
        if not out.get(key):
            out.pop(key, None)
    return out or None


def executable_device(compiled: Any, fallback: Any) -> Any:
    """The device an executable runs on (its first input/output sharding's), or ``fallback``."""
    for attr in ("output_shardings", "input_shardings"):
        try:
            shardings = jax.tree_util.tree_leaves(getattr(compiled, attr))
        except Exception:
            continue
        for s in shardings:
            devs = getattr(s, "device_set", None)
            if devs:
                return sorted(devs, key=lambda d: d.id)[0]
    return fallback


def executable_collectives(compiled: Any) -> CollectiveCounts | None:
    """The collectives of a compiled executable's HLO, those the SPMD partitioner inserted
    included; per kind, the scopes all of its op-names share. None where it has no text."""
    try:
        text = compiled.as_text()
    except Exception:
        return None
    if not isinstance(text, str):
        return None
    counts = CollectiveCounts(hlo_collectives(text))
    counts.places = scope_places(counts)
    return counts


def attach_report(program: Program, report: RunReport) -> None:
    """Make ``report`` the program's run: its device in the summary, the collectives on
    the groups they came from (the communication heat), and the shardings the compiler
    chose on the inputs and outputs that had none of their own, marked as chosen."""
    program.run_report = report
    program.device = f"{report.device} ({report.device_kind})"
    if report.mesh and not program.mesh:
        program.mesh = report.mesh
    if report.collectives is not None:
        annotate_collectives(program.graph, program.call_groups, report.collectives)
    graph = program.graph
    inputs = [n for n in graph.nodes if n.kind == "input" and n.outputs]
    if len(inputs) == len(report.input_shardings):  # else the executable was traced otherwise
        for node, text in zip(inputs, report.input_shardings):
            if text and "sharding" not in node.params:
                node.params["sharding"] = f"{text} (chosen)"
    if len(program.output_names) != len(report.output_shardings):
        return
    position = {name: i for i, name in enumerate(program.output_names)}
    for node in graph.nodes:
        i = position.get(node.label.split(" = ")[0]) if node.kind == "output" else None
        if i is not None and report.output_shardings[i] and "sharding" not in node.params:
            node.params["sharding"] = f"{report.output_shardings[i]} (chosen)"


def uncounted_note(uncounted: dict[str, float]) -> str:
    """Why a run report leaves out XLA's negative counts (``xla_cost``), quoting them."""
    given = ", ".join(f"{k} {v:g}" for k, v in uncounted.items())
    instead = "FLOPs are jaxviz's estimate" if "flops" in uncounted else "left out here"
    return (f"XLA could not count part of this program ({given}: its sign for a custom call it "
            f"cannot see into, such as a Pallas kernel compiled for a GPU); {instead}")


# ---------------------------------------------------------------------- the report
TIMING_LABELS = (("trace", "trace"), ("lower", "lower"), ("compile", "compile"),
                 ("run", "first run"), ("steady", "steady state"))


@dataclass
class RunReport(Displayed):
    """Where a program ran and what it cost. ``timings`` in seconds: trace, lower, compile,
    run (the first run, compile excluded) and, when timed, steady (the median of ``runs``)."""

    name: str
    device: str  # "gpu:0"
    device_kind: str
    platform: str
    timings: dict[str, float] = field(default_factory=dict)
    runs: list[float] = field(default_factory=list)
    xla: dict[str, float] | None = None  # cost_analysis()
    memory: dict[str, int] | None = None  # memory_analysis()
    estimate: Cost | None = None  # jaxviz's per-equation estimate
    loops: int = 0  # scan, while and pallas_call equations: XLA counts their bodies once
    matmul_flops: float = 0.0  # of the estimate: what XLA's GPU count may count once per term
    # The collectives in the compiled HLO (the SPMD partitioner's included) and the
    # shardings the executable takes and gives (flat, in argument and result order).
    collectives: CollectiveCounts | None = None
    input_shardings: list[str | None] = field(default_factory=list)
    output_shardings: list[str | None] = field(default_factory=list)
    mesh: str = ""
    n_devices: int = 1
    notes: list[str] = field(default_factory=list)
    result: Any = field(default=None, repr=False, compare=False)  # the outputs (profile())

    @classmethod
    def from_compiled(cls, name: str, compiled: Any, device: Any, costs: ProgramCosts | None = None,
                      timings: dict[str, float] | None = None, requested: Any = None) -> RunReport:
        """The report of an executable: ``device`` is where it was meant to run (the
        executable's own device wins), ``costs`` jaxviz's estimate for its jaxpr,
        ``requested`` the device the user asked for (None: JAX's default)."""
        dev = executable_device(compiled, device)
        xla, uncounted = xla_cost(compiled)
        report = cls(name, device_label(dev), dev.device_kind, dev.platform,
                     timings=dict(timings or {}), xla=xla, memory=xla_memory(compiled))
        report.collectives = executable_collectives(compiled)
        ins, outs = compiled_shardings(compiled)
        report.input_shardings = [sharding_text(x) for x in ins]
        report.output_shardings = [sharding_text(x) for x in outs]
        report.n_devices = max((len(getattr(x, "device_set", ())) for x in [*ins, *outs]), default=1)
        report.mesh = mesh_text(next((x.mesh for x in [*ins, *outs] if getattr(x, "mesh", None) is not None
                                      and len(x.device_set) > 1), None))
        if costs is not None:
            report.estimate = costs.total
            # A Pallas kernel is a loop over its grid where XLA compiles it (interpret mode)
            report.loops = sum(1 for p in costs.primitives if p in ("scan", "while", "pallas_call"))
            report.matmul_flops = costs.matmul_flops
            report.notes += costs.notes
        if dev.platform == "cpu" and requested is None and not has_accelerator():
            report.notes.insert(0, "no accelerator found: ran on the CPU")
        if report.xla is None:
            report.notes.append(f"the {dev.platform} backend gives no cost analysis: FLOPs are jaxviz's estimate")
        elif uncounted:
            report.notes.append(uncounted_note(uncounted))
        return report

    # ----------------------------------------------------------------- figures
    @property
    def run_seconds(self) -> float | None:
        """Steady-state time when measured, else the first run's."""
        return self.timings.get("steady", self.timings.get("run"))

    @property
    def flops(self) -> float | None:
        """FLOPs of one run on all its devices: XLA's count (of one device's program, times
        the devices), or jaxviz's estimate when XLA's falls short of the program: it loops
        (XLA counts a loop body once), XLA counted each matmul multiply-add once, or the
        backend gives no count."""
        if self.flops_source == "XLA":
            return self.xla_flops
        return self.estimate.flops if self.estimate else None

    @property
    def xla_flops(self) -> float | None:
        """XLA's count for the whole run (one device's program times the devices)."""
        xla = (self.xla or {}).get("flops")
        return None if xla is None else xla * self.n_devices

    @property
    def flops_source(self) -> str:
        xla = self.xla_flops
        if xla is None or (self.estimate and (self.loops or self.xla_counts_multiply_adds_once)):
            return "jaxviz estimate"
        return "XLA"

    @property
    def xla_counts_multiply_adds_once(self) -> bool:
        """Whether XLA's count is the program's with each matmul multiply-add counted as one
        FLOP instead of two, as XLA's GPU cost analysis counts the products it hands to
        cuBLAS (jax-ml/jax#22249): checked against the estimate, within 2 %."""
        xla, est = self.xla_flops, self.estimate
        if xla is None or est is None or not self.matmul_flops or abs(xla - est.flops) <= 0.1 * est.flops:
            return False
        return abs(xla - (est.flops - self.matmul_flops / 2)) <= 0.02 * est.flops

    @property
    def bytes_accessed(self) -> float | None:
        return (self.xla or {}).get("bytes accessed")

    @property
    def flops_per_second(self) -> float | None:
        t, f = self.run_seconds, self.flops
        return f / t if t and f else None

    @property
    def bytes_per_second(self) -> float | None:
        t, b = self.run_seconds, self.bytes_accessed
        return b / t if t and b else None

    def add_runs(self, samples: Sequence[float]) -> None:
        self.runs = list(samples)
        if self.runs:
            self.timings["steady"] = statistics.median(self.runs)

    # ----------------------------------------------------------------- text
    def summary(self) -> str:
        where = self.mesh or f"{self.device} ({self.device_kind})"
        parts = [f"ran on {where}"]
        for key in ("compile", "run", "steady"):
            if key in self.timings:
                parts.append(f"{dict(TIMING_LABELS)[key]} {fmt_seconds(self.timings[key])}")
        if self.flops:
            parts.append(fmt_flops(self.flops))
        if self.flops_per_second:
            parts.append(fmt_count(self.flops_per_second, "FLOP/s"))
        if self.collectives is not None and self.collectives.items:
            parts.append(self.collectives.text())
        return " · ".join(parts)

    def rows(self) -> list[tuple[str, str]]:
        """The "Run" section: (label, value) lines."""
        rows = [("device", f"{self.device} · {self.device_kind} · platform {self.platform}")]
        if self.mesh:
            rows.append(("mesh", self.mesh))
        if self.collectives is not None and (self.collectives.items or self.n_devices > 1):
            lines = self.collectives.rows() or ["none"]
            loops = " (a loop body's counted once)" if self.loops and self.collectives.items else ""
            rows.append(("collectives", " · ".join(lines) + (
                f" (total {fmt_bytes(self.collectives.bytes)} per device and run, from the compiled HLO{loops})"
                if self.collectives.items else "")))
        times = [f"{label} {fmt_seconds(self.timings[k])}" for k, label in TIMING_LABELS if k in self.timings]
        if self.runs:
            times[-1] += (f" (median of {len(self.runs)}, min {fmt_seconds(min(self.runs))},"
                          f" max {fmt_seconds(max(self.runs))})")
        if times:
            rows.append(("time", " · ".join(times)))
        xla = self.xla or {}
        if self.xla is not None:  # empty when XLA could count nothing (``xla_cost``)
            line = [fmt_flops(xla["flops"]) if "flops" in xla else "FLOPs not counted"]
            if "transcendentals" in xla:
                line.append(f"{fmt_count(xla['transcendentals'])} transcendentals")
            if "bytes accessed" in xla:
                line.append(f"{fmt_bytes(xla['bytes accessed'])} accessed")
            rows.append(("XLA cost" + (" per device" if self.n_devices > 1 else ""), " · ".join(line)))
        if self.estimate is not None:
            est = self.estimate
            line = f"{fmt_flops(est.flops)} · {fmt_count(est.transcendentals)} transcendentals · " \
                   f"{fmt_bytes(est.bytes)} read+written unfused"
            if xla.get("flops"):  # XLA counts what one device runs
                line += f" · {est.flops / (xla['flops'] * self.n_devices):.3f} × XLA's count"
                if self.n_devices > 1:
                    line += f" on {self.n_devices} devices"
                if self.loops:
                    line += " (XLA counts each loop body once)"
                elif self.xla_counts_multiply_adds_once:
                    line += " (XLA counts each matmul multiply-add as one FLOP here, jaxviz as two)"
            rows.append(("estimate", line))
        if self.memory:
            names = (("argument", "arguments"), ("output", "outputs"), ("temp", "temporaries"),
                     ("generated_code", "generated code"), ("alias", "aliased"), ("peak", "peak"))
            per = " per device" if self.n_devices > 1 else ""
            rows.append((f"memory{per}", " · ".join(f"{label} {fmt_bytes(self.memory[k])}"
                                                    for k, label in names if k in self.memory)))
        achieved = []
        if self.flops_per_second:
            achieved.append(fmt_count(self.flops_per_second, "FLOP/s"))
        if self.bytes_per_second:
            achieved.append(f"{fmt_bytes(self.bytes_per_second)}/s")
        if achieved:
            which = "steady state" if "steady" in self.timings else "first run"
            rows.append(("achieved", " · ".join(achieved) + f" (over the {which}; FLOPs: {self.flops_source})"))
        for note in self.notes:
            rows.append(("note", note))
        return rows

    def text(self) -> str:
        width = max((len(k) for k, _ in self.rows()), default=0)
        return "\n".join([f"Run: {self.name}"] + [f"  {k:{width}s}  {v}" for k, v in self.rows()])

    def __repr__(self) -> str:
        return f"<jaxviz.RunReport {self.summary()}>"

    def __str__(self) -> str:
        return self.text()

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "device": self.device, "device_kind": self.device_kind,
                "platform": self.platform, "timings": dict(self.timings), "runs": list(self.runs),
                "xla": self.xla, "memory": self.memory, "mesh": self.mesh, "n_devices": self.n_devices,
                "collectives": self.collectives.to_json() if self.collectives is not None else None,
                "input_shardings": list(self.input_shardings), "output_shardings": list(self.output_shardings),
                "estimate": self.estimate.to_json() if self.estimate else None,
                "flops": self.flops, "flops_source": self.flops_source,
                "flops_per_second": self.flops_per_second, "bytes_per_second": self.bytes_per_second,
                "notes": list(self.notes)}


def time_runs(call: Callable[[], Any], repeats: int) -> list[float]:
    """Seconds per call, each waited for with ``block_until_ready``."""
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(call())
        samples.append(time.perf_counter() - t0)
    return samples


# ---------------------------------------------------------------------- profile()
def profile(fn: Callable[..., Any], *args: Any, device: Any = None, repeats: int = DEFAULT_REPEATS,
            static_argnums: int | Sequence[int] = (), static_argnames: str | Sequence[str] = (),
            **kwargs: Any) -> RunReport:
    """Trace, lower, compile and run ``fn(*args, **kwargs)`` on ``device`` (default: JAX's
    default device; inputs are placed there explicitly when one is named), time each
    stage, then ``repeats`` more runs for the steady state. ``report.result`` holds the
    outputs of the first run.

    ``fn`` may be plain or ``jax.jit``-ed (its own static arguments apply). It is traced
    as jaxviz traces (each call of a user function a named scope: what the collectives'
    places are read from), so the trace time includes that recording.
    """
    dev = resolve_device(device)
    nums = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)
    names = (static_argnames,) if isinstance(static_argnames, str) else tuple(static_argnames)
    if hasattr(fn, "trace") and hasattr(fn, "lower"):
        jitted = fn
        info = internals.jit_static_args(fn)
        if info is not None:
            nums, names = info
    else:
        jitted = jax.jit(fn, static_argnums=nums, static_argnames=names)
    nums = normalize_static_argnums(nums, len(args))  # -1: the last argument, as jit reads it
    if device is not None:
        args, kwargs = _place_dynamic(fn, args, kwargs, nums, names, dev)
    dyn_args, dyn_kwargs = _dynamic(fn, args, kwargs, nums, names)
    timings: dict[str, float] = {}
    with jax.default_device(dev):
        t0 = time.perf_counter()
        traced = _trace_with_calls(fn, jitted, args, kwargs, nums, names)
        t1 = time.perf_counter()
        lowered = traced.lower()
        t2 = time.perf_counter()
        compiled = lowered.compile()
        t3 = time.perf_counter()
        result = compiled(*dyn_args, **dyn_kwargs)
        jax.block_until_ready(result)
        t4 = time.perf_counter()
        timings.update(trace=t1 - t0, lower=t2 - t1, compile=t3 - t2, run=t4 - t3)
        samples = time_runs(lambda: compiled(*dyn_args, **dyn_kwargs), repeats) if repeats > 0 else []
    name = getattr(inspect.unwrap(fn), "__name__", None) or type(fn).__name__
    report = RunReport.from_compiled(name, compiled, dev, program_costs(traced.jaxpr), timings,
                                     requested=device)
    report.add_runs(samples)
    report.result = result
    return report


def _trace_with_calls(fn: Any, jitted: Any, args: tuple, kwargs: dict, nums: tuple[int, ...],
                      names: tuple[str, ...]) -> Any:
    """``jitted.trace(*args, **kwargs)`` as jaxviz traces (``tracing.stage``): each call of
    a user function a named scope, so that the compiled HLO's op-names say which call each
    collective came from (``CollectiveCounts.places``)."""
    if jitted is fn:  # the user's own jit (its static arguments apply)
        def make() -> Any:
            return fn
    else:
        def make() -> Any:
            return jax.jit(fresh_function(fn), static_argnums=nums, static_argnames=names)
    code = getattr(inspect.unwrap(fn), "__code__", None)
    return stage(make, args, kwargs, skip=[code] if code is not None else [], roots=[fn]).traced


def _static_positions(fn: Any, n_args: int, nums: tuple[int, ...], names: tuple[str, ...]) -> set[int]:
    """Positions of the static positional arguments (``nums`` normalised: no negatives)."""
    positions = {n for n in nums if 0 <= n < n_args}
    try:
        params = list(inspect.signature(inspect.unwrap(fn)).parameters.values())
    except (TypeError, ValueError):
        return positions
    for i, p in enumerate(params[:n_args]):
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.name in names:
            positions.add(i)
    return positions


def _static_kwarg_names(fn: Any, nums: tuple[int, ...], names: tuple[str, ...]) -> set[str]:
    """Names of the static arguments passed by keyword (``nums`` normalised)."""
    out = set(names)
    try:
        params = list(inspect.signature(inspect.unwrap(fn)).parameters.values())
    except (TypeError, ValueError):
        return out
    for n in nums:
        if 0 <= n < len(params):
            out.add(params[n].name)
    return out


def _dynamic(fn: Any, args: tuple, kwargs: dict, nums: tuple[int, ...],
             names: tuple[str, ...]) -> tuple[tuple, dict]:
    """The arguments a compiled executable takes: the static ones left out."""
    static_pos = _static_positions(fn, len(args), nums, names)
    static_kw = _static_kwarg_names(fn, nums, names)
    return (tuple(a for i, a in enumerate(args) if i not in static_pos),
            {k: v for k, v in kwargs.items() if k not in static_kw})


def _place_dynamic(fn: Any, args: tuple, kwargs: dict, nums: tuple[int, ...], names: tuple[str, ...],
                   device: Any) -> tuple[tuple, dict]:
    static_pos = _static_positions(fn, len(args), nums, names)
    static_kw = _static_kwarg_names(fn, nums, names)
    return (tuple(a if i in static_pos else place(a, device) for i, a in enumerate(args)),
            {k: v if k in static_kw else place(v, device) for k, v in kwargs.items()})



def report_cell_run(cell: CellProgram, repeats: int = 0) -> RunReport:
    """The run report of a ``%%jaxpr`` cell that ran (``cell.run()``), put on its program;
    ``repeats`` > 0: that many more timed runs, their median the steady-state time."""
    program = cell.program
    report = RunReport.from_compiled(program.name, cell.compiled, cell.device or default_device(),
                                     program.costs(), requested=cell.device)
    attach_report(program, report)
    samples = time_runs(lambda: cell.compiled(*cell.args), repeats) if repeats > 0 else []
    timings = program.timings
    report.timings = {k: timings[k] for k in ("trace", "lower", "compile", "run") if k in timings}
    report.add_runs(samples)
    if samples:
        timings["steady"] = report.timings["steady"]
    return report
