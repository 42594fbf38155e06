"""The matching: two traces' graphs aligned by structure, each difference classified
(shape only, dtype only, params, literals), and one union graph of both to draw."""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..graph import Aval, Graph, Item, Node, short_dtype
from ..marks import Marks
from ..program import Program
from ..tracing import trace
from .changes import EqnChange, InputChange, ProgramDiff

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
ANCHOR_HOPS = 3  # how far downstream an equation's anchor (the output it updates) is looked for

_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


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
