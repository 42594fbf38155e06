"""``ProgramDiff``, what ``jaxviz.diff`` found: the equations added, removed and changed,
the inputs that differ, and one graph of both with a status per item. Data: it draws
through the renderers registered in ``jaxviz.display`` (``jaxviz.render.diff``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..display import Displayed, render
from ..graph import Graph, Node, short_dtype
from ..marks import Marks
from ..program import Program

STATUSES = ("added", "removed", "changed")
CASTS = frozenset({"convert_element_type", "reduce_precision"})  # what a dtype change adds


@dataclass(frozen=True, slots=True)
class EqnChange:
    """One equation (or input/output/constant node) that differs."""

    status: str  # added | removed | changed
    path: str  # its groups, outermost first: "forward · jvp > block 6/12 > mlp"
    label: str  # primitive (or input name)
    old: Node | None
    new: Node | None
    kinds: tuple[str, ...] = ()  # for changed: shape, dtype, weak_type, params, literals, value
    details: tuple[str, ...] = ()  # "f32[8,4] → f32[16,4]", "shape=(8, 4) → (16, 4)"

    @property
    def node(self) -> Node:
        """The node in the new trace, or the old one for a removal."""
        node = self.new if self.new is not None else self.old
        assert node is not None  # a change is in one trace at least
        return node

    @property
    def shape_only(self) -> bool:
        return self.status == "changed" and set(self.kinds) <= {"shape"}

    def __str__(self) -> str:
        where = f"{self.path} > " if self.path else ""
        what = f": {'; '.join(self.details)}" if self.details else ""
        return f"{self.status} {where}{self.label}{what}"


@dataclass(frozen=True, slots=True)
class InputChange:
    name: str
    status: str  # added | removed | changed
    old: str | None  # "traced f32[8,4]", "static True"
    new: str | None
    axes: str | None = None  # a traced input's shape change: "axis 0: 8 → 16"

    def __str__(self) -> str:
        if self.status == "changed":
            return f"{self.name}: {self.old} → {self.new}" + (f" ({self.axes})" if self.axes else "")
        return f"{self.name}: {self.status} ({self.old or self.new})"


@dataclass
class ProgramDiff(Displayed):
    """What changed between two traces: equations added, removed and changed, the inputs
    that differ, and one graph of both (``graph``, ``marks``) to draw."""

    a: Program
    b: Program
    added: list[EqnChange]
    removed: list[EqnChange]
    changed: list[EqnChange]
    inputs: list[InputChange]
    dims: dict[int, set[int]]  # dimension sizes that changed: old → new (8 → {16})
    graph: Graph  # the new program, with the removed parts of the old one put back
    marks: Marks  # status and a note per node/group of ``graph``
    expand: frozenset[int]  # groups holding changes, opened level by level within a budget
    unchanged: int = 0  # equations matched with no difference
    dtypes: dict[str, str] = field(default_factory=dict)  # dtypes that changed: float32 → bfloat16

    def __post_init__(self) -> None:
        # The union graph is this diff's own: it carries the statuses to every drawing of it.
        statuses = self.statuses()
        self.graph.marks = {key: statuses[key] for key in ("nodes", "groups", "notes")}

    @property
    def empty(self) -> bool:
        return not (self.added or self.removed or self.changed or self.inputs)

    @property
    def shape_only(self) -> bool:
        """Every difference is a shape (a batch-size change, say): same program otherwise."""
        return not (self.added or self.removed) and all(c.shape_only for c in self.changed)

    @property
    def dtype_only(self) -> bool:
        """Every difference is a dtype (f32 → bf16, say), the casts it adds or removes
        included: the same program in another precision."""
        casts = all(c.node.kind != "eqn" or c.label in CASTS for c in [*self.added, *self.removed])
        return bool(self.dtypes) and casts and all(set(c.kinds) <= {"dtype"} for c in self.changed)

    def equations(self, status: str | None = None) -> list[EqnChange]:
        """The changes to equations (not inputs/outputs), of one status or all."""
        every = [*self.added, *self.removed, *self.changed]
        return [c for c in every if c.node.kind == "eqn" and status in (None, c.status)]

    def summary(self) -> str:
        if self.empty:
            return f"{self.b.name}: no difference ({self.unchanged} equations, same inputs)."
        counts = {s: len(self.equations(s)) for s in STATUSES}
        head = ", ".join(f"{_equations(n)} {s}" for s, n in counts.items() if n) or "no equation differs"
        parts = [f"{self.a.name} → {self.b.name}: {head}; {self.unchanged} unchanged"]
        if self.changed and self.shape_only:
            dims = ", ".join(f"{o} → {'/'.join(map(str, sorted(n)))}" for o, n in sorted(self.dims.items()))
            parts.append(f"every change is a shape change ({dims})")  # the inputs say on which axis
        elif self.dtype_only:
            dtypes = ", ".join(f"{short_dtype(o)} → {short_dtype(n)}" for o, n in self.dtypes.items())
            parts.append(f"every change is a dtype change ({dtypes})")
        if self.inputs:
            parts.append("inputs: " + "; ".join(str(i) for i in self.inputs[:4])
                         + (f"; … {len(self.inputs) - 4} more" if len(self.inputs) > 4 else ""))
        return " · ".join(parts)

    def text(self, limit: int = 200) -> str:
        lines = [self.summary()]
        lines += [f"  input {i}" for i in self.inputs]
        changes = [*self.removed, *self.added, *self.changed]
        lines += [f"  {c}" for c in changes[:limit]]
        if len(changes) > limit:
            lines.append(f"  … {len(changes) - limit} more")
        return "\n".join(lines)

    def to_dot(self, expand: int | str | Iterable[int] | None = None, legend: bool = True) -> str:
        """Graphviz DOT of the union graph, coloured by status (``jaxviz.render.diff``)."""
        return render(self, "dot", expand, legend=legend)

    def to_json(self) -> dict[str, Any]:
        """The union graph (``jaxviz.graph`` schema) plus the status of its nodes and
        groups and the open groups."""
        payload = self.graph.to_json()
        payload["diff"] = self.statuses()
        return payload

    def statuses(self) -> dict[str, Any]:
        """The status and note of each changed node and group of ``graph``, its open groups,
        the summary and the inputs that changed (the ``"diff"`` key of the payloads)."""
        return {
            "summary": self.summary(),
            "nodes": {str(i): s for (k, i), s in self.marks.status.items() if k == "n"},
            "groups": {str(i): s for (k, i), s in self.marks.status.items() if k == "g"},
            "notes": {f"{k}{i}": t for (k, i), t in self.marks.notes.items()},
            "expanded": sorted(self.expand),
            "inputs": [str(i) for i in self.inputs],
        }

    def as_program(self) -> Program:
        """The union graph as a ``Program`` (with the new trace's inputs), for the views
        every graph output has."""
        return dataclasses.replace(self.b, name=f"{self.a.name} → {self.b.name}", graph=self.graph,
                                   expand=self.expand, notes=[], run_report=None,
                                   trace_output="", _costs=None)

    def svg(self) -> str | None:
        """The kernel's drawing, coloured by status; None without Graphviz."""
        return render(self, "svg")

    def __str__(self) -> str:
        return self.text()

    def __repr__(self) -> str:
        return f"<jaxviz.ProgramDiff {self.summary()}>"


def _equations(n: int) -> str:
    return f"{n} equation{'' if n == 1 else 's'}"


# ====================================================================== matching
