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
                  "source": source|null, "repeat": str|null, "flops": float, "bytes": float,
                  "holder": int|null, "helper": bool, "collectives": int, "comm_bytes": float}],
      "root": 0
    }

where ``aval`` is ``{"shape": [int], "dtype": str, "weak_type": bool, "text": str}``.
Group kinds: ``root``, ``inputs``/``outputs`` (the leaves of one pytree argument or
result), ``line`` (many equations from one source line), ``call`` (a call of a user function),
``library`` (a call of an installed library's function, read from the equations'
tracebacks: ``HMC.sample``, ``mctx.gumbel_muzero_policy``), ``transform`` (jvp /
transpose / vmap ...), ``scope`` (a ``jax.named_scope`` or a Flax module), ``eqn`` (an
equation holding sub-jaxprs, e.g. ``scan``; its own node is a member) and ``jaxpr`` (one
sub-jaxpr of such an equation, e.g. ``branch 1`` of a ``cond``; a group's ``holder`` is the
node of the one equation whose sub-jaxprs it holds, also for a jnp helper shown as the
user's ``call`` ``where`` and a ``library`` call made through a ``jit``, ``odeint``),
``phase`` (``forward``, ``backward`` and ``update`` of a function that takes a gradient:
``jaxviz.phases``) and ``repeat``: a run of
at least ``REPEAT_MIN`` consecutive sibling groups that are the same layer (same kind, name
and structure: the same primitives with the same output types, recursively), e.g. 48 calls
of ``block``, folded into one group named ``"block ×48"`` whose ``groups`` are those
members in their order (each keeping its ``repeat`` label, "block 3/48"). Folding happens
in ``Graph.finish``; repeat groups get ids after every other group, so ids of the groups
built by the tracer do not depend on folding, and a group's id need not be larger than
its parent's.
"""

from __future__ import annotations

import functools
import heapq
import json
import math
import re
from array import array
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from .text import fmt_bytes, fmt_flops
from .visual import LEGEND  # the payload carries it for readers of the JSON

SCHEMA_VERSION = 1
MIME_TYPE = "application/vnd.jaxviz+json"


@dataclass(frozen=True, slots=True)
class Aval:
    shape: tuple[int, ...]
    dtype: str
    weak_type: bool = False
    # Per dimension, the mesh axes an explicit sharding splits it on ("data", "(data,model)",
    # "" for none; jaxviz.sharding.dim_axes); () when nothing is split.
    sharding: tuple[str, ...] = ()
    _text: str = field(default="", init=False, repr=False, compare=False)  # ``text``, once written
    _hash: int | None = field(default=None, init=False, repr=False, compare=False)

    def __hash__(self) -> int:
        """The hash of its fields, as a dataclass's, computed once (layers are compared
        by the types of their values: ``Graph._signature``)."""
        found = self._hash
        if found is None:
            found = hash((self.shape, self.dtype, self.weak_type, self.sharding))
            object.__setattr__(self, "_hash", found)
        return found

    @property
    def text(self) -> str:
        """Short form as in jaxpr text, e.g. ``f32[3,4]``, ``f32[16@data,784]`` for explicit
        sharding; weak types get a ``~``. Written once: every edge label and node of the
        type reads it."""
        if not self._text:
            dims = [f"{d}@{a}" if a else str(d) for d, a in zip(self.shape, self.sharding)] \
                if self.sharding else map(str, self.shape)
            object.__setattr__(self, "_text", f"{'~' if self.weak_type else ''}{short_dtype(self.dtype)}[{','.join(dims)}]")
        return self._text

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


class TableRefs:
    """Each distinct source location and aval written once, in the tables ``sources`` and
    ``avals``, and referred to by its index there (``Graph.to_columns``): a layer's
    equations share a few lines and types, and each would repeat them."""

    def __init__(self) -> None:
        self.sources: list[dict[str, Any]] = []
        self.avals: list[dict[str, Any]] = []
        # Each entry's index by the identity of what it writes first (the builder shares one
        # location per line and one Aval per type; an Aval hashes in Python), then by
        # value (a call's site is made apart from its line's).
        self._by_id: dict[int, int] = {}
        self._kept: list[SourceLoc | Aval] = []  # alive while their ids are keys
        self._source_by_value: dict[tuple[Any, ...], int] = {}
        self._aval_by_value: dict[Aval, int] = {}

    def source(self, loc: SourceLoc | None) -> Any:
        if loc is None:
            return None
        index = self._by_id.get(id(loc))
        if index is None:
            value = (loc.file, loc.line, loc.function, loc.cell_line, loc.text, loc.cell)
            index = self._entered(loc, value, self._source_by_value, self.sources)
        return index

    def aval(self, aval: Aval) -> Any:
        index = self._by_id.get(id(aval))
        return self._entered(aval, aval, self._aval_by_value, self.avals) if index is None else index

    def _entered(self, item: SourceLoc | Aval, value: Any, by_value: dict[Any, int],
                 table: list[dict[str, Any]]) -> int:
        """The index of ``item``'s entry in ``table``, written there unless an equal
        ``value`` was; known from now on by ``item``'s identity."""
        index = by_value.get(value)
        if index is None:
            index = by_value[value] = len(table)
            table.append(item.to_json())
        self._by_id[id(item)] = index
        self._kept.append(item)
        return index


class DeferredParams:
    """A node's shown params written on first read (``Node.params``), once for every node
    that shares it (the equations of equal params): the first view shows no params, the
    tooltips, the payload and the diff do."""

    __slots__ = ("_write", "_params")

    def __init__(self, write: Callable[[], dict[str, str]]) -> None:
        self._write: Callable[[], dict[str, str]] | None = write
        self._params: dict[str, str] = {}

    def __call__(self) -> dict[str, str]:
        if self._write is not None:
            self._params, self._write = self._write(), None
        return self._params

    def __eq__(self, other: object) -> bool:  # nodes compare by their params, written or not
        return self() == (other() if isinstance(other, DeferredParams) else other)


@dataclass(slots=True)
class Node:
    id: int
    kind: str  # eqn | input | const | output
    label: str
    group: int
    primitive: str | None = None
    input_kind: str | None = None
    # ``params``: a dict, or DeferredParams until first read
    _params: dict[str, str] | DeferredParams = field(default_factory=dict)
    outputs: list[Aval] = field(default_factory=list)
    literals: list[str] = field(default_factory=list)
    source: SourceLoc | None = None
    flops: float = 0.0  # estimated cost (jaxviz.costs; trip counts of enclosing loops applied)
    bytes: float = 0.0

    def copied(self, nid: int, group: int) -> Node:
        """This node again, as ``nid`` in ``group`` (a walk over a sub-jaxpr made again:
        its params shared, read-only)."""
        return Node(nid, self.kind, self.label, group, self.primitive, self.input_kind, self._params,
                    self.outputs, list(self.literals), self.source, self.flops, self.bytes)

    @property
    def params(self) -> dict[str, str]:
        """The params worth a tooltip line, as text (shared by nodes of equal params: read-only)."""
        params = self._params
        if isinstance(params, DeferredParams):
            params = self._params = params()
        return params

    @params.setter
    def params(self, value: dict[str, str]) -> None:
        self._params = value

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
    # The node of the one equation whose sub-jaxprs this group holds (a scan, relu's
    # custom_jvp_call, ``where`` shown as the user's call, a library call made through a
    # ``jit``: ``odeint``, ``diffrax.diffeqsolve``); else None.
    holder: int | None = None
    # A call of one of JAX's own helpers shown as the user's call (``where``, not ``jit:
    # _where``): one operation, whatever equations it holds (``Graph.operations``).
    helper: bool = False
    # What the compiled program's collectives inside it move (jaxviz.costs.annotate_collectives):
    # how many, and the bytes of their results on one device.
    collectives: int = 0
    comm_bytes: float = 0.0

    def copied(self, gid: int, parent: int, depth: int, group_offset: int, node_offset: int) -> Group:
        """This group again, as ``gid`` under ``parent``, the groups and nodes it holds
        offset by ``group_offset`` and ``node_offset`` (a walk over a sub-jaxpr made again)."""
        return Group(gid, self.name, self.kind, parent, depth, [c + group_offset for c in self.groups],
                     [n + node_offset for n in self.nodes], source=self.source, repeat=self.repeat,
                     holder=None if self.holder is None else self.holder + node_offset, helper=self.helper)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id, "name": self.name, "kind": self.kind, "parent": self.parent,
            "groups": self.groups, "nodes": self.nodes, "n_eqns": self.n_eqns,
            "source": self.source.to_json() if self.source else None, "repeat": self.repeat,
            "flops": self.flops, "bytes": self.bytes, "holder": self.holder,
            "helper": self.helper, "collectives": self.collectives, "comm_bytes": self.comm_bytes,
        }


# Kinds of groups that are never folded into a "repeat" group (the rest are: call, scope,
# eqn and whatever else is a layer of the user's program).
NOT_FOLDED = frozenset({"root", "inputs", "outputs", "jaxpr", "transform", "phase", "repeat"})
REPEAT_MIN = 3  # shortest run of identical sibling groups that is folded
PERIOD_MAX = 6  # longest sequence of siblings that, repeated, is folded as one layer
# ... counting the equations written between them (a residual's ``h = h + attn``) too
PERIOD_MAX_ITEMS = 10
AUTO_BUDGET = 80  # items (boxes and nodes) in the first view: what two screens read well
# The first view fits about two screens (3,000 pt each way as dot lays it out, the
# legend included): within this estimate of its size, which leaves room for the legend
# and for what the estimate misses.
AUTO_RANKS = 36  # rows (about 50 pt each)
AUTO_WIDTH_PT = 1700
# The estimate's error against dot's layout is large (its width 0.5 to 2 times dot's):
# where dot is at hand, the renderer fits the budget to it (``first_view_room``).
# A fold shown in the first view keeps its top within this many rows of the view's top:
# the first screen at a legible zoom (about 700 pt of a 1,000 px window's canvas).
FIRST_SCREEN_ROWS = 9
# Each character's advance in dot's 10 pt Helvetica as laid out here (measured with
# ``dot -Tjson`` on runs of one character); any other character: CHAR_PT.
CHAR_PT = 6.04
_CHAR_PT = {**dict.fromkeys("ijlIJ',./:;| ·", 3.04), "f": 3.41, **dict.fromkeys("rt!()-[]›", 3.79),
            **dict.fromkeys("cszL*?_`", 5.29), **dict.fromkeys("ABCKRVXZ", 6.79),
            **dict.fromkeys("DGHNOQU&", 7.54), **dict.fromkeys("w#+<=>^~×→", 8.29), "M": 9.04,
            **dict.fromkeys("mW%@…", 9.79)}
LABEL_MARGIN_PT = 5.76  # a node's margin each side (0.08 in)
HOUSE_WIDTH = 1.74  # a house (an input, an output) is this much wider than a box of its label
MIN_ITEM_PT = 54  # dot's smallest node (0.75 in)
ITEM_GAP_PT = 18  # nodesep
EDGE_PT = 40  # an edge's route and label, across the rows it spans
CLUSTER_MARGIN_PT = 16
CLUSTER_LABEL_RANKS = 0.5  # an open group's label and margins, in rows
BOX_RANKS = 1.5  # a closed group's box: name, size, source and cost lines
PHASE_TITLE_SCALE = 1.2  # a phase's title is 12 pt (visual.json's phase), others 10
AUTO_MIN_ITEMS = 8  # a first view with fewer opens its biggest box, up to AUTO_MAX_ITEMS
AUTO_MIN_PROGRAM_ITEMS = 3  # and so does one with fewer boxes and equations beside its arguments and results
AUTO_MAX_ITEMS = 90
# How much opening a group of each kind tells in the first view (0: never opened there).
AUTO_OPEN_RANK = {"inputs": 0, "outputs": 0, "phase": 4, "call": 3, "library": 2, "scope": 3, "transform": 3,
                  "repeat": 0, "eqn": 1, "jaxpr": 1, "line": 0}
AUTO_OPEN_MIN_EQNS = 4  # boxes this small stay closed in the first view
FLAT_NODES_MIN = 8  # a box of this many loose equations (and few boxes) opens last
PHASE_TIERS = {"forward": 0, "backward": 1, "update": 2}  # what the first view opens first
EQUATION_TIER = 3
LIBRARY_FLOW_TIER = 4  # a library's own control flow (numpyro's cond branches) opens last
CONTROL_FLOW = frozenset({"eqn", "jaxpr"})  # an equation holding sub-jaxprs, one of them
LOOP_PRIMITIVES = frozenset({"scan", "while"})
LOOP_AND_BRANCH_PRIMITIVES = LOOP_PRIMITIVES | {"cond"}


@functools.lru_cache(maxsize=65536)
def _line_width(line: str) -> float:
    return sum(_CHAR_PT.get(ch, CHAR_PT) for ch in line)


def _text_width(text: str, scale: float = 1.0) -> float:
    """About how wide ``dot`` draws a label (10 pt Helvetica times ``scale``, lines split
    at ``\\n``), with its margins."""
    return max(map(_line_width, text.split("\n"))) * scale + 2 * LABEL_MARGIN_PT


def _predecessors(height: dict[Item, float], successors: dict[Item, list[Item]]) -> dict[Item, list[Item]]:
    predecessors: dict[Item, list[Item]] = {}
    for a, bs in successors.items():
        for b in bs:
            if a in height and b in height:
                predecessors.setdefault(b, []).append(a)
    return predecessors


def _finish_order(height: dict[Item, float], predecessors: dict[Item, list[Item]],
                  ) -> list[tuple[Item, list[Item]]]:
    """Each item (in the order ``_layers`` places them) with the items before it that
    place it: its predecessors but those an edge closing a cycle comes from (groups can
    feed each other both ways), found by a depth-first walk up the predecessors."""
    order: list[tuple[Item, list[Item]]] = []
    done: set[Item] = set()
    for first in height:
        if first in done:
            continue
        stack: list[tuple[Item, int]] = [(first, 0)]
        on_path = {first}
        while stack:
            item, i = stack[-1]
            before = predecessors.get(item, ())
            if i < len(before):
                stack[-1] = (item, i + 1)
                prev = before[i]
                if prev not in done and prev not in on_path:
                    stack.append((prev, 0))
                    on_path.add(prev)
                continue
            stack.pop()
            on_path.discard(item)
            order.append((item, [p for p in before if p in done]))
            done.add(item)
    return order


def _layers(height: dict[Item, float], links: _Links) -> dict[Item, float]:
    """Where each item starts, in rows: after the heaviest path of items leading to it
    (a top-to-bottom layout's ranks); an edge closing a cycle is ignored
    (``_finish_order``). ``links``: what of this is read from the items and edges alone."""
    successors = links.successors
    start: dict[Item, float] = {}
    for item, before in links.order:
        if len(before) == 1:  # most items: one value in (a chain's)
            start[item] = start[before[0]] + height[before[0]]
        elif not before:
            start[item] = 0.0
        else:
            start[item] = max([start[p] + height[p] for p in before], default=0.0)
    # dot keeps edges short: an item fed by nothing here (a constant, a value from outside)
    # stands just above the first item that reads it, not on the top row; but those of
    # ``top`` (the program's inputs, drawn on the first row).
    for item in sorted(links.unfed, key=lambda i: -start[i]):
        below = [start[b] for b in successors.get(item, ()) if b in start and b != item]
        if below:
            start[item] = max(start[item], min(below) - height[item])
    return start


def _routed(edges: list[tuple[Item, Item]]) -> list[tuple[Item, Item]]:
    """The pairs of items whose edges take a route of their own (``_widest_row``): one
    route a pair; none for two items feeding each other (a loop of layers and its
    residual adds: dot draws them side by side, their edges short)."""
    linked = set(edges)
    return list(dict.fromkeys(pair for pair in edges if pair[::-1] not in linked))


def _widest_row(start: dict[Item, float], height: dict[Item, float], width: dict[Item, float],
                routed: list[tuple[Item, Item]]) -> float:
    """The widest row of a layout where each item spans rows [start, start + height):
    the most width standing side by side at one height (a sweep over the spans). An edge
    takes room in the rows it crosses too (dot routes it through them, its label beside):
    those of ``routed`` (``_routed``)."""
    # (row, opens, width and gap) where a span opens or closes: in the order of (row,
    # opens, width), as adding the gap keeps it
    events = [(first, 1, width[i] + ITEM_GAP_PT) for i, first in start.items()]
    events += [(first + height[i], 0, width[i] + ITEM_GAP_PT) for i, first in start.items()]
    for a, b in routed:
        if start.get(a, 0) > start.get(b, 0):
            a, b = b, a
        if a in start and b in start:
            top, bottom = start[a] + height[a] - 0.5, start[b] + 0.5
            if top > bottom:
                top, bottom = bottom, top
            events += ((top, 1, EDGE_PT + ITEM_GAP_PT), (bottom, 0, EDGE_PT + ITEM_GAP_PT))
    events.sort()
    best = standing = 0.0  # the width standing after each event, summed in the events' order
    for _, opening, w in events:
        standing = standing + w if opening else standing - w
        if standing > best:
            best = standing
    return best


_NUMBERED = re.compile(r"(?:[\s_\-.]*\d+|\[\d+\])$")  # h_0, Dense3, layer-2, blocks[5]


def name_stem(name: str) -> str:
    """``Dense`` for ``Dense_0``, ``blocks`` for ``blocks[5]``: a layer's name without its
    number."""
    return _NUMBERED.sub("", name)


def period_name(names: list[str]) -> str:
    """What one period of a run of layers written inline is called: the module all its
    parts are paths in (``res_block`` for Haiku's ``res_block/batch_norm``,
    ``res_block/conv2_d``: an optimizer's update of one block's parameters), else its
    layers, ``layer_norm + multi_head_attention``."""
    heads = {name.partition("/")[0] for name in names}
    if len(heads) == 1 and all("/" in name for name in names):
        return heads.pop()
    return " + ".join(dict.fromkeys(name_stem(name) or name for name in names))


def common_name(names: list[str]) -> str:
    """What a run of layers is called: ``block`` for twelve ``block``s, ``h`` for ``h_0 …
    h_11``, ``blocks`` for ``blocks[0] … blocks[11]``, else the first and last names."""
    if len(set(names)) == 1:
        return names[0]
    stems = {_NUMBERED.sub("", n) for n in names}
    if len(stems) == 1 and "" not in stems:
        return stems.pop()
    return f"{names[0]} … {names[-1]}"


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
LEGEND_ITEM: Item = ("legend", 0)  # the legend, in the estimate of the first view's size
# Where an open group's items start, their heights, and its rows (``Graph._group_layout``).
_Layout = tuple[dict[Item, float], dict[Item, float], float]


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

    def phase_order(self) -> list[tuple[list[Item], list[Item]]]:
        """For each two consecutive sibling phases (forward → backward → update): the last
        items of the first and the first items of the second, so that a renderer can
        stack the phases in that order (an update's step-count arithmetic reads only
        inputs, and would otherwise float up beside the forward pass)."""
        out = []
        for gid in sorted(self.expanded):
            g = self.graph.groups[gid]
            phases = [c for c in g.groups if self.graph.groups[c].kind == "phase"]
            for a, b in zip(phases, phases[1:]):
                out.append((self._ends(self._items_below(a), last=True),
                            self._ends(self._items_below(b), last=False)))
        return out

    def _items_below(self, gid: int) -> set[Item]:
        if gid not in self.expanded:
            return {("g", gid)}
        g = self.graph.groups[gid]
        items: set[Item] = {("n", n) for n in g.nodes}
        for c in g.groups:
            items |= self._items_below(c)
        return items

    def _ends(self, items: set[Item], last: bool) -> list[Item]:
        """The items with no edge out of (``last``) or into them from the others; all of
        them when each has one (two boxes feeding each other: a user's line around a
        library call)."""
        linked = {e.src if last else e.dst for e in self.edges
                  if e.src in items and e.dst in items and e.src != e.dst}
        return sorted(items - linked) or sorted(items)

    def chain(self, gid: int) -> list[int]:
        """An open group and the open groups it only wraps (``forward`` › ``loss_fn`` ›
        ``GPT``: no node and a single child each), outermost first: drawn as one cluster
        titled by their path."""
        return self.graph.open_chain(gid, self.expanded)

    def visible_counts(self) -> tuple[int, int]:
        """(visible nodes, visible collapsed groups)."""
        n_nodes = n_groups = 0
        for gid in self.expanded:
            g = self.graph.groups[gid]
            n_nodes += len(g.nodes)
            n_groups += sum(1 for c in g.groups if c not in self.expanded)
        return n_nodes, n_groups


@dataclass(slots=True)
class _Links:
    """What the size estimate of an open group reads from its items and the edges between
    them alone, whatever else is open: its items' sizes as closed boxes (in the order
    ``_layers`` visits them), the links between them, and which of its child groups are
    folds or read from the program's inputs."""

    height: dict[Item, float]
    width: dict[Item, float]
    crossing: dict[Item, int]  # values an item takes in or hands out
    successors: dict[Item, list[Item]]
    order: list[tuple[Item, list[Item]]]  # ``_finish_order``
    unfed: list[Item]  # items fed by nothing here, but the program's inputs (the first row)
    routed: list[tuple[Item, Item]]  # ``_routed`` of the links between different items
    read_from_top: list[int]  # child groups (no phase) that one of the program's inputs feeds
    folds: frozenset[int]  # child groups that are folds (``Graph.is_fold``)


class _Sizes:
    """What the estimate of a view's size (``Graph.layout_extent``) reads of the graph,
    each read once while it does not change: a first view tries dozens of expansions,
    each estimated from the same items' widths and the same links between them."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self._links: dict[int, _Links] = {}
        self._titles: dict[tuple[int, ...], float] = {}
        self._legend_width: float | None = None

    @property
    def legend_width(self) -> float:
        if self._legend_width is None:
            self._legend_width = self.graph._legend_width()
        return self._legend_width

    def title_width(self, chain: list[int]) -> float:
        key = tuple(chain)
        width = self._titles.get(key)
        if width is None:
            width = self._titles[key] = self.graph._chain_title_width(chain)
        return width

    def links(self, gid: int) -> _Links:
        links = self._links.get(gid)
        if links is None:
            links = self._links[gid] = self._read_links(gid)
        return links

    def _read_links(self, gid: int) -> _Links:
        graph = self.graph
        g = graph.groups[gid]
        height: dict[Item, float] = {}
        width: dict[Item, float] = {}
        for n in g.nodes:
            height[("n", n)], width[("n", n)] = 1.0, graph._node_width(n)
        for c in g.groups:
            height[("g", c)], width[("g", c)] = BOX_RANKS, graph._box_width(c)
        edges = [pair for pair in graph._bucket(gid) if pair[0] != pair[1]]
        crossing: dict[Item, int] = {}
        successors: dict[Item, list[Item]] = {}
        for a, b in edges:
            crossing[a] = crossing.get(a, 0) + 1
            crossing[b] = crossing.get(b, 0) + 1
            successors.setdefault(a, []).append(b)
        phases = [("g", c) for c in g.groups if graph.groups[c].kind == "phase"]
        for a, b in zip(phases, phases[1:]):  # drawn stacked (View.phase_order)
            successors.setdefault(a, []).append(b)
        top = frozenset(i for i in height if gid == 0 and (
            i[0] == "n" and graph.nodes[i[1]].kind in ("input", "const")
            or i[0] == "g" and graph.groups[i[1]].kind == "inputs"))
        predecessors = _predecessors(height, successors)
        fed = {b for a in top for b in successors.get(a, ())}
        return _Links(height, width, crossing, successors, _finish_order(height, predecessors),
                      [i for i in height if i not in predecessors and i not in top], _routed(edges),
                      [c for c in g.groups if graph.groups[c].kind != "phase" and ("g", c) in fed],
                      frozenset(c for c in g.groups if graph.is_fold(c)))


class Graph:
    """Nodes, edges and the group tree. Build with ``add_*``, then call ``finish()``."""

    def __init__(self, name: str = "program") -> None:
        self.name = name
        self.nodes: list[Node] = []
        self.edges: list[Edge] = []
        self.groups: list[Group] = [Group(0, name, "root", None, 0)]
        # Per group: the ids of the edges whose endpoints' lowest common group is this one
        # (``finish``); and, made on first use (``_bucket``), those edges bucketed by the
        # pair of child items (of this group) that contain the endpoints. A view needs the
        # buckets of its open groups only: a first view, a few of a program's.
        self._edges_at: dict[int, array[int]] = {}
        self._buckets: dict[int, dict[tuple[Item, Item], list[int]]] = {}
        self._finished = False
        # A diff's statuses ({"nodes"|"groups": {id: "added"|"removed"|"changed"}, "notes":
        # {"n3"|"g2": text}}), shipped with the graph so that every drawing colours them.
        self.marks: dict[str, dict[str, str]] | None = None
        # The first view's budget (``AUTO_WIDTH_PT`` wide, ``AUTO_RANKS`` rows) times these
        # (width, rows): fitted to ``dot``'s layout by the renderer where dot is at hand
        # (``render.dot.first_view_svg``); the estimate alone, without.
        self.first_view_room: tuple[float, float] = (1.0, 1.0)
        # The groups the first view may open (None: any): where dot's layout of it puts
        # the model's folds off its first screen, those it opened but what pushed them
        # off (``render.dot.fit_folds_to_first_screen``).
        self.first_view_opens: frozenset[int] | None = None

    # ----------------------------------------------------------------- building
    def add_group(self, name: str, kind: str, parent: int, source: SourceLoc | None = None) -> int:
        gid = len(self.groups)
        self.groups.append(Group(gid, name, kind, parent, self.groups[parent].depth + 1, source=source))
        self.groups[parent].groups.append(gid)
        return gid

    def add_node(self, kind: str, label: str, group: int, params: dict[str, str] | None = None,
                 **attrs: Any) -> int:
        nid = len(self.nodes)
        self.nodes.append(Node(nid, kind, label, group, _params={} if params is None else params, **attrs))
        self.groups[group].nodes.append(nid)
        return nid

    def add_edge(self, src: int, dst: int, aval: Aval, var: str) -> None:
        if src != dst:
            self.edges.append(Edge(src, dst, aval, var))

    def finish(self) -> Graph:
        """Fold repeated layers into ``repeat`` groups, count equations per group, bucket
        edges. Linear in the size of the graph."""
        self._fold_repeats()
        self._unwrap_lone_lines()
        self._drop_unreachable()
        groups = self.groups
        top_down = list(self.descendants(0))  # every group before its descendants
        for gid in top_down:
            g = groups[gid]
            g.depth = 0 if g.parent is None else groups[g.parent].depth + 1
        is_eqn = [n.kind == "eqn" for n in self.nodes]
        for gid in reversed(top_down):  # every group after its descendants
            g = groups[gid]
            g.n_eqns = sum(map(is_eqn.__getitem__, g.nodes)) + sum(groups[c].n_eqns for c in g.groups)
        self._index_edges()
        self._finished = True
        return self

    def _index_edges(self) -> None:
        """Each edge under the lowest group holding both its ends (``_edges_at``); the
        buckets are made from it when a view opens that group."""
        up = [g.id if g.parent is None else g.parent for g in self.groups]
        group_of = [n.group for n in self.nodes]
        n_groups = len(self.groups)
        memo: dict[int, int] = {}  # per pair of groups (one int: few pairs, edges are many)
        by_lca: dict[int, list[int]] = {gid: [] for gid in range(n_groups)}
        for i, e in enumerate(self.edges):
            src, dst = group_of[e.src], group_of[e.dst]
            if src == dst:  # most values stay in their group
                by_lca[src].append(i)
                continue
            pair = src * n_groups + dst
            lca = memo.get(pair)
            if lca is None:
                lca = memo[pair] = self._lca_groups(src, dst, up)[0]
            by_lca[lca].append(i)
        self._edges_at = {gid: array("q", ids) for gid, ids in by_lca.items() if ids}  # 8 bytes an edge
        self._buckets = {}

    def _bucket(self, gid: int) -> dict[tuple[Item, Item], list[int]]:
        """The edges under group ``gid`` by the pair of its child items (a node of its own
        or a child group) holding their ends, in edge order; made on first use."""
        bucket = self._buckets.get(gid)
        if bucket is None:
            bucket = {}
            above: dict[int, Item] = {}  # a group inside gid → the item of gid around it
            for i in self._edges_at.get(gid, ()):
                e = self.edges[i]
                key = (self._item_in(gid, e.src, above), self._item_in(gid, e.dst, above))
                bucket.setdefault(key, []).append(i)
            self._buckets[gid] = bucket
        return bucket

    def _item_in(self, gid: int, node_id: int, above: dict[int, Item]) -> Item:
        """The item of group ``gid`` holding node ``node_id`` (which lies below it): the
        node itself, or the child group around it."""
        g = self.nodes[node_id].group
        if g == gid:
            return ("n", node_id)
        item = above.get(g)
        if item is None:
            child = g
            while (parent := self.groups[child].parent) != gid and parent is not None:
                child = parent
            item = above[g] = ("g", child)
        return item

    def _unwrap_lone_lines(self) -> None:
        """A line's group left holding one box and nothing else, once repeats are folded
        (twelve calls of a jitted ``block`` made on one line: ``block ×12``), is a box in a
        box that says nothing more: the box takes its place."""
        for group in self.groups:
            if group.kind != "line" or group.nodes or len(group.groups) != 1 or group.parent is None:
                continue
            (child,) = group.groups
            parent = self.groups[group.parent]
            parent.groups = [child if c == group.id else c for c in parent.groups]
            self.groups[child].parent = parent.id
            group.groups, group.parent = [], None

    def _drop_unreachable(self) -> None:
        """Groups emptied and detached (merged into another, unwrapped) leave the tree;
        the rest keep their order, renumbered."""
        reachable = set(self.descendants(0))
        if len(reachable) == len(self.groups):
            return
        kept = [g for g in self.groups if g.id in reachable]
        new_id = {g.id: i for i, g in enumerate(kept)}
        for g in kept:
            g.id = new_id[g.id]
            g.parent = None if g.parent is None else new_id[g.parent]
            g.groups = [new_id[c] for c in g.groups]
        for n in self.nodes:
            n.group = new_id[n.group]
        self.groups = kept

    def bottom_up(self) -> list[int]:
        """Group ids, each after all of its descendants (children before parents: ids do
        not give that order, repeat groups come last)."""
        return list(self.descendants(0))[::-1]

    # ----------------------------------------------------------------- repeats
    def _fold_repeats(self) -> None:
        """Runs of ``REPEAT_MIN`` or more consecutive sibling groups of one kind and the
        same structure become one ``repeat`` group holding them, whatever they are called
        (``h_0 … h_11`` as well as twelve calls of ``block``). Runs are found on the tree
        as built, then folded, so that folding one run never changes what another is
        compared with."""
        memo: dict[int, int] = {}
        interned: dict[tuple[Any, ...], int] = {}
        first_nodes: dict[int, int] = {}  # per group: its first node (program order), once asked
        runs: list[tuple[int, list[list[int]]]] = []  # (parent, its runs)
        periods: list[tuple[int, list[tuple[list[Item], int]]]] = []  # (parent, [(run, period)])
        for parent in self.groups:
            kids = parent.groups
            if parent.kind == "repeat" or len(kids) < REPEAT_MIN:
                continue
            found: list[list[int]] = []
            run: list[int] = []
            for c in kids:
                if run and self._same_layer(run[0], c, memo, interned):
                    run.append(c)
                    continue
                if len(run) >= REPEAT_MIN:
                    found.append(run)
                run = [c] if self.groups[c].kind not in NOT_FOLDED else []
            if len(run) >= REPEAT_MIN:
                found.append(run)
            if found:
                runs.append((parent.id, found))
            else:
                periods.append((parent.id, self._layer_periods(parent, memo, interned, first_nodes)))
        for pid, found_periods in periods:
            if found_periods:
                runs.append((pid, [self._add_period_groups(pid, run, k) for run, k in found_periods]))
        for pid, found in runs:
            parent = self.groups[pid]
            first_of = {run[0]: run for run in found}
            folded = {c for run in found for c in run}
            children = []
            for c in parent.groups:
                fold = first_of.get(c)
                if fold is not None:
                    children.append(self._add_repeat(pid, fold))
                elif c not in folded:
                    children.append(c)
            parent.groups = children

    def _layer_periods(self, parent: Group, memo: dict[int, int], interned: dict[tuple[Any, ...], int],
                       first_nodes: dict[int, int]) -> list[tuple[list[Item], int]]:
        """Periodic runs of ``parent``'s children: of its groups alone, or, where that folds
        no fewer of them, of its groups and the equations written between them in program
        order (Haiku's transformer example: ``layer_norm``, ``attention``, ``h = h + …``,
        ``layer_norm``, ``dense_block``, ``h = h + …``, per layer), so that a layer's own
        equations fold with it rather than trail the fold."""
        groups_only = self._periodic_runs([("g", c) for c in parent.groups], PERIOD_MAX, memo, interned)
        if not parent.nodes or not groups_only:  # no layer among its groups: none with equations either
            return groups_only
        mixed = self._periodic_runs(self._in_program_order(parent, first_nodes), PERIOD_MAX_ITEMS, memo, interned)

        def folded(found: list[tuple[list[Item], int]]) -> int:
            return sum(kind == "g" for run, _ in found for kind, _ in run)

        return mixed if folded(mixed) >= folded(groups_only) else groups_only

    def _in_program_order(self, parent: Group, first_nodes: dict[int, int]) -> list[Item]:
        """``parent``'s groups, in their order, and its nodes merged in where they come in
        program order (node ids are; a group comes where its first node does)."""
        items: list[Item] = []
        nodes = sorted(parent.nodes)
        at = 0
        for c in parent.groups:
            first = self._first_node(c, first_nodes)
            while at < len(nodes) and nodes[at] < first:
                items.append(("n", nodes[at]))
                at += 1
            items.append(("g", c))
        items += [("n", n) for n in nodes[at:]]
        return items

    def _first_node(self, gid: int, first_nodes: dict[int, int]) -> int:
        """The smallest node id below group ``gid`` (-1 for none), each group's once."""
        found = first_nodes.get(gid)
        if found is None:
            g = self.groups[gid]
            below = [self._first_node(c, first_nodes) for c in g.groups]
            found = first_nodes[gid] = min([*g.nodes, *(b for b in below if b >= 0)], default=-1)
        return found

    def _item_signature(self, item: Item, memo: dict[int, int],
                        interned: dict[tuple[Any, ...], int]) -> tuple[Any, ...] | None:
        """What an item of a period compares by (None: it ends any period): a group's kind
        and structure, an equation's primitive and output types."""
        kind, i = item
        if kind == "g":
            g = self.groups[i]
            return None if g.kind in NOT_FOLDED else ("g", g.kind, self._signature(i, memo, interned))
        n = self.nodes[i]
        return ("n", n.primitive, tuple(n.outputs)) if n.kind == "eqn" else None

    def _periodic_runs(self, items: list[Item], longest: int, memo: dict[int, int],
                       interned: dict[tuple[Any, ...], int]) -> list[tuple[list[Item], int]]:
        """Runs of a sequence of ``k`` siblings repeated ``REPEAT_MIN`` or more times (a
        layer written inline in a loop: ``layer_norm``, ``multi_head_attention``,
        ``layer_norm``, ``dense_block``, four times), as (the siblings, k); each period
        holds a group."""
        sigs = [self._item_signature(item, memo, interned) for item in items]
        found: list[tuple[list[Item], int]] = []
        i = 0
        while i < len(items):
            best = 0
            for k in range(2, longest + 1):
                if i + k > len(sigs) or None in sigs[i:i + k]:
                    break
                if not any(kind == "g" for kind, _ in items[i:i + k]):
                    continue
                reps = 1
                while sigs[i + reps * k:i + (reps + 1) * k] == sigs[i:i + k]:
                    reps += 1
                if reps >= REPEAT_MIN:
                    best = k
                    found.append((items[i:i + reps * k], k))
                    i += reps * k
                    break
            if not best:
                i += 1
        return found

    def _add_period_groups(self, parent: int, run: list[Item], k: int) -> list[int]:
        """Wrap each period of a periodic run in a group named after its layers; the
        new groups, in order, fold as one run."""
        wrapped = []
        for start in range(0, len(run), k):
            groups = [i for kind, i in run[start:start + k] if kind == "g"]
            nodes = [i for kind, i in run[start:start + k] if kind == "n"]
            gid = len(self.groups)
            self.groups.append(Group(gid, period_name([self.groups[c].name for c in groups]), "scope", parent, 0,
                                     groups=groups, nodes=nodes))
            for c in groups:
                self.groups[c].parent = gid
            for n in nodes:
                self.nodes[n].group = gid
            wrapped.append(gid)
        moved_groups = {i for kind, i in run if kind == "g"}
        moved_nodes = {i for kind, i in run if kind == "n"}
        p = self.groups[parent]
        at = p.groups.index(next(i for kind, i in run if kind == "g"))
        p.groups = p.groups[:at] + wrapped + [c for c in p.groups[at:] if c not in moved_groups]
        p.nodes = [n for n in p.nodes if n not in moved_nodes]
        return wrapped

    def _same_layer(self, a: int, b: int, memo: dict[int, int], interned: dict[tuple[Any, ...], int]) -> bool:
        return self.groups[a].kind == self.groups[b].kind \
            and self._signature(a, memo, interned) == self._signature(b, memo, interned)

    def _wrapped_layers_name(self, members: list[Group]) -> str | None:
        """The layers a run of one wrapper's boxes wraps, one each (Haiku's ``hk.remat
        (checkpoint)`` boxes around ``res_block`` … ``res_block_2``, beside the recomputed
        forward each holds too): ``res_block``; None where they do not say."""
        names = [[self.groups[c].name for c in m.groups] for m in members]
        shared = set.intersection(*map(set, names))
        own = [[n for n in inner if n not in shared] for inner in names]
        if not all(len(inner) == 1 for inner in own):
            return None
        name = common_name([inner[0] for inner in own])
        return None if " … " in name else name

    def _add_repeat(self, parent: int, run: list[int]) -> int:
        members = [self.groups[c] for c in run]
        first = members[0]
        same_site = first.source is not None and all(
            m.source is not None and (m.source.file, m.source.line) == (first.source.file, first.source.line)
            for m in members)
        gid = len(self.groups)
        name = common_name([m.name for m in members])
        if all(not name_stem(m.name) for m in members):
            # numbered only (Flax modules named "0" … "5"): named after what each wraps
            inner = {self.groups[m.groups[0]].name if len(m.groups) == 1 and not m.nodes else None
                     for m in members}
            if len(inner) == 1 and None not in inner:
                name = inner.pop()
        elif len({m.name for m in members}) == 1 and all(m.kind == "eqn" for m in members):
            name = self._wrapped_layers_name(members) or name
        self.groups.append(Group(gid, f"{name} ×{len(run)}", "repeat", parent, 0, groups=list(run),
                                 source=first.source if same_site else None))
        for m in members:
            m.parent = gid
        return gid

    def _signature(self, gid: int, memo: dict[int, int], interned: dict[tuple[Any, ...], int]) -> int:
        """A small int standing for the group's structure: its kind, the kind, primitive
        and output types of its nodes in order, and its children's signatures. Names are
        left out, so ``h_0`` and ``h_1`` compare by what they compute. Computed bottom-up,
        each group once (``memo``), so linear in the graph."""
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
            nodes = map(self.nodes.__getitem__, g.nodes)
            key = (g.kind, tuple([(node.kind, node.primitive, tuple(node.outputs)) for node in nodes]),
                   tuple([memo[c] for c in g.groups]))
            memo[g.id] = interned.setdefault(key, len(interned))
        return memo[gid]

    def _group_chain(self, gid: int) -> list[int]:
        """Group ids from ``gid`` up to the root."""
        chain = []
        g: int | None = gid
        while g is not None:
            chain.append(g)
            g = self.groups[g].parent
        return chain

    def _lca_groups(self, ga: int, gb: int, up: list[int]) -> tuple[int, int, int]:
        """(lowest common group, the child of it above ``ga``, the one above ``gb``); -1
        where ``ga`` or ``gb`` is the common group itself. Climbs by depth (set in
        ``finish``; ``up[g]`` is g's parent)."""
        groups = self.groups
        ia = ib = -1
        while groups[ga].depth > groups[gb].depth:
            ia, ga = ga, up[ga]
        while groups[gb].depth > groups[ga].depth:
            ib, gb = gb, up[gb]
        while ga != gb:
            ia, ga = ga, up[ga]
            ib, gb = gb, up[gb]
        return ga, ia, ib

    # ----------------------------------------------------------------- queries
    @property
    def eqn_count(self) -> int:
        return self.groups[0].n_eqns

    def eqn_nodes(self) -> list[Node]:
        return [n for n in self.nodes if n.kind == "eqn"]

    def ancestors(self, group_id: int) -> list[int]:
        """``group_id`` and the groups holding it, innermost first (the root last)."""
        chain: list[int] = []
        g: int | None = group_id
        while g is not None:
            chain.append(g)
            g = self.groups[g].parent
        return chain

    def descendants(self, group_id: int) -> Iterable[int]:
        stack = [group_id]
        while stack:
            g = stack.pop()
            yield g
            stack.extend(self.groups[g].groups)

    def expansion(self, expand: int | str | Iterable[int] | None = None,
                  budget: int = AUTO_BUDGET) -> frozenset[int]:
        """Resolve an expansion request into the set of expanded group ids.

        ``None``/"auto": the most telling groups whose view shows at most ``budget`` items
        (``_auto_expansion``); an int N: groups at depth < N+1 (0 = top level collapsed); "all"; or an
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
        """The most telling set of open groups whose view shows at most ``budget`` items.

        Greedy, by tier (the forward pass and the model's structure, then the backward
        pass, the update, and equation boxes last; ``_push_openable``), then groups that
        hold groups before boxes of equations (the budget goes to structure), shallow
        before deep and big before small. A box that only wraps another (``forward`` →
        ``loss_fn``) opens with it, as one cluster, and costs nothing only when it shows a
        fold; it stays closed when what it wraps cannot open.
        Never opened: the leaves of an argument, folds (their layers are all alike: opening
        one is the user's choice), a line's equations, small boxes, and calls of JAX's own
        helpers that run no loop or branch (one operation each to the user). The view
        must also fit about two screens: ``AUTO_WIDTH_PT`` wide and ``AUTO_RANKS`` rows
        as ``layout_extent`` estimates them."""
        expanded = {0}
        visible = self._items(0)
        heap: list[tuple[int, int, int, int, int, int]] = []
        self._push_openable(heap, 0, tier=0)
        # Each open group's extent, kept between tries: opening a group changes its own
        # and its ancestors' only.
        extents: dict[int, tuple[float, float, float]] = {}
        sizes = _Sizes(self)
        # The inputs' row and the legend may be wider than the budget already: then what
        # opens must not widen the view further.
        room_width, room_rows = self.first_view_room
        max_width = max(AUTO_WIDTH_PT * room_width, self.layout_extent(expanded, extents, sizes)[0])
        max_rows = AUTO_RANKS * room_rows
        while heap:
            tier, *_, gid = heapq.heappop(heap)
            chain = self._wrapper_chain(gid)
            if self.groups[chain[-1]].kind == "repeat":
                chain.pop()  # the fold shows as a box
            cost = self._items(chain[-1]) - 1
            if visible + cost > budget or not self._forward_copy_open(chain[-1], expanded) \
                    or self.first_view_opens is not None and not self.first_view_opens.issuperset(chain):
                continue
            self.layout_extent(expanded, extents, sizes)  # after an opening that cost nothing
            fold_top = extents[0][2]
            expanded.update(chain)
            before = self._forget_extents(extents, chain[-1])
            if cost > 0 and not self._fits(expanded, extents, sizes, max_width, max_rows, fold_top):
                expanded.difference_update(chain)  # more than about two screens
                self._forget_extents(extents, chain[-1])
                extents.update(before)  # as they were with it closed
                continue
            visible += cost
            self._push_openable(heap, chain[-1], tier=min(tier, EQUATION_TIER - 1))
        if visible < AUTO_MIN_ITEMS or self._program_items(expanded) < AUTO_MIN_PROGRAM_ITEMS:
            # one box says nothing (however many arguments feed it): open the biggest, within reason
            for gid in sorted(self._closed_boxes(expanded), key=lambda c: -self.groups[c].n_eqns):
                cost = self._items(gid) - 1
                allowed = self.first_view_opens is None or gid in self.first_view_opens
                if 0 < cost and visible + cost <= AUTO_MAX_ITEMS and allowed:
                    expanded.add(gid)
                    visible += cost
                    break
        return frozenset(expanded)

    def _forward_copy_open(self, gid: int, expanded: set[int]) -> bool:
        """Whether a group of a later pass (the backward's ``loss_fn › ResNet``) may open:
        an opening is granted per model, not per pass copy, so one whose forward copy
        (the group of the same names below the forward phase beside its own) is closed
        stays closed: it would take the room the forward could not get. True outside
        the later passes and where the forward has no copy."""
        copy = self.forward_copy(gid)
        return copy is None or copy in expanded

    def forward_copy(self, gid: int) -> int | None:
        """The group of the same names as ``gid``'s, from its pass down, below the
        ``forward`` phase beside that pass (the backward's ``loss_fn › ResNet`` → the
        forward's); None in the forward, outside the passes, or where it has no copy."""
        names: list[str] = []
        g: int | None = gid
        while g is not None and self.groups[g].kind != "phase":
            names.append(self.groups[g].name)
            g = self.groups[g].parent
        parent = self.groups[g].parent if g is not None else None
        if g is None or parent is None or self.groups[g].name == "forward":
            return None
        # the forward pass of its own step: the nearest before it (a step of a GAN's two)
        siblings = self.groups[parent].groups
        forwards = [c for c in siblings[:siblings.index(g)] if self.groups[c].kind == "phase"
                    and self.groups[c].name == "forward"]
        copy: int | None = forwards[-1] if forwards else None
        for name in reversed(names):
            if copy is None:
                return None
            copy = self._child_named(copy, name)
        return copy

    def _child_named(self, gid: int, name: str) -> int | None:
        """The child of ``gid`` named ``name``, or the layer so named in a fold among its
        children (the backward's ``layer2``, whose forward copy the fold ``layer ×3``
        holds)."""
        children = self.groups[gid].groups
        found = next((c for c in children if self.groups[c].name == name), None)
        if found is not None:
            return found
        folds = (c for c in children if self.groups[c].kind == "repeat")
        return next((layer for fold in folds for layer in self.groups[fold].groups
                     if self.groups[layer].name == name), None)

    def _runs_loop_or_branch(self, gid: int) -> bool:
        """Whether a loop or a branch runs inside the group: what a call of one of JAX's
        helpers holds of the program (``lax.scan``'s body, a library's step) rather than
        JAX's implementation of an operation (``jnp.linspace``, ``random.normal``)."""
        return any(self.nodes[h].primitive in LOOP_AND_BRANCH_PRIMITIVES for d in self.descendants(gid)
                   if (h := self.groups[d].holder) is not None)

    def _in_library(self, gid: int) -> bool:
        """Whether a group lies inside a call of a library's function."""
        g = self.groups[gid].parent
        while g is not None:
            if self.groups[g].kind == "library":
                return True
            g = self.groups[g].parent
        return False

    def _wrapper_chain(self, gid: int) -> list[int]:
        """``gid`` and the groups it only wraps (no node and a single child each, a fold
        ending it), outermost first: what opens as one cluster."""
        chain = [gid]
        g = self.groups[gid]
        while not g.nodes and len(g.groups) == 1 and g.kind != "repeat":
            g = self.groups[g.groups[0]]
            chain.append(g.id)
        return chain

    def _fits(self, expanded: set[int], extents: dict[int, tuple[float, float, float]], sizes: _Sizes,
              max_width: float, max_rows: float, fold_top: float) -> bool:
        """Whether the view fits the budget, and a fold that was on the first screen
        (``fold_top``: the topmost fold's row before this opening) still is."""
        layouts, rows = self._layouts(expanded, extents, sizes)
        if rows > max_rows:
            return False  # too many rows: known before the widths are estimated
        width, rows = self.layout_extent(expanded, extents, sizes, layouts)
        if fold_top <= FIRST_SCREEN_ROWS < extents[0][2]:
            return False  # what opened above the model's layers pushed them off the first screen
        return width <= max_width and rows <= max_rows

    def _forget_extents(self, extents: dict[int, tuple[float, float, float]],
                        gid: int) -> dict[int, tuple[float, float, float]]:
        """Drop the extents that opening or closing ``gid`` changes: its own, its
        ancestors'; those dropped."""
        dropped = {}
        g: int | None = gid
        while g is not None:
            if g in extents:
                dropped[g] = extents.pop(g)
            g = self.groups[g].parent
        return dropped

    def _closed_boxes(self, expanded: set[int] | frozenset[int]) -> list[int]:
        return [c for g in expanded for c in self.groups[g].groups
                if c not in expanded and self.groups[c].kind not in ("inputs", "outputs")]

    def layout_ranks(self, expanded: set[int] | frozenset[int]) -> float:
        """About how many ranks (rows of boxes) a top-to-bottom layout of the view has:
        the longest chain of items, an open group counting as its own longest chain plus
        a row for its label. Read from the edge buckets of the open groups only (not the
        edges), so a first view can try many expansions cheaply."""
        return self.layout_extent(expanded)[1]

    def layout_extent(self, expanded: set[int] | frozenset[int],
                      memo: dict[int, tuple[float, float, float]] | None = None,
                      sizes: _Sizes | None = None, layouts: dict[int, _Layout] | None = None,
                      ) -> tuple[float, float]:
        """(width in pt, height in rows) of a top-to-bottom layout of the view, estimated
        as ``layout_ranks`` is: items placed in rows by their longest chain, the width
        the widest row (labels as wide as ``dot`` draws them), an open group as big as
        what it shows plus its margins. ``memo``: open groups' extents known for this
        expansion (filled in with the rest), each with the row its topmost fold starts
        at (``_group_extent``). ``sizes``: what the estimate reads of the graph, kept
        between calls while the graph does not change (``_Sizes``). ``layouts``: the
        rows of those not in ``memo``, where known (``_layouts``)."""
        memo = {} if memo is None else memo
        sizes = _Sizes(self) if sizes is None else sizes
        layouts = {} if layouts is None else layouts
        for gid in sorted((g for g in expanded if g not in memo), key=lambda g: -self.groups[g].depth):
            memo[gid] = self._group_extent(gid, expanded, memo, sizes, layouts.get(gid))
        return memo[0][:2]

    def _layouts(self, expanded: set[int] | frozenset[int], memo: dict[int, tuple[float, float, float]],
                 sizes: _Sizes) -> tuple[dict[int, _Layout], float]:
        """The layouts (``_group_layout``) of the open groups not in ``memo`` (but those
        that only wrap another), and the view's rows: all a first view's try needs to
        tell that it takes too many rows."""
        layouts: dict[int, _Layout] = {}
        rows: dict[int, float] = {}

        def rows_of(c: int) -> float:
            return rows[c] if c in rows else memo[c][1]

        for gid in sorted((g for g in expanded if g not in memo), key=lambda g: -self.groups[g].depth):
            wraps = self._wraps_open(gid, expanded)
            if wraps is None:
                layouts[gid] = self._group_layout(gid, expanded, rows_of, sizes)
                rows[gid] = layouts[gid][2]
            else:
                rows[gid] = rows_of(wraps)
        return layouts, rows_of(0)

    def is_fold(self, gid: int) -> bool:
        """Whether a group reads as repeated layers: a fold (``Block ×12``) or a scan
        named after its step, with its trip count (``_update_step ×3 (scan)``). A fold of
        one operation (``where ×3``: three calls of ``jnp.where``, ``tree_zeros_like ×3``)
        is a repeated step, not layers: a layer computes more than one thing."""
        g = self.groups[gid]
        if g.kind == "repeat":  # of layers, not of source lines (``rng, _rng = split(rng)`` ×3)
            layer = self.groups[g.groups[0]] if g.groups else None
            return layer is not None and layer.kind != "line" and self.operations(layer.id) > 1
        return (g.holder is not None and g.name != self.nodes[g.holder].primitive
                                      and self.nodes[g.holder].params.get("length") is not None)

    def operations(self, gid: int) -> int:
        """The operations a group computes: one for a call of JAX's helper (``where``,
        whatever it does inside), else its equations but the one it is drawn for (its
        ``holder``: a ``custom_jvp_call``'s)."""
        g = self.groups[gid]
        return 1 if g.helper else g.n_eqns - (g.holder is not None)

    def open_chain(self, gid: int, expanded: set[int] | frozenset[int]) -> list[int]:
        """An open group and the open groups it only wraps (no node and a single child
        each), outermost first: ``View.chain``."""
        chain = [gid]
        while (wrapped := self._wraps_open(chain[-1], expanded)) is not None:
            chain.append(wrapped)
        return chain

    def chain_path(self, chain: list[int]) -> list[str]:
        """The names an open chain's title gives the groups before its innermost:
        ``forward › loss_fn``. A group's repeat text (``forward · d_loss_fn``: which of a
        GAN's two differentiations) gives way to its name where what it adds is the next
        group's name, which the title says next (``forward › d_loss_fn``)."""
        names = []
        for outer, inner in zip(chain, chain[1:]):
            g, next_g = self.groups[outer], self.groups[inner]
            names_next = g.repeat is not None and g.repeat.endswith(f" · {next_g.repeat or next_g.name}")
            names.append(g.name if names_next else g.repeat or g.name)
        return names

    def _chain_title_width(self, chain: list[int]) -> float:
        """How wide ``dot`` draws the title of an open chain's one cluster
        (``render.dot.chain_label``): ``forward › loss_fn › GPT (584 eqns) · cell line 5``,
        a phase's larger."""
        last = self.groups[chain[-1]]
        names = [*self.chain_path(chain), last.repeat or last.name]
        where = f" · {last.source.short()}" if last.source else ""
        title = f"{' › '.join(names)} ({size_text(self, last.id)}){where}"
        return _text_width(title, PHASE_TITLE_SCALE if self.groups[chain[0]].kind == "phase" else 1.0)

    def _wraps_open(self, gid: int, expanded: set[int] | frozenset[int]) -> int | None:
        """The open group that open group ``gid`` only wraps (drawn as one cluster with
        it: ``open_chain``), or None."""
        g = self.groups[gid]
        if not g.nodes and len(g.groups) == 1 and g.kind != "repeat" and g.groups[0] in expanded:
            return g.groups[0]
        return None

    def _group_extent(self, gid: int, expanded: set[int] | frozenset[int],
                      memo: dict[int, tuple[float, float, float]], sizes: _Sizes,
                      layout: _Layout | None = None) -> tuple[float, float, float]:
        """(width in pt, height in rows, the row its topmost fold starts at: inf if none)
        of an open group, from the extents of the open groups it holds. ``layout``: its
        ``_group_layout``, where known."""
        wraps = self._wraps_open(gid, expanded)
        if wraps is not None:
            return memo[wraps]  # one cluster with what it wraps (``open_chain``)
        g = self.groups[gid]
        links = sizes.links(gid)
        if layout is None:
            layout = self._group_layout(gid, expanded, lambda c: memo[c][1], sizes)
        start, height, rows = layout
        width = dict(links.width)  # its items closed
        for c in g.groups:
            if c in expanded:
                # each value crossing its border is routed inside it too, beside its items
                width[("g", c)] = max(memo[c][0] + links.crossing.get(("g", c), 0) * EDGE_PT,
                                      sizes.title_width(self.open_chain(c, expanded))) + CLUSTER_MARGIN_PT
        if gid == 0:  # the legend stands on the top row, beside the inputs
            width[LEGEND_ITEM] = sizes.legend_width
        return (_widest_row(start, height, width, links.routed), rows,
                self._fold_top(g, start, expanded, memo, links.folds))

    def _group_layout(self, gid: int, expanded: set[int] | frozenset[int], rows: Callable[[int], float],
                      sizes: _Sizes) -> _Layout:
        """(where each item starts, its height, the rows) of an open group that wraps no
        other alone, from the ``rows`` of the open groups it holds."""
        links = sizes.links(gid)
        height = dict(links.height)  # its items closed
        for c in self.groups[gid].groups:
            if c in expanded:
                height[("g", c)] = rows(c) + CLUSTER_LABEL_RANKS
        start = _layers(height, links)
        for c in links.read_from_top:  # what an open group reads from the inputs pulls its top up to them
            if c in expanded:
                start[("g", c)] = min(start[("g", c)], 1.0)
        if gid == 0:  # the legend stands on the top row, beside the inputs
            start[LEGEND_ITEM], height[LEGEND_ITEM] = 0.0, 1.0
        return start, height, max([start[i] + height[i] for i in start], default=0.0)

    def _fold_top(self, g: Group, start: dict[Item, float], expanded: set[int] | frozenset[int],
                  memo: dict[int, tuple[float, float, float]], folds: frozenset[int] | None = None) -> float:
        """The row the topmost fold inside an open group starts at (its own title row
        first), from where its items start. ``folds``: those of its children that are
        folds (``is_fold``), where the caller has them."""
        top = math.inf
        for c in g.groups:
            if c in folds if folds is not None else self.is_fold(c):
                top = min(top, start[("g", c)])
            elif c in expanded and self.groups[c].kind not in ("inputs", "outputs"):
                top = min(top, start[("g", c)] + CLUSTER_LABEL_RANKS + memo[c][2])
        return top

    def _legend_width(self) -> float:
        """About how wide ``dot`` draws the legend (``render.dot.legend_kinds``): one
        entry per kind of input the graph has, its outputs, and folds."""
        kinds = {n.input_kind for n in self.nodes if n.input_kind} | {"output"}
        if any(g.kind == "repeat" for g in self.groups):
            kinds.add("repeat")
        entries = [_text_width(LEGEND[k]["text"]) * (HOUSE_WIDTH if "house" in LEGEND[k]["shape"] else 1.0)
                   for k in kinds if k in LEGEND]
        return sum(max(MIN_ITEM_PT, w) + ITEM_GAP_PT for w in entries) + CLUSTER_MARGIN_PT

    def _node_width(self, nid: int) -> float:
        """As wide as ``dot`` draws the node's label (``render.dot.node_attrs``): an
        equation's name, literals and source line; an input's or output's path and type,
        in a house that much wider than a box."""
        n = self.nodes[nid]
        lines = [n.label]
        if n.kind == "eqn":
            if n.literals and self.groups[n.group].holder != nid:
                lines[0] += " " + ", ".join(n.literals)
        else:
            lines += [a.text for a in n.outputs[:1]]
            lines.append(n.params.get("sharding", ""))
        if n.source is not None and n.kind == "eqn":
            lines.append(n.source.short())
        width = _text_width("\n".join(lines))
        house = n.kind == "output" or n.kind != "eqn" and LEGEND[n.input_kind or "traced"]["shape"] == "invhouse"
        return max(MIN_ITEM_PT, width * HOUSE_WIDTH if house else width)

    def _box_width(self, gid: int) -> float:
        """As wide as ``dot`` draws a closed group's box (``render.dot.group_box_attrs``):
        its name, size, source and cost lines."""
        g = self.groups[gid]
        lines = [g.repeat or g.name, g.source.short() if g.source else ""]
        if g.kind not in ("inputs", "outputs"):
            lines.append(size_text(self, gid))
        if g.flops or g.bytes:  # "6.33 kFLOP · 73.7 KiB · 13%"
            lines.append(f"{fmt_flops(g.flops)} · {fmt_bytes(g.bytes)} · 99%")
        return max(MIN_ITEM_PT, _text_width("\n".join(lines)))

    def _program_items(self, expanded: set[int]) -> int:
        """The view's boxes and equations, not counting the arguments and results."""
        return sum(self.nodes[n].kind == "eqn" for gid in expanded for n in self.groups[gid].nodes) \
            + sum(c not in expanded and self.groups[c].kind not in ("inputs", "outputs")
                  for gid in expanded for c in self.groups[gid].groups)

    def _items(self, gid: int) -> int:
        g = self.groups[gid]
        return len(g.nodes) + len(g.groups)

    def _push_openable(self, heap: list[tuple[int, int, int, int, int, int]], parent: int, tier: int) -> None:
        """Queue the children of an opened group, by tier: the model's structure (and the
        forward pass) first, then the backward pass's, then the update's, then equation
        boxes; within a tier groups of groups before boxes of equations, shallow before
        deep, and big before small. A wrapper is queued as what it wraps (the end of its
        ``_wrapper_chain``): not at all when that cannot open, for free when it is a fold."""
        p = self.groups[parent]
        for c in p.groups:
            end = self._wrapper_chain(c)[-1]
            g = self.groups[end]
            if g.kind == "repeat" and end != c:  # a wrapper around a fold: showing it tells
                heapq.heappush(heap, (tier, 0, 0, 0, 0, c))
                continue
            # An equation's box tells little, unless named after the function it runs (a
            # loop's step: the story of a training loop).
            named = g.holder is not None and g.name != self.nodes[g.holder].primitive
            rank = 1 if g.holder is not None and not named else AUTO_OPEN_RANK.get(g.kind, 2)
            inner = g.kind == "library" and p.kind == "library"
            if g.kind == "library" and not inner:
                rank = AUTO_OPEN_RANK["call"]  # the user's call into a library: as telling as their own
            if rank == 0 or g.n_eqns <= AUTO_OPEN_MIN_EQNS:
                continue
            if g.helper and not self._runs_loop_or_branch(end):
                continue  # JAX's own helper (linspace, log_sigmoid): one operation, its inside JAX's
            head = self.groups[c]
            own = PHASE_TIERS.get(head.name, tier) if head.kind == "phase" else tier
            # A box of loose equations (a library's layer norm) tells less than structure,
            # and a library's inner calls less than the call the user made. One that
            # holds passes (a library's step that differentiates) is a train step.
            flat = (len(g.nodes) >= FLAT_NODES_MIN and len(g.groups) * 4 <= len(g.nodes)
                    and g.n_eqns < 5 * len(g.nodes)  # its boxes hold under four fifths of its equations
                    and not any(self.groups[p].kind == "phase" for p in g.groups))
            if inner and self._in_library(p.id):
                continue  # a library's own calls open a level at a time; this deep is the user's click
            if flat and (g.kind == "library" or self._in_library(end)):
                continue  # a library's own loose equations (optax's zeros, a layer norm) tell nothing
            if g.kind in CONTROL_FLOW and self._in_library(end):
                own = LIBRARY_FLOW_TIER  # the library's own branches and loops: after the user's
            heapq.heappush(heap, (own if own == LIBRARY_FLOW_TIER else EQUATION_TIER if rank == 1 or flat or inner else own,
                                  0 if g.groups else 1, head.depth, -rank, -g.n_eqns, c))

    def view(self, expand: int | str | Iterable[int] | None = None) -> View:
        """The visible items and aggregated edges for an expansion state."""
        assert self._finished, "call finish() first"
        expanded = self.expansion(expand)
        merged: dict[tuple[Item, Item], dict[tuple[int, str], Aval]] = {}  # per pair: (producer, name) → type
        below: dict[tuple[int, int], Item | None] = {}  # the visible item per (group, item above it)
        nodes, edges, n_groups = self.nodes, self.edges, len(self.groups)
        for gid in expanded:
            for (a, b), edge_ids in self._bucket(gid).items():
                if self._is_leaf(a, expanded) and self._is_leaf(b, expanded):
                    vals = merged.setdefault((a, b), {})
                    for i in edge_ids:  # every distinct value, each once
                        e = edges[i]
                        vals.setdefault((e.src, e.var), e.aval)
                    continue
                ends: dict[int, tuple[Item | None, Item | None]] = {}  # per pair of the ends' groups
                for i in edge_ids:
                    e = edges[i]
                    src_group, dst_group = nodes[e.src].group, nodes[e.dst].group
                    pair = src_group * n_groups + dst_group
                    found = ends.get(pair)
                    if found is None:
                        found = ends[pair] = (self._visible(src_group, a, expanded, below),
                                              self._visible(dst_group, b, expanded, below))
                    key = (found[0] or ("n", e.src), found[1] or ("n", e.dst))
                    merged.setdefault(key, {}).setdefault((e.src, e.var), e.aval)
        visible = [VisibleEdge(a, b, list(v.values())) for (a, b), v in merged.items()]
        return View(self, expanded, visible)

    @staticmethod
    def _is_leaf(item: Item, expanded: frozenset[int]) -> bool:
        return item[0] == "n" or item[1] not in expanded

    def _visible(self, group: int, top: Item, expanded: frozenset[int],
                 below: dict[tuple[int, int], Item | None]) -> Item | None:
        """The visible item standing for the nodes of ``group`` below the child item
        ``top``: ``top`` where it is a leaf, a closed group, or None for the node itself;
        ``below`` remembers it per (group, ``top``'s group)."""
        if top[0] == "n" or top[1] not in expanded:
            return top
        key = (group, top[1])
        if key not in below:
            chain = self._group_chain(group)  # innermost first
            idx = chain.index(top[1])
            # walk down from just below ``top``
            below[key] = next((("g", g) for g in reversed(chain[:idx]) if g not in expanded), None)
        return below[key]

    # ----------------------------------------------------------------- export
    def to_json(self) -> dict[str, Any]:
        """The graph's JSON (schema "jaxviz.graph"), in full: one object per node, edge and
        group, each with its source location and avals."""
        return {
            "schema": "jaxviz.graph",
            "version": SCHEMA_VERSION,
            "name": self.name,
            "legend": LEGEND,
            "nodes": [n.to_json() for n in self.nodes],
            "edges": [e.to_json() for e in self.edges],
            "groups": [g.to_json() for g in self.groups],
            "root": 0,
            **({"marks": self.marks} if self.marks else {}),
        }

    def to_columns(self) -> dict[str, Any]:
        """``to_json`` in the form a big graph travels in (``render.payload.encode_graph``):
        each distinct source location and aval written once, in the tables ``sources`` and
        ``avals``, nodes, edges and groups holding their indices; and the nodes, edges and
        groups each written as columns, one list per field (``{"label": [...], "group":
        [...], ...}``), not as one object per item. A 12-block train step's text is 0.42
        MB, not 0.93 MB with tables alone (8 MB in full), and a third smaller gzipped.
        ``render.payload.decode_graph`` and the browser restore the full form."""
        refs = TableRefs()
        nodes, edges, groups = self.nodes, self.edges, self.groups
        data = {
            "schema": "jaxviz.graph",
            "version": SCHEMA_VERSION,
            "name": self.name,
            "legend": LEGEND,
            "nodes": {
                "id": [n.id for n in nodes], "kind": [n.kind for n in nodes], "label": [n.label for n in nodes],
                "group": [n.group for n in nodes], "primitive": [n.primitive for n in nodes],
                "input_kind": [n.input_kind for n in nodes], "params": [n.params for n in nodes],
                "outputs": [[refs.aval(a) for a in n.outputs] for n in nodes],
                "literals": [n.literals for n in nodes], "source": [refs.source(n.source) for n in nodes],
                "flops": [n.flops for n in nodes], "bytes": [n.bytes for n in nodes],
            },
            "edges": {
                "src": [e.src for e in edges], "dst": [e.dst for e in edges],
                "aval": [refs.aval(e.aval) for e in edges], "var": [e.var for e in edges],
            },
            "groups": {
                "id": [g.id for g in groups], "name": [g.name for g in groups], "kind": [g.kind for g in groups],
                "parent": [g.parent for g in groups], "groups": [g.groups for g in groups],
                "nodes": [g.nodes for g in groups], "n_eqns": [g.n_eqns for g in groups],
                "source": [refs.source(g.source) for g in groups], "repeat": [g.repeat for g in groups],
                "flops": [g.flops for g in groups], "bytes": [g.bytes for g in groups],
                "holder": [g.holder for g in groups], "helper": [g.helper for g in groups],
                "collectives": [g.collectives for g in groups], "comm_bytes": [g.comm_bytes for g in groups],
            },
            "root": 0,
            **({"marks": self.marks} if self.marks else {}),
            "sources": refs.sources,
            "avals": refs.avals,
        }
        return data

    def to_json_str(self) -> str:
        return json.dumps(self.to_json(), separators=(",", ":"))

    def __repr__(self) -> str:
        return f"<jaxviz.Graph {self.name!r}: {self.eqn_count} equations, {len(self.groups)} groups>"
