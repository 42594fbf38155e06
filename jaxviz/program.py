"""``Program``: what one trace produced (the jaxpr, its classified inputs, the graph, the
timings); it displays itself through the renderers registered in ``jaxviz.display``."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import jax

from .costs import ProgramCosts, annotate, program_costs
from .display import Displayed, render
from .graph import Aval, Graph
from .jaxprs import flat_avals
from .sharding import find_mesh, mesh_text, value_sharding
from .text import fmt_count, fmt_flops, fmt_seconds

INPUT_KINDS = ("traced", "static", "constant", "captured")


@dataclass(slots=True)
class InputInfo:
    """One input of a traced program, in the user's words."""

    name: str  # argument name with pytree path (``params['w']``) or cell variable name
    kind: str  # traced | static | constant | captured
    aval: Aval | None = None  # None for static/non-array values
    value: str | None = None  # short repr of the value for static/constant/captured
    source: str | None = None  # "global" | "closure" | "argument" | "cell variable"
    sharding: str | None = None  # P('data', None) or "replicated" (jaxviz.sharding); None: one device

    @property
    def weak_type(self) -> bool:
        return bool(self.aval and self.aval.weak_type)

    def describe(self) -> str:
        what = self.aval.text if self.aval else self.value
        return f"{self.name}: {self.kind} {what}"


def traced_inputs(name: str, value: Any, source: str) -> list[InputInfo]:
    """Each leaf of ``value`` as a traced input named by its key path (``params['w']``),
    with its sharding when it is spread over devices."""
    leaves = jax.tree_util.tree_leaves(value)
    return [InputInfo(leaf_name, "traced", aval, None, source, value_sharding(leaf))
            for (leaf_name, aval), leaf in zip(flat_avals(name, value), leaves)]


@dataclass
class Program(Displayed):
    """A traced function or notebook cell. ``graph`` is the hierarchical dataflow graph."""

    name: str
    jaxpr: Any  # jax.extend.core.ClosedJaxpr
    inputs: list[InputInfo]
    output_names: list[str]
    graph: Graph
    timings: dict[str, float] = field(default_factory=dict)  # seconds: trace, lower, compile, run
    device: str | None = None
    trace_output: str = ""  # what the function printed while being traced (runs once!)
    source: str | None = None  # the cell's source, for cells
    expand: int | str | Iterable[int] | None = None  # the default view
    notes: list[str] = field(default_factory=list)  # one-line remarks shown in the summary
    run_report: Any = None  # jaxviz.profiling.RunReport once the program ran (the "Run" section)
    call_scopes: str = ""  # how user calls were recorded while tracing: "code" or "hook" (jaxviz.call_scopes)
    # The shardings of its array arguments: where ``mesh`` is looked for first.
    in_shardings: list[Any] = field(default_factory=list, repr=False)
    call_groups: dict[int, list[int]] = field(default_factory=dict)  # call scope number → its groups
    # Values the traced function computes as new state but the real call drops (an NNX
    # optimizer updated inside a plain jax.jit): drawn as lost, not among output_names.
    lost_outputs: list[str] = field(default_factory=list)
    _costs: ProgramCosts | None = field(default=None, repr=False)  # see costs()
    _mesh: str | None = field(default=None, repr=False)  # see mesh

    @property
    def mesh(self) -> str:
        """The device mesh it runs on, in words (``jaxviz.sharding.mesh_text``); "" for
        none. Found on first use (a walk over every equation's params that the first
        view does not need)."""
        if self._mesh is None:
            self._mesh = mesh_text(find_mesh(self.jaxpr, self.in_shardings))
        return self._mesh

    @mesh.setter
    def mesh(self, text: str) -> None:
        self._mesh = text

    # ----------------------------------------------------------------- facts
    @property
    def eqn_count(self) -> int:
        return self.graph.eqn_count

    def inputs_of_kind(self, kind: str) -> list[InputInfo]:
        return [i for i in self.inputs if i.kind == kind]

    def input(self, name: str) -> InputInfo:
        for i in self.inputs:
            if i.name == name:
                return i
        raise KeyError(f"{name!r} is not an input of {self.name}; inputs: {[i.name for i in self.inputs]}")

    def costs(self) -> ProgramCosts:
        """Estimated FLOPs and bytes per equation and in total (``jaxviz.costs``), also
        written onto the graph's nodes and groups. Computed once, on first use."""
        if self._costs is None:
            self._costs = program_costs(self.jaxpr)
            annotate(self.graph, self._costs)
        return self._costs

    def run_section(self) -> list[str]:
        """The "Run" section: where the program ran and what it cost (empty before a run)."""
        return self.run_report.text().splitlines() if self.run_report is not None else []

    def summary(self) -> str:
        """The one-line summary shown under every graph."""
        counts = {k: len(self.inputs_of_kind(k)) for k in INPUT_KINDS}
        inputs = ", ".join(f"{n} {k}" for k, n in counts.items() if n)
        parts = [f"{self.name}: {self.eqn_count} equations", f"inputs: {inputs or 'none'}"]
        if self.device:
            parts.append(f"device: {self.device}")
        if self.mesh:
            parts.append(self.mesh)
        for key in ("trace", "lower", "compile", "run", "steady"):
            if key in self.timings:
                parts.append(f"{key} {fmt_seconds(self.timings[key])}")
        report = self.run_report
        if report is not None and report.flops:
            rate = f" ({fmt_count(report.flops_per_second, 'FLOP/s')})" if report.flops_per_second else ""
            parts.append(f"{fmt_flops(report.flops)}{rate}")
        if report is not None and getattr(report, "collectives", None) is not None and report.collectives.items:
            parts.append(report.collectives.text())
        return " · ".join(parts + [f"note: {note}" for note in self.notes])

    def text(self) -> str:
        """The jaxpr as JAX prints it."""
        return str(self.jaxpr)

    # ----------------------------------------------------------------- rendering
    def to_dot(self, expand: int | str | Iterable[int] | None = None, **kwargs: Any) -> str:
        """Graphviz DOT source of a view (``jaxviz.render.dot``)."""
        self.costs()
        return render(self, "dot", expand, **kwargs).source

    def to_json(self) -> dict[str, Any]:
        self.costs()
        return render(self, "payload")

    def __repr__(self) -> str:
        return f"<jaxviz.Program {self.summary()}>"

