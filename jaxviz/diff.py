"""The diff of two traces of one function: what a recompile changed in the program.

``diff(program_a, program_b)`` (or ``diff(fn, args_a, args_b)``) matches the two graphs by
structure, not by variable numbers: groups by their path (kind and name, aligned in order
under each matched parent), equations by primitive and position inside their matched
group. A matched equation whose output types, params or literals differ is *changed*;
one with no partner is *added* or *removed*. A change whose params differ only in the
numbers by which the shapes changed (``broadcast_in_dim shape=(8, 4) → (16, 4)`` when the
batch went from 8 to 16) is a change "in shape only", so a batch-size change reads as
such, not as a different program.

The result, ``ProgramDiff``, draws as one graph: the new program with the removed parts of
the old one put back where they were, coloured by status (the DOT renderer's ``marks``),
with unchanged groups collapsed and the groups holding changes open.

Recompiles: every compile the tracker sees (``jaxviz.watch``, or the notebook session's)
is remembered for the last ``KEEP`` compiles of each function, as the function and the
abstract arguments it was called with (shapes, dtypes and static values: no arrays).
``recompile_diff(name)`` (``%jaxviz diff NAME``) re-traces the last two and diffs them.
Re-tracing reads the function's globals as they are now; everything else that makes
JAX's cache key (arguments, static values) is as it was at that compile.
"""

from __future__ import annotations

import dataclasses
import difflib
import re
import threading
import weakref
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import jax
import numpy as np

from . import recompiles
from .graph import MIME_TYPE, Aval, Graph, Item, Node, short_dtype
from .program import Program
from .render.dot import DotUnavailable, Marks, dot_available, render_svg, view_to_dot
from .render.embed import graph_output_html
from .render.html import program_html
from .render.payload import program_payload
from .text import esc
from .tracing import normalize_static_argnums, trace

STATUSES = ("added", "removed", "changed")
# Groups that are a drawing aid, not program structure: their members are matched as if
# they were in the parent (a "line" group exists only past 8 equations from one line; a
# "repeat" fold only past 3 identical layers).
TRANSPARENT = frozenset({"line", "repeat"})
NOT_OPENED = frozenset({"inputs", "outputs"})  # their leaves are listed in ProgramDiff.inputs
# Matched as if their members were in the parent: the drawing aids, and the inputs/outputs
# boxes (one trace may gather its 6 parameters in one where the other leaves 4 at the top).
LIFTED = TRANSPARENT | NOT_OPENED
ROOT_GATHER_MIN = 8  # inputs/outputs left at the top of the diff graph past this: one group
VIEW_BUDGET = 150  # visible items at most when opening changed groups level by level
CASTS = frozenset({"convert_element_type", "reduce_precision"})  # what a dtype change adds
ANCHOR_HOPS = 3  # how far downstream an equation's anchor (the output it updates) is looked for
KEEP = 3  # compiles remembered per function for recompile_diff
MAX_FUNCTIONS = 256  # functions remembered (least recently compiled dropped first)

_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


# ====================================================================== the model
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
class ProgramDiff:
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
        view = self.graph.view(self.expand if expand is None else expand)
        return view_to_dot(view, legend=legend, marks=self.marks).source

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
        if not dot_available():
            return None
        try:
            return render_svg(self.to_dot())
        except DotUnavailable:
            return None

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        """The same view as a graph output: the graph payload for the JupyterLab renderer
        (with the diff's statuses under ``"diff"``), and HTML that shows the coloured
        drawing (or, without Graphviz, the listing) and turns into the interactive viewer
        where scripts run."""
        bundle: dict[str, Any] = {"text/plain": self.text()}
        if self.empty:
            return bundle
        program = self.as_program()
        svg = self.svg()
        note = None if svg is not None else "Graphviz 'dot' not found: showing the listing."
        payload = program_payload(program)
        payload["diff"] = self.statuses()
        if svg is not None:
            bundle["image/svg+xml"] = svg
        head = f'<div class="jaxviz-diff-summary" style="font-family:monospace;font-size:12px">{esc(self.summary())}</div>'
        bundle["text/html"] = graph_output_html(head + program_html(program, svg=svg, note=note), payload)
        bundle[MIME_TYPE] = payload
        return bundle

    def __str__(self) -> str:
        return self.text()

    def __repr__(self) -> str:
        return f"<jaxviz.ProgramDiff {self.summary()}>"


def _equations(n: int) -> str:
    return f"{n} equation{'' if n == 1 else 's'}"


# ====================================================================== matching
def _token_of_node(node: Node) -> tuple[str, str]:
    if node.kind == "eqn":
        return ("eqn", node.label)
    if node.kind == "input":  # a static input's label holds its value: "flag = True"
        return ("input", node.label.partition(" = ")[0])
    if node.kind == "const" and node.input_kind == "constant" and node.outputs:
        return ("const", "const")  # an array no name holds: labelled by what made it (its line may move)
    return (node.kind, node.label)


def _token_of_group(graph: Graph, gid: int) -> tuple[str, str]:
    g = graph.groups[gid]
    if g.kind in NOT_OPENED:  # "params (12 arrays)": the count may be what changed
        return (g.kind, g.name.partition(" (")[0])
    return (g.kind, g.name)


def _members(graph: Graph, gid: int) -> tuple[list[int], list[int]]:
    """(child groups, nodes) of a group, the members of transparent children lifted in,
    each list in the order the tracer made them."""
    groups: list[int] = []
    nodes = list(graph.groups[gid].nodes)
    stack = list(graph.groups[gid].groups)
    while stack:
        c = stack.pop()
        g = graph.groups[c]
        if g.kind in LIFTED:
            nodes += g.nodes
            stack += g.groups
        else:
            groups.append(c)
    return sorted(groups), sorted(nodes)  # ids are in the order the tracer made them


def _align(a: list[Any], b: list[Any]) -> list[tuple[int, int]]:
    """Index pairs of equal items, in order (the longest matching blocks)."""
    if a == b:
        return list(zip(range(len(a)), range(len(b))))
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    return [(blk.a + k, blk.b + k) for blk in matcher.get_matching_blocks() for k in range(blk.size)]


def anchors(graph: Graph) -> dict[int, str]:
    """Per equation, the program input or output it works on: an input it reads directly
    (``params['head']['bias']``), else the first output it reaches within ``ANCHOR_HOPS``
    (an optimizer's ``scale`` of a gradient reaches the updated parameter). A ``tree_map``
    over the parameters makes one equation per leaf: this says which leaf."""
    succs: dict[int, list[int]] = {}
    preds: dict[int, list[int]] = {}
    for e in graph.edges:
        succs.setdefault(e.src, []).append(e.dst)
        preds.setdefault(e.dst, []).append(e.src)
    nodes = graph.nodes
    anchors = {}
    for node in nodes:
        if node.kind != "eqn":
            continue
        read = sorted(_token_of_node(nodes[p])[1] for p in preds.get(node.id, ()) if nodes[p].kind == "input")
        if read:
            anchors[node.id] = "in " + read[0]
            continue
        frontier, seen = [node.id], {node.id}
        for _ in range(ANCHOR_HOPS):
            frontier = [s for f in frontier for s in succs.get(f, ()) if s not in seen]
            seen.update(frontier)
            reached = sorted(nodes[s].label for s in frontier if nodes[s].kind == "output")
            if reached:
                anchors[node.id] = "out " + reached[0]
                break
    return anchors


def _align_nodes(ga: Graph, gb: Graph, nodes_a: list[int], nodes_b: list[int],
                 anchors: tuple[dict[int, str], dict[int, str]]) -> list[tuple[int, int]]:
    """Node pairs of two matched groups: first by kind, label and the input or output each
    works on (so that the update of ``head`` pairs with the update of ``head`` however many
    layers come before it), then what is left by kind and label, in order."""
    def tokens(graph: Graph, ids: list[int], anchor: dict[int, str] | None) -> list[Any]:
        return [(_token_of_node(graph.nodes[n]), anchor.get(n) if anchor is not None else None)
                for n in ids]

    first = _align(tokens(ga, nodes_a, anchors[0]), tokens(gb, nodes_b, anchors[1]))
    used_a, used_b = {i for i, _ in first}, {j for _, j in first}
    rest_a = [n for i, n in enumerate(nodes_a) if i not in used_a]
    rest_b = [n for j, n in enumerate(nodes_b) if j not in used_b]
    second = _align(tokens(ga, rest_a, None), tokens(gb, rest_b, None))
    return [(nodes_a[i], nodes_b[j]) for i, j in first] + [(rest_a[i], rest_b[j]) for i, j in second]


def _match(ga: Graph, gb: Graph) -> tuple[dict[int, int], dict[int, int]]:
    """(group pairs a → b, node pairs a → b), matched top-down by structure."""
    groups: dict[int, int] = {0: 0}
    nodes: dict[int, int] = {}
    anchors_ab = (anchors(ga), anchors(gb))
    stack = [(0, 0)]
    while stack:
        a, b = stack.pop()
        groups_a, nodes_a = _members(ga, a)
        groups_b, nodes_b = _members(gb, b)
        nodes.update(_align_nodes(ga, gb, nodes_a, nodes_b, anchors_ab))
        for i, j in _align([_token_of_group(ga, c) for c in groups_a],
                           [_token_of_group(gb, c) for c in groups_b]):
            groups[groups_a[i]] = groups_b[j]
            stack.append((groups_a[i], groups_b[j]))
    return groups, nodes


def _shape_dims(old: Aval, new: Aval, dims: dict[int, set[int]]) -> None:
    if len(old.shape) == len(new.shape):
        for o, n in zip(old.shape, new.shape):
            if o != n:
                dims.setdefault(o, set()).add(n)


def _aval_changes(old: list[Aval], new: list[Aval]) -> tuple[set[str], list[str]]:
    kinds: set[str] = set()
    if len(old) != len(new):
        kinds.add("outputs")
    for o, n in zip(old, new):
        if o.shape != n.shape:
            kinds.add("shape")
        if o.dtype != n.dtype:
            kinds.add("dtype")
        if o.weak_type != n.weak_type:
            kinds.add("weak_type")
    details = [f"{', '.join(a.text for a in old)} → {', '.join(a.text for a in new)}"] if kinds else []
    axes = "; ".join(a for a in (axis_changes(o, n) for o, n in zip(old, new) if o.shape != n.shape) if a)
    if details and axes:
        details[0] += f" ({axes})"
    return kinds, details


def _scaled(old: float, new: float, dims: Mapping[int, set[int]]) -> bool:
    """``new`` is ``old`` with a changed dimension swapped (8 → 16), or scaled as one was
    (a mean's divisor 24 → 48 when the batch went from 8 to 16)."""
    return old == new or int(new) in dims.get(int(old), ()) or any(
        new * o == old * n for o, ns in dims.items() for n in ns)


def _shape_derived(old: str, new: str, dims: Mapping[int, set[int]]) -> bool:
    """A param or literal text that differs only in numbers that changed as the shapes did."""
    if _NUMBER.sub("#", old) != _NUMBER.sub("#", new):
        return False
    pairs = [(o, n) for o, n in zip(_NUMBER.findall(old), _NUMBER.findall(new)) if o != n]
    # 0.0 → 0 is the same number of another type (a literal's dtype), not a size
    return bool(pairs) and all(float(o) != float(n) and _scaled(float(o), float(n), dims)
                               for o, n in pairs)


def _dtype_derived(old: str, new: str, dtypes: Mapping[str, str]) -> bool:
    """A param text that differs only in dtypes that changed as the values' did
    (``new_dtype=float32 → bfloat16`` when the f32 values became bf16)."""
    renamed = old
    for was, now in dtypes.items():
        renamed = re.sub(rf"\b{re.escape(was)}\b", now, renamed)
        renamed = re.sub(rf"\b{re.escape(short_dtype(was))}\b", short_dtype(now), renamed)
    return renamed == new


def _same_number(old: str, new: str) -> bool:
    """``0.0`` and ``0``: one value written as another type (a literal of a new dtype)."""
    try:
        return float(old) == float(new)
    except ValueError:
        return False


def axis_changes(old: Aval, new: Aval) -> str:
    """``axis 0: 32 → 48`` (every axis whose size changed), or the ranks when they differ."""
    if len(old.shape) != len(new.shape):
        return f"rank {len(old.shape)} → {len(new.shape)}"
    return ", ".join(f"axis {i}: {o} → {n}" for i, (o, n) in enumerate(zip(old.shape, new.shape)) if o != n)


def _compare(old: Node, new: Node, dims: Mapping[int, set[int]],
             dtypes: Mapping[str, str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    kinds, details = _aval_changes(old.outputs, new.outputs)
    if old.kind != "eqn" and _token_of_node(old) != ("const", "const") \
            and (old.label != new.label or old.input_kind != new.input_kind):
        kinds.add("value")  # a static input's label is "flag = True": its value is enough
        details.append(f"{_value_of(old)} → {_value_of(new)}")
    for key in sorted(old.params.keys() | new.params.keys()):
        was, now = old.params.get(key), new.params.get(key)
        if was == now:
            continue
        if was is not None and now is not None and _shape_derived(was, now, dims):
            kinds.add("shape")
        elif was is not None and now is not None and _dtype_derived(was, now, dtypes):
            kinds.add("dtype")
        else:
            kinds.add("params")
        details.append(f"{key}={was} → {now}")
    if old.literals != new.literals:
        pairs = list(zip(old.literals, new.literals)) if len(old.literals) == len(new.literals) else []
        if pairs and all(o == n or _shape_derived(o, n, dims) for o, n in pairs):
            kinds.add("shape")
        elif pairs and dtypes and all(o == n or _dtype_derived(o, n, dtypes) or _same_number(o, n)
                                      for o, n in pairs):
            kinds.add("dtype")
        else:
            kinds.add("literals")
        details.append(f"literals {', '.join(old.literals)} → {', '.join(new.literals)}")
    return tuple(sorted(kinds)), tuple(details)


def _value_of(node: Node) -> str:
    name, eq, value = node.label.partition(" = ")
    shown = value if eq else name
    return f"{shown} ({node.input_kind})" if node.input_kind not in (None, "traced", "static") else shown


def _path(graph: Graph, gid: int) -> str:
    names = []
    g: int | None = gid
    while g is not None and g != 0:
        group = graph.groups[g]
        if group.kind not in TRANSPARENT:
            names.append(group.repeat or group.name)
        g = group.parent
    return " > ".join(reversed(names))


def _input_changes(a: Program, b: Program) -> list[InputChange]:
    def described(program: Program) -> dict[str, str]:
        return {i.name: f"{i.kind} {i.aval.text if i.aval else i.value}" for i in program.inputs}

    old, new = described(a), described(b)
    avals_a = {i.name: i.aval for i in a.inputs}
    avals_b = {i.name: i.aval for i in b.inputs}

    def axes(name: str) -> str | None:
        was, now = avals_a.get(name), avals_b.get(name)
        return axis_changes(was, now) or None if was and now and was.shape != now.shape else None

    out = [InputChange(n, "changed", old[n], new[n], axes(n)) for n in old if n in new and old[n] != new[n]]
    out += [InputChange(n, "removed", old[n], None) for n in old if n not in new]
    out += [InputChange(n, "added", None, new[n]) for n in new if n not in old]
    return out


def diff_programs(a: Program, b: Program) -> ProgramDiff:
    """Match the graphs of ``a`` (old) and ``b`` (new) by structure and say what changed."""
    ga, gb = a.graph, b.graph
    group_pairs, node_pairs = _match(ga, gb)
    dims: dict[int, set[int]] = {}
    dtypes: dict[str, str] = {}  # dtypes that changed: old → new (float32 → bfloat16)
    for i, j in node_pairs.items():  # first every shape change, then params read against them
        for o, n in zip(ga.nodes[i].outputs, gb.nodes[j].outputs):
            _shape_dims(o, n, dims)
            if o.dtype != n.dtype:
                dtypes.setdefault(o.dtype, n.dtype)
    changed, unchanged = [], 0
    for i, j in node_pairs.items():
        old, new = ga.nodes[i], gb.nodes[j]
        kinds, details = _compare(old, new, dims, dtypes)
        if kinds:
            changed.append(EqnChange("changed", _path(gb, new.group), _token_of_node(new)[1],
                                     old, new, kinds, details))
        elif new.kind == "eqn":
            unchanged += 1
    matched_b = set(node_pairs.values())
    removed = [EqnChange("removed", _path(ga, n.group), _token_of_node(n)[1], n, None)
               for n in ga.nodes if n.id not in node_pairs]
    added = [EqnChange("added", _path(gb, n.group), _token_of_node(n)[1], None, n)
             for n in gb.nodes if n.id not in matched_b]
    union, marks, expand = _union_graph(a, b, group_pairs, node_pairs, changed)
    return ProgramDiff(a, b, added, removed, changed, _input_changes(a, b), dims, union,
                       marks, expand, unchanged, dtypes)


# ====================================================================== one graph of both
class _UnionBuilder:
    """The new graph copied, with the old graph's unmatched groups and nodes put back
    under the groups they were matched to."""

    def __init__(self, a: Program, b: Program, group_pairs: dict[int, int],
                 node_pairs: dict[int, int]) -> None:
        self.ga, self.gb = a.graph, b.graph
        self.graph = Graph(f"{b.name} (diff)")
        self.group_pairs, self.node_pairs = group_pairs, node_pairs
        self.from_a: dict[int, int] = {}  # old node → union node (removed ones)
        self.from_b: dict[int, int] = {}  # new node → union node
        self.groups_from_b: dict[int, int] = {0: 0}
        self.matched_b_nodes = set(node_pairs.values())
        self.matched_b_groups = set(group_pairs.values())
        self.status: dict[Item, str] = {}
        self.whole: dict[int, str] = {}  # union groups that are entirely added/removed

    def build(self) -> Graph:
        self._copy_b(0, 0)
        matched_a_groups = {b: a for a, b in self.group_pairs.items()}
        for b_gid, u_gid in list(self.groups_from_b.items()):
            a_gid = matched_a_groups.get(b_gid)
            if a_gid is not None:
                self._put_back(a_gid, u_gid)
        for kind, group_kind in (("input", "inputs"), ("output", "outputs")):
            self._gather_root(kind, group_kind)
        for e in self.gb.edges:
            self.graph.add_edge(self.from_b[e.src], self.from_b[e.dst], e.aval, e.var)
        for e in self.ga.edges:
            if e.src in self.from_a or e.dst in self.from_a:
                src = self._union_of_a(e.src)
                dst = self._union_of_a(e.dst)
                if src is not None and dst is not None:
                    self.graph.add_edge(src, dst, e.aval, f"old:{e.var}")
        return self.graph.finish()

    def _gather_root(self, kind: str, group_kind: str) -> None:
        """Many inputs (or outputs) left at the top, e.g. the 48 leaves of a gradient, go
        into one group: collapsed, it says how many of them changed."""
        g = self.graph
        root = g.groups[0]
        members = [n for n in root.nodes if g.nodes[n].kind == kind]
        if len(members) < ROOT_GATHER_MIN:
            return
        gid = g.add_group(f"{group_kind} ({len(members)})", group_kind, 0)
        moved = set(members)
        root.nodes = [n for n in root.nodes if n not in moved]
        g.groups[gid].nodes = members
        for n in members:
            g.nodes[n].group = gid

    def _union_of_a(self, nid: int) -> int | None:
        if nid in self.from_a:
            return self.from_a[nid]
        partner = self.node_pairs.get(nid)
        return None if partner is None else self.from_b.get(partner)

    def _copy_b(self, b_gid: int, u_gid: int) -> None:
        gb = self.gb
        for n in gb.groups[b_gid].nodes:
            self.from_b[n] = self._copy_node(gb.nodes[n], u_gid)
            if n not in self.matched_b_nodes:
                self.status[("n", self.from_b[n])] = "added"
        for c in _pre_fold_children(gb, b_gid):
            g = gb.groups[c]
            u_child = self.graph.add_group(g.name, g.kind, u_gid, source=g.source)
            self.graph.groups[u_child].repeat = g.repeat
            self.groups_from_b[c] = u_child
            new_group = c not in self.matched_b_groups and g.kind not in LIFTED
            if new_group or self.whole.get(u_gid) == "added":
                self.whole[u_child] = "added"
            self._copy_b(c, u_child)

    def _put_back(self, a_gid: int, u_gid: int) -> None:
        """The old group's unmatched nodes and groups (transparent ones lifted) into the
        union group ``u_gid``."""
        groups, nodes = _members(self.ga, a_gid)
        for n in nodes:
            if n not in self.node_pairs:
                self.from_a[n] = self._copy_node(self.ga.nodes[n], u_gid)
                self.status[("n", self.from_a[n])] = "removed"
        for c in groups:
            if c not in self.group_pairs:
                self._copy_removed(c, u_gid)

    def _copy_removed(self, a_gid: int, u_parent: int) -> None:
        g = self.ga.groups[a_gid]
        u_gid = self.graph.add_group(g.name, g.kind, u_parent, source=g.source)
        self.graph.groups[u_gid].repeat = g.repeat
        self.whole[u_gid] = "removed"
        for n in g.nodes:
            self.from_a[n] = self._copy_node(self.ga.nodes[n], u_gid)
            self.status[("n", self.from_a[n])] = "removed"
        for c in _pre_fold_children(self.ga, a_gid):
            self._copy_removed(c, u_gid)

    def _copy_node(self, node: Node, u_gid: int) -> int:
        return self.graph.add_node(node.kind, node.label, u_gid, primitive=node.primitive,
                                   input_kind=node.input_kind, params=node.params,
                                   outputs=node.outputs, literals=node.literals, source=node.source)


def _pre_fold_children(graph: Graph, gid: int) -> list[int]:
    """Child groups as the tracer made them: repeat folds replaced by their members (the
    union graph folds again, by its own content)."""
    out = []
    for c in graph.groups[gid].groups:
        if graph.groups[c].kind == "repeat":
            out += _pre_fold_children(graph, c)
        else:
            out.append(c)
    return out


def _union_graph(a: Program, b: Program, group_pairs: dict[int, int], node_pairs: dict[int, int],
                 changed: list[EqnChange]) -> tuple[Graph, Marks, frozenset[int]]:
    builder = _UnionBuilder(a, b, group_pairs, node_pairs)
    graph = builder.build()
    status = builder.status
    notes: dict[Item, str] = {}
    for c in changed:
        item: Item = ("n", builder.from_b[c.node.id])  # changed: in both traces, c.node is the new
        status[item] = "changed"
        notes[item] = "; ".join(c.details)[:120]
    for gid, (n_added, n_removed, n_changed, total) in _group_counts(graph, status).items():
        if gid == 0 or not (n_added or n_removed or n_changed or gid in builder.whole):
            continue
        status[("g", gid)] = builder.whole.get(gid) or (
            "added" if n_added == total else "removed" if n_removed == total else "changed")
        notes[("g", gid)] = " · ".join(f"{n} {s}" for n, s in
                                       ((n_added, "added"), (n_removed, "removed"), (n_changed, "changed")) if n)
    return graph, Marks(status, notes), _open_changed(graph, status)


def _group_counts(graph: Graph, status: Mapping[Item, str]) -> dict[int, tuple[int, int, int, int]]:
    """Per group: nodes added, removed, changed and in all, inside it at any depth."""
    counts: dict[int, tuple[int, int, int, int]] = {}
    for gid in graph.bottom_up():
        g = graph.groups[gid]
        marks = [status.get(("n", n)) for n in g.nodes]
        total = [marks.count("added"), marks.count("removed"), marks.count("changed"), len(marks)]
        for c in g.groups:
            total = [t + k for t, k in zip(total, counts[c])]
        counts[gid] = (total[0], total[1], total[2], total[3])
    return counts


def _open_changed(graph: Graph, status: Mapping[Item, str]) -> frozenset[int]:
    """The root, then changed groups level by level, the smallest of a level first, each
    while the view stays within ``VIEW_BUDGET`` items: a change deep in one layer opens the
    way down to it, while a big group with a few changes in it (a ``tree_map`` update of
    every parameter) stays one box that says how many changed. Of an open fold of
    identical layers ("block ×12", all changed alike), one layer opens."""
    opened = {0}
    visible = len(graph.groups[0].nodes) + len(graph.groups[0].groups)
    frontier = [0]
    while frontier:
        candidates = [c for g in frontier for c in graph.groups[g].groups
                      if status.get(("g", c)) == "changed" and graph.groups[c].kind not in NOT_OPENED]
        frontier = []
        folds_opened: set[int | None] = set()  # of identical changed layers, open one
        for c in sorted(candidates, key=lambda c: _open_cost(graph, c)):
            cost = _open_cost(graph, c)
            parent = graph.groups[c].parent
            in_fold = parent is not None and graph.groups[parent].kind == "repeat"
            if visible + cost <= VIEW_BUDGET and not (in_fold and parent in folds_opened):
                visible += cost
                opened.add(c)
                frontier.append(c)
                if in_fold:
                    folds_opened.add(parent)
    return frozenset(opened)


def _open_cost(graph: Graph, gid: int) -> int:
    """Items a group's box turns into when opened."""
    g = graph.groups[gid]
    return len(g.nodes) + len(g.groups) - 1


# ====================================================================== entry points
def diff(a: Program | Callable[..., Any], b: Program | Any, c: Any = None, /, *,
         static_argnums: int | Iterable[int] = (), static_argnames: str | Iterable[str] = (),
         kwargs_a: dict[str, Any] | None = None, kwargs_b: dict[str, Any] | None = None) -> ProgramDiff:
    """``diff(program_a, program_b)``, or ``diff(fn, args_a, args_b)``: trace ``fn`` with
    each tuple of arguments (a single non-tuple argument is one argument) and diff.

    ``static_argnums``/``static_argnames`` and ``kwargs_a``/``kwargs_b`` as for
    ``jaxviz.trace``; arrays may be given as ``jax.ShapeDtypeStruct``."""
    if isinstance(a, Program):
        if not isinstance(b, Program) or c is not None:
            raise TypeError("jaxviz.diff(program_a, program_b) takes two jaxviz.Program objects "
                            f"(got a Program and {type(b).__name__})")
        return diff_programs(a, b)
    if not callable(a):
        raise TypeError("jaxviz.diff takes two Programs, or a function and two tuples of "
                        f"arguments: diff(fn, (x1,), (x2,)); got {type(a).__name__}")
    options = {"static_argnums": static_argnums, "static_argnames": static_argnames}
    args_a = b if isinstance(b, tuple) else (b,)
    args_b = c if isinstance(c, tuple) else (c,)
    program_a = trace(a, *args_a, **options, **(kwargs_a or {}))
    program_b = trace(a, *args_b, **options, **(kwargs_b or {}))
    return diff_programs(program_a, program_b)


# ====================================================================== recompile history
@dataclass
class CompileRecord:
    """What re-traces one compile: the function and its abstract arguments, and the
    compile's number and names (not its event: an event holds its signature, causes and
    the watches that saw it, which hold every event they saw)."""

    name: str  # the function's name, as the compile log shows it
    qualname: str
    count: int  # the n-th compile of the function, as numbered in the compile log
    fun: Callable[[], Callable[..., Any] | None]  # a weak reference where one can be made
    args: tuple[Any, ...]  # arrays as jax.ShapeDtypeStruct, static values as they were
    kwargs: dict[str, Any]
    static_argnums: tuple[int, ...]
    static_argnames: tuple[str, ...]
    _program: Program | None = field(default=None, repr=False)

    def program(self) -> Program:
        """The trace of this compile, taken again (once) from the abstract arguments."""
        if self._program is None:
            fun = self.fun()
            if fun is None:
                raise LookupError(f"the function of compile {self.count} of "
                                  f"{self.name!r} no longer exists")
            self._program = trace(fun, *self.args, static_argnums=self.static_argnums,
                                  static_argnames=self.static_argnames, **self.kwargs)
            self._program.name = f"{self.name} #{self.count}"
        return self._program


def _abstract(value: Any) -> Any:
    """An array as its ``jax.ShapeDtypeStruct`` (a Python scalar weakly typed, as jit
    traces it); anything else as it is."""
    if isinstance(value, (bool, int, float, complex)):
        dtype = jax.dtypes.canonicalize_dtype(np.asarray(value).dtype)
        return jax.ShapeDtypeStruct((), dtype, weak_type=True)
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        weak = bool(getattr(getattr(value, "aval", None), "weak_type", False))
        return jax.ShapeDtypeStruct(tuple(value.shape), value.dtype, weak_type=weak)
    return value


def _reference(fun: Callable[..., Any]) -> Callable[[], Callable[..., Any] | None]:
    """A weak reference, so that the history never keeps a function (and what its closure
    holds, arrays included) alive; a strong one for what cannot be weakly referenced."""
    try:
        return weakref.ref(fun)
    except TypeError:
        return lambda: fun


class CompileHistory:
    """The last ``keep`` compiles of each function (thread-safe, bounded)."""

    def __init__(self, keep: int = KEEP, max_functions: int = MAX_FUNCTIONS) -> None:
        self.keep = keep
        self.max_functions = max_functions
        self._lock = threading.Lock()
        self._records: OrderedDict[Any, deque[CompileRecord]] = OrderedDict()

    def record(self, event: recompiles.CompileEvent, call: Any) -> None:
        """The tracker's listener: runs on a cache miss only."""
        if event.error is not None or event.signature is None:
            return
        nums = normalize_static_argnums(call.static_argnums, len(call.args))
        args = tuple(a if i in nums else jax.tree_util.tree_map(_abstract, a)
                     for i, a in enumerate(call.args))
        kwargs = {k: v if k in call.static_argnames else jax.tree_util.tree_map(_abstract, v)
                  for k, v in call.kwargs.items()}
        rec = CompileRecord(event.function.name, event.function.qualname, event.count,
                            _reference(call.fun), args, kwargs, nums, tuple(call.static_argnames))
        key = (event.function.name, event.function.defined)
        with self._lock:
            records = self._records.pop(key, None) or deque(maxlen=self.keep)
            records.append(rec)
            self._records[key] = records
            while len(self._records) > self.max_functions:
                self._records.popitem(last=False)

    def records(self, name: str) -> list[CompileRecord]:
        """The remembered compiles of the function called ``name`` (or qualname)."""
        with self._lock:
            found = [list(rs) for (fname, _), rs in self._records.items()
                     if fname == name or (rs and rs[-1].qualname == name)]
        return found[-1] if found else []

    def names(self) -> list[str]:
        with self._lock:
            return [fname for fname, _ in self._records]

    def clear(self) -> None:
        with self._lock:
            self._records.clear()


HISTORY = CompileHistory()
recompiles.COMPILE_LISTENERS.append(HISTORY.record)


def recompile_diff(name: str, count: int | None = None) -> ProgramDiff:
    """The diff of a function's last recompile against the compile before it (or of its
    ``count``-th compile, as numbered in the compile log, against the one before).

    Compiles are remembered while a watch is active (``jaxviz.watch()``, or the notebook
    session's after ``%load_ext jaxviz``), the last ``KEEP`` of each function."""
    records = HISTORY.records(name)
    if not records:
        known = ", ".join(sorted(set(HISTORY.names()))) or "none yet"
        raise LookupError(f"jaxviz has no compile of {name!r} in its history (functions: {known}); "
                          "compiles are remembered while a watch is active")
    if count is None:
        index = len(records) - 1
    else:
        index = next((i for i, r in enumerate(records) if r.count == count), -1)
        if index < 0:
            kept = ", ".join(str(r.count) for r in records)
            raise LookupError(f"compile {count} of {name!r} is not remembered (kept: {kept}; "
                              f"jaxviz keeps the last {HISTORY.keep} of each function)")
    if index == 0:
        raise LookupError(f"{name!r} has no earlier compile remembered to diff compile "
                          f"{records[0].count} against")
    return diff_programs(records[index - 1].program(), records[index].program())


def diff_reply(function: str, count: int | None = None) -> dict[str, Any]:
    """The answer to the panel's ``diff_request`` (``jaxviz.ipython.bridge``): the diff graph
    payload (``ProgramDiff.to_json``) of a compile in the log, its summary and its drawing
    (SVG, with the added/removed/changed colours; None without Graphviz or when nothing
    changed), or why there is none."""
    reply: dict[str, Any] = {"type": "diff", "function": function, "count": count,
                             "payload": None, "svg": None, "summary": None, "error": None}
    try:
        result = recompile_diff(function, count)
    except LookupError as exc:
        reply["error"] = exc.args[0]
        return reply
    reply["payload"], reply["summary"] = result.to_json(), result.summary()
    reply["svg"] = result.svg()  # drawn with its colours
    return reply
