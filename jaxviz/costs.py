"""What each equation costs: FLOPs, transcendentals and bytes, estimated from shapes.

Conventions follow XLA's own cost analysis (``compiled.cost_analysis()``) so the two can
be compared: a multiply-add is 2 FLOPs (``dot_general``: ``2 · |out| · |contracted|``;
convolutions: ``2 · |out batch| · |out features| · |in features per group| · valid
kernel taps``, padding excluded), element-wise arithmetic 1 FLOP per output element,
``exp``/``log``/``tanh``/``sqrt``/... 1 *transcendental* per element (not a FLOP), a
reduction ``|in| − |out|`` FLOPs. Data movement (reshape, transpose, slicing, gather,
broadcast) costs no FLOPs. Bytes are what the equation reads plus what it writes, as if
nothing were fused: an upper bound on memory traffic (XLA's fusion makes the real
figure smaller).

Equations holding sub-jaxprs cost what their bodies cost: a ``scan`` its body times its
length, a ``cond`` its most expensive branch, a ``while`` one trip of its body (the trip
count is not known at trace time; the result says so in ``notes``).

``program_costs(closed_jaxpr)`` walks the equations in the order ``GraphBuilder`` visits
them; ``annotate(graph, costs)`` copies the figures onto the graph's equation nodes and
sums them per group (``Node.flops``/``Node.bytes``, ``Group.flops``/``Group.bytes``).

``annotate_collectives(graph, call_groups, counts)`` does the same for what a compiled
executable's collectives move, each put on the group its HLO op-name names
(``Group.collectives``/``Group.comm_bytes``): the communication beside the FLOPs.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import jax.extend.core as jcore

from . import _jax_internals as internals
from .jaxprs import sub_jaxprs
from .sharding import CollectiveCounts, call_numbers, fused_op_names, scope_name, scope_path
from .text import fmt_bytes, fmt_flops
from .visual import (
    COMM_MARK,
    HEAT_DARK_TEXT,
    HEAT_DECADES,
    HEAT_LIGHT_TEXT,
    HEAT_LIGHT_TEXT_ABOVE,
    HEAT_MIN_FLOPS,
    HEAT_STOPS,
)

# ---------------------------------------------------------------------- primitive tables
# 1 FLOP per output element (XLA's HloCostAnalysis counts these as one each).
ELEMENTWISE = frozenset({
    "add", "add_any", "sub", "mul", "div", "rem", "max", "min", "neg", "abs", "sign", "floor",
    "ceil", "round", "nextafter", "and", "or", "not", "xor", "eq", "ne", "lt", "le", "gt", "ge",
    "select_n", "clamp", "square", "is_finite", "shift_left", "shift_right_logical",
    "shift_right_arithmetic", "population_count", "clz", "convert_element_type", "real", "imag",
    "conj", "complex", "copysign", "reduce_precision", "eq_to", "le_to", "lt_to",
})
# 1 transcendental per output element, 0 FLOPs (as XLA counts them).
TRANSCENDENTAL = frozenset({
    "exp", "exp2", "log", "log1p", "expm1", "tanh", "sin", "cos", "tan", "asin", "acos", "atan",
    "sinh", "cosh", "asinh", "acosh", "atanh", "atan2", "pow", "sqrt", "rsqrt", "cbrt", "erf",
    "erfc", "erf_inv", "lgamma", "digamma", "igamma", "igammac", "igamma_grad_a",
    "random_gamma_grad", "bessel_i0e", "bessel_i1e", "polygamma", "zeta",
    "regularized_incomplete_beta",
})
# (FLOPs, transcendentals) per element for ops XLA expands: logistic = 1 / (1 + exp(-x)).
MIXED = {"logistic": (3.0, 1.0)}
REDUCTIONS = frozenset({
    "reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "reduce_and", "reduce_or",
    "reduce_xor", "argmax", "argmin", "reduce",
})
CUMULATIVE = frozenset({"cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp"})
WINDOWED = frozenset({"reduce_window_sum", "reduce_window_max", "reduce_window_min", "reduce_window"})
SCATTER_COMBINE = frozenset({"scatter_add", "scatter_sub", "scatter_mul", "scatter_min", "scatter_max"})


@dataclass(slots=True)
class Cost:
    flops: float = 0.0
    transcendentals: float = 0.0
    bytes: float = 0.0

    def __add__(self, other: Cost) -> Cost:
        return Cost(self.flops + other.flops, self.transcendentals + other.transcendentals,
                    self.bytes + other.bytes)

    def scaled(self, k: float) -> Cost:
        return self if k == 1 else Cost(self.flops * k, self.transcendentals * k, self.bytes * k)

    def to_json(self) -> dict[str, float]:
        return {"flops": self.flops, "transcendentals": self.transcendentals, "bytes": self.bytes}


# ---------------------------------------------------------------------- sizes
def _sizes(aval: Any) -> tuple[int, int]:
    """(elements, bytes) of an aval."""
    try:
        return _sizes_of(aval)
    except TypeError:  # an unhashable aval: counted each time
        return _count(aval)


# JAX shares one aval object among a program's values of a type (a 12-block train step's
# 7k operands have 31): each is counted once.
@functools.lru_cache(maxsize=4096)
def _sizes_of(aval: Any) -> tuple[int, int]:
    return _count(aval)


def _count(aval: Any) -> tuple[int, int]:
    try:
        size = math.prod(getattr(aval, "shape", ()))
    except TypeError:
        size = 0  # symbolic dimension: unknown
    try:
        itemsize = int(aval.dtype.itemsize)
    except (AttributeError, TypeError):
        itemsize = 0  # extended dtypes (PRNG keys) and tokens
    return size, size * itemsize


def _size(aval: Any) -> int:
    return _sizes(aval)[0]


def _nbytes(aval: Any) -> int:
    return _sizes(aval)[1]


# ---------------------------------------------------------------------- one equation
def eqn_cost(eqn: Any) -> Cost:
    """Cost of one equation on its own (0 for equations that hold sub-jaxprs: their
    bodies carry the cost)."""
    name = eqn.primitive.name
    ins = [v.aval for v in eqn.invars]
    outs = [v.aval for v in eqn.outvars]
    flops, trans = primitive_flops(name, eqn.params, ins, outs)
    if _eqn_holds_jaxpr(eqn):
        return Cost(flops, trans, 0.0)
    nbytes = sum(_nbytes(a) for a in ins) + sum(_nbytes(a) for a in outs)
    return Cost(flops, trans, float(nbytes))


# The primitives whose cost ``primitive_flops`` reads from their params: the cost of
# any other equation follows from the types of its operands and results alone (which
# ``program_costs`` relies on: a branch below that reads params is named here too).
_READS_PARAMS = frozenset({
    "integer_pow", "dot_general", "conv_general_dilated", "sort", *WINDOWED,
    "select_and_scatter_add", "select_and_gather_add", "triangular_solve", "fft",
})


def primitive_flops(name: str, params: dict[str, Any], ins: Sequence[Any],
                    outs: Sequence[Any]) -> tuple[float, float]:
    """(FLOPs, transcendentals) of primitive ``name`` on operands ``ins`` → ``outs``."""
    out = _size(outs[0]) if outs else 0
    if name in ELEMENTWISE:
        return float(out), 0.0
    if name in TRANSCENDENTAL:
        return 0.0, float(out)
    if name in MIXED:
        f, t = MIXED[name]
        return f * out, t * out
    if name == "integer_pow":
        return float(out * _pow_multiplies(int(params.get("y", 2)))), 0.0
    if name == "dot_general":
        return float(dot_general_flops(ins[0].shape, params["dimension_numbers"], outs[0].shape)), 0.0
    if name == "conv_general_dilated":
        return float(conv_flops(ins[0].shape, ins[1].shape, outs[0].shape, params)), 0.0
    if name in REDUCTIONS:
        return float(max(_size(ins[0]) - out, 0)), 0.0
    if name in CUMULATIVE:
        return float(_size(ins[0])), 0.0
    if name == "sort":
        dim = params.get("dimension", -1)
        shape = ins[0].shape
        n = int(shape[dim]) if shape else 1
        return float(_size(ins[0]) * max(math.ceil(math.log2(n)), 1) if n > 1 else 0), 0.0
    if name in WINDOWED:
        window = math.prod(params.get("window_dimensions", ()) or (1,))
        return float(out * max(window - 1, 1)), 0.0
    if name in ("select_and_scatter_add", "select_and_gather_add"):
        window = math.prod(params.get("window_dimensions", ()) or (1,))
        return float(_size(ins[0]) * window), 0.0
    if name in SCATTER_COMBINE:
        return float(_size(ins[-1])), 0.0  # one combine per update element
    if name == "triangular_solve":  # a: [..., m, m], b: [..., m, n]
        a, b = ins[0].shape, ins[1].shape
        batch = _size(ins[1]) // max(b[-1] * b[-2], 1) if len(b) >= 2 else 1
        return float(batch * a[-1] * a[-1] * (b[-1] if params.get("left_side") else b[-2])), 0.0
    if name in ("cholesky", "lu", "qr", "householder_product", "eigh", "svd"):
        shape = ins[0].shape
        if len(shape) < 2:
            return 0.0, 0.0
        n = min(shape[-1], shape[-2])
        batch = _size(ins[0]) // max(shape[-1] * shape[-2], 1)
        factor = {"cholesky": 1 / 3, "lu": 2 / 3, "qr": 4 / 3, "householder_product": 4 / 3,
                  "eigh": 9.0, "svd": 12.0}[name]
        return float(batch * factor * n ** 3), 0.0
    if name == "fft":
        lengths = params.get("fft_lengths", ())
        n = math.prod(lengths) if lengths else 1
        return float(5 * _size(ins[0]) * math.log2(n)) if n > 1 else 0.0, 0.0
    return 0.0, 0.0  # data movement, RNG bits, structural


def _pow_multiplies(y: int) -> int:
    """Multiplies for x**y by repeated squaring (a negative power adds a divide)."""
    k = abs(y)
    if k <= 1:
        return 0 if y >= 0 else 1
    return (k.bit_length() - 1) + (bin(k).count("1") - 1) + (1 if y < 0 else 0)


def dot_general_flops(lhs_shape: Sequence[int], dimension_numbers: Any, out_shape: Sequence[int]) -> int:
    """``2 · |out| · |contracted dims|``: one multiply and one add per term."""
    (lhs_contract, _), _ = dimension_numbers
    contracted = math.prod(int(lhs_shape[d]) for d in lhs_contract)
    return 2 * math.prod(int(d) for d in out_shape) * contracted


def conv_flops(lhs_shape: Sequence[int], rhs_shape: Sequence[int], out_shape: Sequence[int],
               params: dict[str, Any]) -> int:
    """``2 · out batch · out features · in features per group · valid taps``, where
    the valid taps of each spatial dimension are the (output, kernel) position pairs that
    land on a real input element (not padding, not a hole of the input dilation)."""
    dn = params["dimension_numbers"]
    lhs_spec, rhs_spec, out_spec = dn.lhs_spec, dn.rhs_spec, dn.out_spec
    n_spatial = len(lhs_spec) - 2
    strides = params.get("window_strides") or (1,) * n_spatial
    padding = params.get("padding") or ((0, 0),) * n_spatial
    lhs_dil = params.get("lhs_dilation") or (1,) * n_spatial
    rhs_dil = params.get("rhs_dilation") or (1,) * n_spatial
    taps = 1
    for i in range(n_spatial):
        pad = padding[i] if not isinstance(padding, str) else (0, 0)
        taps *= valid_pairs(int(lhs_shape[lhs_spec[2 + i]]), int(rhs_shape[rhs_spec[2 + i]]),
                            int(out_shape[out_spec[2 + i]]), int(strides[i]), int(pad[0]),
                            int(lhs_dil[i]), int(rhs_dil[i]))
    out_batch = int(out_shape[out_spec[0]])
    out_features = int(out_shape[out_spec[1]])
    in_features = int(rhs_shape[rhs_spec[1]])  # per group already
    return 2 * out_batch * out_features * in_features * taps


def valid_pairs(in_size: int, k_size: int, out_size: int, stride: int, pad_lo: int,
                lhs_dil: int = 1, rhs_dil: int = 1) -> int:
    """Number of (output position, kernel position) pairs of one spatial dimension that
    read a real input element."""
    total = 0
    for k in range(k_size):
        c = k * rhs_dil - pad_lo  # dilated input index = o * stride + c
        if lhs_dil == 1:
            lo = max(0, _ceil_div(-c, stride))
            hi = min(out_size - 1, (in_size - 1 - c) // stride)
            total += max(hi - lo + 1, 0)
            continue
        limit = (in_size - 1) * lhs_dil  # last real element, in dilated coordinates
        for o in range(out_size):
            u = o * stride + c
            if 0 <= u <= limit and u % lhs_dil == 0:
                total += 1
    return total


def _ceil_div(a: int, b: int) -> int:
    return -((-a) // b)


# ---------------------------------------------------------------------- a whole program
@dataclass
class ProgramCosts:
    """Per-equation costs (pre-order, loop trip counts applied) and the program total."""

    per_eqn: list[Cost]
    primitives: list[str]
    total: Cost
    notes: list[str] = field(default_factory=list)

    @property
    def flops(self) -> float:
        return self.total.flops

    @property
    def bytes(self) -> float:
        return self.total.bytes

    @property
    def transcendentals(self) -> float:
        return self.total.transcendentals

    @property
    def matmul_flops(self) -> float:
        """The FLOPs of the matrix products and convolutions (a multiply and an add per term)."""
        return sum(c.flops for c, p in zip(self.per_eqn, self.primitives) if p in MATMUL_PRIMITIVES)


MATMUL_PRIMITIVES = frozenset({"dot_general", "conv_general_dilated", "ragged_dot_general"})


def _holds_jaxpr(params: dict[str, Any]) -> bool:
    for val in params.values():
        for v in val if isinstance(val, (tuple, list)) else (val,):
            if isinstance(v, (jcore.ClosedJaxpr, jcore.Jaxpr)):
                return True
    return False


_HOLDS: dict[Any, bool] = {}  # primitive → whether its equations carry sub-jaxprs


def _eqn_holds_jaxpr(eqn: Any) -> bool:
    holds = _HOLDS.get(eqn.primitive)
    if holds is None:
        holds = _HOLDS[eqn.primitive] = _holds_jaxpr(eqn.params)
    return holds


def program_costs(closed: Any) -> ProgramCosts:
    """Costs of every equation of a ClosedJaxpr (and of its sub-jaxprs), in equation order.

    Equation order is the contract by which ``annotate`` matches costs to graph nodes: a
    depth-first walk, each equation before the equations of its sub-jaxprs, those taken
    in ``jaxprs.sub_jaxprs`` order. ``tracing.GraphBuilder`` adds its equation nodes in
    that order; ``annotate`` checks the primitives line up, and
    ``tests/test_costs.py::test_costs_line_up_with_the_graph`` checks it on every
    program of the zoo."""
    per_eqn: list[Cost] = []
    prims: list[str] = []
    notes: list[str] = []
    jaxpr = getattr(closed, "jaxpr", closed)
    total = _walk(jaxpr, 1, per_eqn, prims, notes, {})
    return ProgramCosts(per_eqn, prims, total, notes)


def _walk(jaxpr: Any, mult: float, per_eqn: list[Cost], prims: list[str], notes: list[str],
          by_types: dict[tuple[Any, ...], Cost]) -> Cost:
    """``by_types``: the costs counted so far of equations whose cost follows from their
    types, by primitive, multiplier and the identity of their avals (JAX shares one aval
    among a program's values of a type, and the jaxpr keeps them alive): a train step's
    thousands of equations are a few hundred kinds, each counted once."""
    flops = trans = nbytes = 0.0
    for eqn in jaxpr.eqns:
        name = eqn.primitive.name
        holds = _eqn_holds_jaxpr(eqn)
        if holds or name in _READS_PARAMS:
            own = eqn_cost(eqn).scaled(mult)
        else:
            key = (name, mult, *[id(v.aval) for v in eqn.invars], None, *[id(v.aval) for v in eqn.outvars])
            own = by_types.get(key)
            if own is None:
                own = by_types[key] = eqn_cost(eqn).scaled(mult)
        per_eqn.append(own)
        prims.append(name)
        flops += own.flops
        trans += own.transcendentals
        nbytes += own.bytes
        if not holds:
            continue
        subs = sub_jaxprs(eqn.params)
        inner = mult
        if name == "scan":
            inner = mult * int(eqn.params.get("length", 1))
        elif name == "pallas_call":  # the kernel runs once per point of its grid
            grid = internals.pallas_grid(eqn.params)
            inner = mult * math.prod(grid or (1,))
            note = "a Pallas kernel whose grid is known only when it runs is counted once"
            if grid is None and note not in notes:
                notes.append(note)
        elif name == "while":
            note = "while loops are counted once (their trip count is not known when tracing)"
            if note not in notes:
                notes.append(note)
        sub_costs = [_walk(sub, inner, per_eqn, prims, notes, by_types) for _, sub, _ in subs]
        if not sub_costs:
            continue
        if name == "cond":
            sub_costs = [max(sub_costs, key=lambda c: (c.flops + c.transcendentals, c.bytes))]
        for c in sub_costs:
            flops += c.flops
            trans += c.transcendentals
            nbytes += c.bytes
    return Cost(flops, trans, nbytes)


# ---------------------------------------------------------------------- onto the graph
def annotate(graph: Any, costs: ProgramCosts) -> bool:
    """Copy per-equation costs onto the graph's equation nodes and sum them per group
    (a ``cond``'s group counts its most expensive branch). The n-th equation node gets
    the n-th cost (equation order, see ``program_costs``). Returns False, touching
    nothing, when the graph's equations do not line up with the jaxpr's."""
    eqn_nodes = [n for n in graph.nodes if n.kind == "eqn"]
    if len(eqn_nodes) != len(costs.per_eqn) or any(
            n.primitive != p for n, p in zip(eqn_nodes, costs.primitives)):
        return False
    for node, c in zip(eqn_nodes, costs.per_eqn):
        node.flops = c.flops
        node.bytes = c.bytes
    groups = graph.groups
    for g in groups:
        g.flops = sum(graph.nodes[n].flops for n in g.nodes)
        g.bytes = sum(graph.nodes[n].bytes for n in g.nodes)
    for gid in graph.bottom_up():  # children before parents (not id order: repeat groups)
        g = groups[gid]
        if not g.groups:
            continue
        if g.kind == "eqn" and len(g.groups) > 1 and any(
                graph.nodes[n].primitive == "cond" for n in g.nodes):
            best = max((groups[c] for c in g.groups), key=lambda c: (c.flops, c.bytes))
            g.flops += best.flops
            g.bytes += best.bytes
        else:
            g.flops += sum(groups[c].flops for c in g.groups)
            g.bytes += sum(groups[c].bytes for c in g.groups)
    return True


# ---------------------------------------------------------------------- display helpers
# The heat scale (its stops, decades and HEAT_MIN_FLOPS) is part of the visual language:
# jaxviz/visual.json, which the browser's groupHeat reads too.
def heat_level(fraction: float) -> float:
    """A share of the program's FLOPs in [0, 1] → a position on the heat scale in [0, 1],
    logarithmic (each tenfold counts the same), so that the expensive part of a model
    stands out in any view and colours do not change as groups are expanded."""
    if fraction <= 0:
        return 0.0
    return min(max(1.0 + math.log10(min(fraction, 1.0)) / HEAT_DECADES, 0.0), 1.0)


def heat_color(level: float) -> str:
    """Colour at ``level`` in [0, 1] of the heat scale."""
    pos = min(max(level, 0.0), 1.0) * (len(HEAT_STOPS) - 1)
    i = min(int(pos), len(HEAT_STOPS) - 2)
    t = pos - i
    a, b = HEAT_STOPS[i], HEAT_STOPS[i + 1]
    rgb = [round(int(a[j:j + 2], 16) * (1 - t) + int(b[j:j + 2], 16) * t) for j in (1, 3, 5)]
    return "#" + "".join(f"{c:02X}" for c in rgb)


def heat_text_color(level: float) -> str:
    """Readable text on ``heat_color(level)``."""
    return HEAT_LIGHT_TEXT if level > HEAT_LIGHT_TEXT_ABOVE else HEAT_DARK_TEXT


def cost_label(flops: float, nbytes: float) -> str:
    """``1.2 GFLOP · 3.4 MiB`` (empty when nothing was counted)."""
    if not flops and not nbytes:
        return ""
    return f"{fmt_flops(flops)} · {fmt_bytes(nbytes)}"


@dataclass(slots=True)
class Heat:
    text: str  # "1.2 GFLOP · 3.4 MiB · 42%"
    share: float  # of the program's FLOPs
    fill: str
    font: str


def group_heat(graph: Any, gid: int) -> Heat | None:
    """How a group shows its cost (None when no cost was computed or it costs nothing)."""
    g = graph.groups[gid]
    total = graph.groups[0].flops
    if not total or not (g.flops or g.bytes):
        return None
    share = g.flops / total
    level = heat_level(share) if total >= HEAT_MIN_FLOPS else 0.0  # nothing costs much
    pct = f"{share:.0%}" if share >= 0.01 else ("<1%" if share > 0 else "0%")
    return Heat(f"{cost_label(g.flops, g.bytes)} · {pct}", share, heat_color(level), heat_text_color(level))


# ---------------------------------------------------------------------- communication
def collective_group(graph: Any, call_groups: dict[int, list[int]], op_name: str) -> int:
    """The group a compiled collective came from, read from its HLO op-name: the innermost
    of jaxviz's call scopes in it (``jv17:block``; in the backward pass when the op-name
    says ``transpose``), else the innermost scope naming groups of the graph, else the
    root. A collective XLA fused from several operations goes to the group they share."""
    return common_group(graph, [_op_group(graph, call_groups, name) for name in fused_op_names(op_name)])


def _op_group(graph: Any, call_groups: dict[int, list[int]], op_name: str) -> int:
    backward = "transpose(" in op_name
    for number in reversed(call_numbers(op_name)):
        gid = _call_group(graph, call_groups, number, backward)
        if gid is not None:
            return gid
    return _group_by_name(graph, op_name, backward)


def _group_by_name(graph: Any, op_name: str, backward: bool) -> int:
    """The innermost scope of the op-name (a ``jax.named_scope``, or a call of another
    trace of the same program: ``jaxviz.profile``'s) that names groups of the graph, in
    the pass the op-name says: the group they share (``block ×3`` for three ``block``s);
    else the root."""
    by_name: dict[str, list[int]] = {}
    for g in graph.groups:
        if g.kind in ("call", "scope"):
            by_name.setdefault(g.name, []).append(g.id)
    for part in reversed(scope_path(op_name)):
        found = by_name.get(scope_name(part), [])
        in_pass = [g for g in found if (_phase_of(graph, g) == "backward") == backward] or found
        if in_pass:
            return common_group(graph, in_pass)
    return 0


def _call_group(graph: Any, call_groups: dict[int, list[int]], number: int, backward: bool) -> int | None:
    """The group of call ``number``: the one in the backward pass or the other, as asked,
    when the call has one in each."""
    gids = call_groups.get(number)
    if not gids:
        return None
    for gid in gids:
        if (_phase_of(graph, gid) == "backward") == backward:
            return gid
    return gids[0]


def _phase_of(graph: Any, gid: int) -> str | None:
    g: int | None = gid
    while g is not None:
        if graph.groups[g].kind == "phase":
            return graph.groups[g].name
        g = graph.groups[g].parent
    return None


def common_group(graph: Any, gids: list[int]) -> int:
    """The innermost group holding all of ``gids``."""
    chains = [graph.ancestors(g)[::-1] for g in gids]  # the root first
    common = 0
    for level in zip(*chains):
        if len(set(level)) > 1:
            break
        common = level[0]
    return common


def annotate_collectives(graph: Any, call_groups: dict[int, list[int]], counts: CollectiveCounts) -> None:
    """Put each compiled collective on the group it came from and sum them up the tree
    (``Group.collectives``, ``Group.comm_bytes``); name, per kind, the innermost group
    holding all of that kind (``counts.places``)."""
    for g in graph.groups:
        g.collectives, g.comm_bytes = 0, 0.0
    where = [collective_group(graph, call_groups, c.op_name) for c in counts.items]
    for gid, c in zip(where, counts.items):
        for a in graph.ancestors(gid):
            graph.groups[a].collectives += 1
            graph.groups[a].comm_bytes += c.bytes
    counts.places = {}
    for kind in {c.kind for c in counts.items}:
        place = common_group(graph, [g for g, c in zip(where, counts.items) if c.kind == kind])
        if place != 0:
            counts.places[kind] = graph.groups[place].name


def comm_label(graph: Any, gid: int) -> str | None:
    """``⇄ 3 collectives · 1.2 MiB · 40%``: what a group's compiled collectives move (per
    device and run), and its share of the program's; None when it moves nothing."""
    g = graph.groups[gid]
    total = graph.groups[0].comm_bytes
    if not g.collectives:
        return None
    share = g.comm_bytes / total if total else 0.0
    pct = f"{share:.0%}" if share >= 0.01 else "<1%"
    noun = "collective" if g.collectives == 1 else "collectives"
    return f"{COMM_MARK} {g.collectives} {noun} · {fmt_bytes(g.comm_bytes)} · {pct}"


def own_comm_label(graph: Any, gid: int) -> str | None:
    """``⇄ 1 collective · 795 KiB``: the compiled collectives an open group holds itself,
    not inside one of its groups (those say theirs): a collective XLA fused from
    operations of several groups is on the group they share. None when there are none."""
    g = graph.groups[gid]
    n = g.collectives - sum(graph.groups[c].collectives for c in g.groups)
    if n <= 0:
        return None
    nbytes = g.comm_bytes - sum(graph.groups[c].comm_bytes for c in g.groups)
    return f"{COMM_MARK} {n} {'collective' if n == 1 else 'collectives'} · {fmt_bytes(nbytes)}"
