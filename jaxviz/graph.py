"""The graph model: nodes (equations, inputs, constants, outputs), edges (values) and a
tree of groups (sub-jaxprs, user function calls, transformations).

One model, rendered many ways (``render/``). It is built once per trace by
``jaxviz.tracing`` and is read-only afterwards. Views (what is expanded) are computed
from it on demand, touching only what is visible, so that a 100k-equation program
renders its collapsed view as fast as a small one.

JSON schema (``Graph.to_json``, MIME type ``application/vnd.jaxviz+json``), version 1::

    {
      "schema": "jaxviz.graph", "version": 1,
      "name": str,
      "legend": {kind: {"color": str, "shape": str, "label": str}},
      "nodes":  [{"id": int, "kind": "eqn"|"input"|"const"|"output",
                  "label": str, "group": int, "primitive": str|null,
                  "input_kind": "traced"|"static"|"constant"|"captured"|null,
                  "params": {str: str}, "outputs": [aval], "literals": [str],
                  "source": {"file": str, "line": int, "function": str,
                             "cell_line": int|null, "text": str|null,
                             "cell": str|null}|null,
                  "flops": float, "bytes": float}],
      "edges":  [{"src": int, "dst": int, "aval": aval, "var": str}],
      "groups": [{"id": int, "name": str, "kind": str, "parent": int|null,
                  "groups": [int], "nodes": [int], "n_eqns": int,
                  "source": source|null, "repeat": str|null, "flops": float, "bytes": float}],
      "root": 0
    }

where ``aval`` is ``{"shape": [int], "dtype": str, "weak_type": bool, "text": str}``.
Group kinds: ``root``, ``inputs``/``outputs`` (the leaves of one pytree argument or
result), ``line`` (many equations from one source line), ``call`` (a call of a user function), ``transform`` (jvp /
transpose / vmap ...), ``scope`` (a ``jax.named_scope`` or a Flax module), ``eqn`` (an
equation holding sub-jaxprs, e.g. ``scan``; its own node is a member) and ``jaxpr`` (one
sub-jaxpr of such an equation, e.g. ``branch 1`` of a ``cond``) and ``repeat``: a run of
at least ``REPEAT_MIN`` consecutive sibling groups that are the same layer (same kind, name
and structure: the same primitives with the same output types, recursively), e.g. 48 calls
of ``block``, folded into one group named ``"block ×48"`` whose ``groups`` are those
members in their order (each keeping its ``repeat`` label, "block 3/48"). Folding happens
in ``Graph.finish``; repeat groups get ids after every other group, so ids of the groups
built by the tracer do not depend on folding, and a group's id is no longer always
larger than its parent's.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

SCHEMA_VERSION = 1
MIME_TYPE = "application/vnd.jaxviz+json"

# The visual language: one colour/shape per kind of value, shared by every renderer.
LEGEND: dict[str, dict[str, str]] = {
    "traced": {"color": "#4C9BE8", "shape": "invhouse", "label": "traced input (array → tracer)"},
    "static": {"color": "#F2A541", "shape": "invhouse", "label": "static input (Python value, part of the cache key)"},
    "constant": {"color": "#B0B0B0", "shape": "note", "label": "constant folded in at trace time"},
    "captured": {"color": "#D9534F", "shape": "note", "label": "captured global/closure (baked in at trace time)"},
    "output": {"color": "#5CB85C", "shape": "house", "label": "output"},
    "eqn": {"color": "#FFFFFF", "shape": "box", "label": "equation (primitive)"},
    "group": {"color": "#EEF3FB", "shape": "box3d", "label": "collapsed group (click/expand to open)"},
    "repeat": {"color": "#DCE6F7", "shape": "box3d",
               "label": "N identical layers folded into one box ×N (click/expand to see each)"},
    "weak": {"color": "#9B59B6", "shape": "dashed edge", "label": "weakly typed value (Python scalar)"},
}


@dataclass(frozen=True, slots=True)
class Aval:
    shape: tuple[int, ...]
    dtype: str
    weak_type: bool = False

    @property
    def text(self) -> str:
        """Short form as in jaxpr text, e.g. ``f32[3,4]``; weak types get a ``~``."""
        return f"{'~' if self.weak_type else ''}{short_dtype(self.dtype)}[{','.join(map(str, self.shape))}]"

    def to_json(self) -> dict[str, Any]:
        return _aval_json(self)


@functools.lru_cache(maxsize=4096)
def _aval_json(aval: Aval) -> dict[str, Any]:
    # Shared by every value of this type: a 12k-equation graph has a few hundred distinct
    # avals. Callers must not mutate the dict.
    return {"shape": list(aval.shape), "dtype": aval.dtype, "weak_type": aval.weak_type, "text": aval.text}


_DTYPE_SHORT = {"float": "f", "int": "i", "uint": "u", "complex": "c", "bfloat": "bf"}


def short_dtype(dtype: str) -> str:
    """``float32`` → ``f32``, ``bool`` → ``bool`` (the jaxpr spelling)."""
    for long, short in _DTYPE_SHORT.items():
        if dtype.startswith(long) and dtype[len(long):].isdigit():
            return short + dtype[len(long):]
    return dtype


@dataclass(slots=True)
class SourceLoc:
    file: str
    line: int
    function: str
    cell_line: int | None = None  # 1-based line within the notebook cell, when traced from one
    text: str | None = None  # the source line itself
    cell: str | None = None  # "In[5]": the notebook cell another function was defined in

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "function": self.function,
                "cell_line": self.cell_line, "text": self.text, "cell": self.cell}

    def short(self) -> str:
        if self.cell_line is not None:
            return f"cell line {self.cell_line}"
        if self.cell is not None:
            return f"{self.cell} line {self.line}"
        return f"{self.file.rsplit('/', 1)[-1]}:{self.line}"


@dataclass(slots=True)
class Node:
    id: int
    kind: str  # eqn | input | const | output
    label: str
    group: int
    primitive: str | None = None
    input_kind: str | None = None
    params: dict[str, str] = field(default_factory=dict)
    outputs: list[Aval] = field(default_factory=list)
    literals: list[str] = field(default_factory=list)
    source: SourceLoc | None = None
    flops: float = 0.0  # estimated cost (jaxviz.costs; trip counts of enclosing loops applied)
    bytes: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id, "kind": self.kind, "label": self.label, "group": self.group,
            "primitive": self.primitive, "input_kind": self.input_kind, "params": self.params,
            "outputs": [a.to_json() for a in self.outputs], "literals": self.literals,
            "source": self.source.to_json() if self.source else None,
            "flops": self.flops, "bytes": self.bytes,
        }


@dataclass(slots=True)
class Edge:
    src: int
    dst: int
    aval: Aval
    var: str

    def to_json(self) -> dict[str, Any]:
        return {"src": self.src, "dst": self.dst, "aval": self.aval.to_json(), "var": self.var}


@dataclass(slots=True)
class Group:
    id: int
    name: str
    kind: str  # root | inputs | outputs | line | call | transform | scope | eqn | jaxpr | repeat
    parent: int | None
    depth: int
    groups: list[int] = field(default_factory=list)
    nodes: list[int] = field(default_factory=list)
    n_eqns: int = 0
    source: SourceLoc | None = None
    repeat: str | None = None  # e.g. "block 3/12" when the same call repeats
    flops: float = 0.0  # estimated cost of everything inside (jaxviz.costs.annotate)
    bytes: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id, "name": self.name, "kind": self.kind, "parent": self.parent,
            "groups": self.groups, "nodes": self.nodes, "n_eqns": self.n_eqns,
            "source": self.source.to_json() if self.source else None, "repeat": self.repeat,
            "flops": self.flops, "bytes": self.bytes,
        }


# Kinds of groups that are never folded into a "repeat" group (the rest are: call, scope,
# eqn and whatever else is a layer of the user's program).
NOT_FOLDED = frozenset({"root", "inputs", "outputs", "line", "jaxpr", "transform", "repeat"})
REPEAT_MIN = 3  # shortest run of identical sibling groups that is folded


def size_text(graph: Graph, gid: int) -> str:
    """``"107 eqns"``; for a repeat group ``"48 × 107 eqns"`` (members × each)."""
    g = graph.groups[gid]
    if g.kind == "repeat" and g.groups:
        return f"{len(g.groups)} × {graph.groups[g.groups[0]].n_eqns} eqns"
    return f"{g.n_eqns} eqns"


def repeat_text(graph: Graph, gid: int) -> str:
    """``"48 identical block layers"`` for a repeat group."""
    g = graph.groups[gid]
    name = graph.groups[g.groups[0]].name if g.groups else g.name
    return f"{len(g.groups)} identical {name} layers"


# A visible item of a view: a node or a collapsed group (tagged so ids don't collide).
Item = tuple[str, int]  # ("n", node_id) | ("g", group_id)


@dataclass(slots=True)
class VisibleEdge:
    src: Item
    dst: Item
    avals: list[Aval]  # one per underlying value (deduplicated by var)

    @property
    def label(self) -> str:
        if len(self.avals) == 1:
            return self.avals[0].text
        return f"{len(self.avals)} values"

    @property
    def weak(self) -> bool:
        return all(a.weak_type for a in self.avals)


@dataclass(slots=True)
class View:
    """What one expansion state shows: expanded groups become clusters, collapsed groups
    boxes. Built in time proportional to what is visible."""

    graph: Graph
    expanded: frozenset[int]
    edges: list[VisibleEdge]

    def visible_counts(self) -> tuple[int, int]:
        """(visible nodes, visible collapsed groups)."""
        n_nodes = n_groups = 0
        for gid in self.expanded:
            g = self.graph.groups[gid]
            n_nodes += len(g.nodes)
            n_groups += sum(1 for c in g.groups if c not in self.expanded)
        return n_nodes, n_groups


class Graph:
    """Nodes, edges and the group tree. Build with ``add_*``, then call ``finish()``."""

    def __init__(self, name: str = "program") -> None:
        self.name = name
        self.nodes: list[Node] = []
        self.edges: list[Edge] = []
        self.groups: list[Group] = [Group(0, name, "root", None, 0)]
        # Per group: edges whose endpoints' lowest common group is this one, bucketed by
        # the pair of child items (of this group) that contain the endpoints.
        self._buckets: list[dict[tuple[Item, Item], list[int]]] = []
        self._finished = False

    # ----------------------------------------------------------------- building
    def add_group(self, name: str, kind: str, parent: int, source: SourceLoc | None = None) -> int:
        gid = len(self.groups)
        self.groups.append(Group(gid, name, kind, parent, self.groups[parent].depth + 1, source=source))
        self.groups[parent].groups.append(gid)
        return gid

    def add_node(self, kind: str, label: str, group: int, **attrs: Any) -> int:
        nid = len(self.nodes)
        self.nodes.append(Node(nid, kind, label, group, **attrs))
        self.groups[group].nodes.append(nid)
        return nid

    def add_edge(self, src: int, dst: int, aval: Aval, var: str) -> None:
        if src != dst:
            self.edges.append(Edge(src, dst, aval, var))

    def finish(self) -> Graph:
        """Fold repeated layers into ``repeat`` groups, count equations per group, bucket
        edges. Linear in the size of the graph."""
        self._fold_repeats()
        groups = self.groups
        top_down = list(self.descendants(0))  # every group before its descendants
        for gid in top_down:
            g = groups[gid]
            g.depth = 0 if g.parent is None else groups[g.parent].depth + 1
        for gid in reversed(top_down):  # every group after its descendants
            g = groups[gid]
            g.n_eqns = sum(1 for n in g.nodes if self.nodes[n].kind == "eqn") + sum(
                groups[c].n_eqns for c in g.groups)
        self._buckets = [{} for _ in self.groups]
        for i, e in enumerate(self.edges):
            lca, a, b = self._lca_items(e.src, e.dst)
            self._buckets[lca].setdefault((a, b), []).append(i)
        self._finished = True
        return self

    def bottom_up(self) -> list[int]:
        """Group ids, each after all of its descendants (children before parents: ids do
        not give that order, repeat groups come last)."""
        return list(self.descendants(0))[::-1]

    # ----------------------------------------------------------------- repeats
    def _fold_repeats(self) -> None:
        """Runs of ``REPEAT_MIN`` or more consecutive sibling groups that are the same
        layer become one ``repeat`` group holding them. Runs are found on the tree as
        built, then folded, so that folding one run never changes what another is
        compared with."""
        memo: dict[int, int] = {}
        interned: dict[tuple[Any, ...], int] = {}
        runs: list[tuple[int, list[list[int]]]] = []  # (parent, its runs)
        for parent in self.groups:
            kids = parent.groups
            if parent.kind == "repeat" or len(kids) < REPEAT_MIN:
                continue
            found: list[list[int]] = []
            i = 0
            while i < len(kids):
                first = self.groups[kids[i]]
                j = i + 1
                if first.kind not in NOT_FOLDED:
                    while j < len(kids) and self.groups[kids[j]].kind == first.kind \
                            and self.groups[kids[j]].name == first.name:
                        j += 1
                if j - i >= REPEAT_MIN:  # same kind and name: split by structure
                    run = [kids[i]]
                    for c in kids[i + 1:j]:
                        if self._signature(c, memo, interned) == self._signature(run[0], memo, interned):
                            run.append(c)
                            continue
                        if len(run) >= REPEAT_MIN:
                            found.append(run)
                        run = [c]
                    if len(run) >= REPEAT_MIN:
                        found.append(run)
                i = j
            if found:
                runs.append((parent.id, found))
        for pid, found in runs:
            parent = self.groups[pid]
            first_of = {run[0]: run for run in found}
            folded = {c for run in found for c in run}
            children = []
            for c in parent.groups:
                run = first_of.get(c)
                if run is not None:
                    children.append(self._add_repeat(pid, run))
                elif c not in folded:
                    children.append(c)
            parent.groups = children

    def _add_repeat(self, parent: int, run: list[int]) -> int:
        members = [self.groups[c] for c in run]
        first = members[0]
        same_site = first.source is not None and all(
            m.source is not None and (m.source.file, m.source.line) == (first.source.file, first.source.line)
            for m in members)
        gid = len(self.groups)
        self.groups.append(Group(gid, f"{first.name} ×{len(run)}", "repeat", parent, 0, groups=list(run),
                                 source=first.source if same_site else None))
        for m in members:
            m.parent = gid
        return gid

    def _signature(self, gid: int, memo: dict[int, int], interned: dict[tuple[Any, ...], int]) -> int:
        """A small int standing for the group's structure: its kind, name, the kind,
        label and output types of its nodes in order, and its children's signatures.
        Computed bottom-up, each group once (``memo``), so linear in the graph."""
        stack = [gid]
        while stack:
            g = self.groups[stack[-1]]
            pending = [c for c in g.groups if c not in memo]
            if pending:
                stack.extend(pending)
                continue
            stack.pop()
            if g.id in memo:
                continue
            nodes = self.nodes
            key = (g.kind, g.name,
                   tuple((nodes[n].kind, nodes[n].label, tuple(nodes[n].outputs)) for n in g.nodes),
                   tuple(memo[c] for c in g.groups))
            memo[g.id] = interned.setdefault(key, len(interned))
        return memo[gid]

    def _chain(self, node_id: int) -> list[int]:
        """Group ids from the node's own group up to the root."""
        chain = []
        g: int | None = self.nodes[node_id].group
        while g is not None:
            chain.append(g)
            g = self.groups[g].parent
        return chain

    def _lca_items(self, src: int, dst: int) -> tuple[int, Item, Item]:
        ca, cb = self._chain(src), self._chain(dst)
        sb = set(cb)
        for i, g in enumerate(ca):
            if g in sb:
                j = cb.index(g)
                a: Item = ("g", ca[i - 1]) if i > 0 else ("n", src)
                b: Item = ("g", cb[j - 1]) if j > 0 else ("n", dst)
                return g, a, b
        raise AssertionError("groups form a tree with one root")

    # ----------------------------------------------------------------- queries
    @property
    def eqn_count(self) -> int:
        return self.groups[0].n_eqns

    def eqn_nodes(self) -> list[Node]:
        return [n for n in self.nodes if n.kind == "eqn"]

    def descendants(self, group_id: int) -> Iterable[int]:
        stack = [group_id]
        while stack:
            g = stack.pop()
            yield g
            stack.extend(self.groups[g].groups)

    def expansion(self, expand: int | str | Iterable[int] | None = None, budget: int = 60) -> frozenset[int]:
        """Resolve an expansion request into the set of expanded group ids.

        ``None``/"auto": the deepest uniform depth whose view shows at most ``budget``
        items; an int N: groups at depth < N+1 (0 = top level collapsed); "all"; or an
        explicit collection of group ids (their ancestors are expanded too).
        """
        if expand == "all":
            return frozenset(range(len(self.groups)))
        if isinstance(expand, int):
            return frozenset(g.id for g in self.groups if g.depth <= expand)
        if expand is None or expand == "auto":
            return self._auto_expansion(budget)
        if isinstance(expand, str):
            raise ValueError(f"expand must be an int, 'all', 'auto' or group ids, not {expand!r}")
        chosen = {0}
        for gid in expand:
            g: int | None = gid
            while g is not None:
                chosen.add(g)
                g = self.groups[g].parent
        return frozenset(chosen)

    def _auto_expansion(self, budget: int) -> frozenset[int]:
        expanded = {0}
        frontier = [0]
        visible = len(self.groups[0].nodes) + len(self.groups[0].groups)
        while frontier:
            nxt = [c for g in frontier for c in self.groups[g].groups]
            # Expanding a group replaces its box by its members.
            cost = sum(len(self.groups[c].nodes) + len(self.groups[c].groups) - 1 for c in nxt)
            if not nxt or visible + cost > budget:
                break
            visible += cost
            expanded.update(nxt)
            frontier = nxt
        return frozenset(expanded)

    def view(self, expand: int | str | Iterable[int] | None = None) -> View:
        """The visible items and aggregated edges for an expansion state."""
        assert self._finished, "call finish() first"
        expanded = self.expansion(expand)
        merged: dict[tuple[Item, Item], dict[str, Aval]] = {}
        for gid in expanded:
            for (a, b), edge_ids in self._buckets[gid].items():
                if self._is_leaf(a, expanded) and self._is_leaf(b, expanded):
                    vals = merged.setdefault((a, b), {})
                    for i in edge_ids:  # every distinct value, each once
                        e = self.edges[i]
                        vals.setdefault(f"{e.src}:{e.var}", e.aval)
                    continue
                for i in edge_ids:
                    e = self.edges[i]
                    key = (self._visible(e.src, a, expanded), self._visible(e.dst, b, expanded))
                    merged.setdefault(key, {}).setdefault(f"{e.src}:{e.var}", e.aval)
        edges = [VisibleEdge(a, b, list(v.values())) for (a, b), v in merged.items()]
        return View(self, expanded, edges)

    @staticmethod
    def _is_leaf(item: Item, expanded: frozenset[int]) -> bool:
        return item[0] == "n" or item[1] not in expanded

    def _visible(self, node_id: int, top: Item, expanded: frozenset[int]) -> Item:
        """The visible item standing for ``node_id`` below the child item ``top``."""
        if top[0] == "n" or top[1] not in expanded:
            return top
        chain = self._chain(node_id)  # innermost first
        idx = chain.index(top[1])
        for g in reversed(chain[:idx]):  # walk down from just below ``top``
            if g not in expanded:
                return ("g", g)
        return ("n", node_id)

    # ----------------------------------------------------------------- export
    def to_json(self) -> dict[str, Any]:
        return {
            "schema": "jaxviz.graph",
            "version": SCHEMA_VERSION,
            "name": self.name,
            "legend": LEGEND,
            "nodes": [n.to_json() for n in self.nodes],
            "edges": [e.to_json() for e in self.edges],
            "groups": [g.to_json() for g in self.groups],
            "root": 0,
        }

    def to_json_str(self) -> str:
        return json.dumps(self.to_json(), separators=(",", ":"))

    def to_dot(self, expand: int | str | Iterable[int] | None = None, **kwargs: Any) -> str:
        """Graphviz DOT source of a view (see ``jaxviz.render.dot``)."""
        from .render.dot import view_to_dot

        return view_to_dot(self.view(expand), **kwargs).source

    def __repr__(self) -> str:
        return f"<jaxviz.Graph {self.name!r}: {self.eqn_count} equations, {len(self.groups)} groups>"
