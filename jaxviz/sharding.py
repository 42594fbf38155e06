"""Shardings, meshes and collectives as the user writes and reads them.

- ``spec_text(spec)``: ``P('data', None)`` as written, or ``replicated``;
  ``sharding_text(sharding)`` the same for a ``jax.sharding.Sharding`` (None for an array
  on one device: nothing to say).
- ``dim_axes(aval)``: the mesh axes each dimension of a sharded type is split on (explicit
  axes only: JAX's types carry those), so that an edge reads ``f32[16@data,784]`` as
  JAX's jaxpr prints it.
- ``find_mesh(closed)`` / ``mesh_text(mesh)``: the mesh a program runs on, in the summary
  (``mesh data=4 × model=2 (explicit) · 8 cpu devices``).
- ``collective_label(eqn)`` / ``shard_map_specs(eqn)``: a collective equation (``psum``,
  ``all_gather``, ``ppermute``…) with its mesh axis and the bytes it moves per call, a
  ``shard_map`` named after the function it maps, with its mesh axes and specs.
- ``hlo_collectives(text)``: the collectives in a compiled executable's HLO text
  (``compiled.as_text()``), what the SPMD partitioner inserted included, each with its
  kind, its size and the op-name it came from (which carries jaxviz's call scopes).

A leaf of the model: it imports JAX and jaxviz's leaves only (``text``, ``visual``).
"""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import jax

from .text import fmt_bytes
from .visual import COLLECTIVE_PRIMITIVES as COLLECTIVES

# JAX's internal names of collectives, as the user calls them.
USER_NAME = {"psum_invariant": "psum", "psum2": "psum", "reduce_scatter": "psum_scatter",
             "all_gather_invariant": "all_gather"}


# ---------------------------------------------------------------------- specs
def spec_text(spec: Any) -> str:
    """``P('data', None)`` as the user wrote it; ``replicated`` when no dimension is split."""
    parts = tuple(spec) if spec is not None else ()
    if not any(p is not None for p in parts):
        return "replicated"
    return f"P({', '.join(repr(p) for p in parts)})"  # P('data'), not JAX's P('data',)


def sharding_text(sharding: Any) -> str | None:
    """A sharding in the user's words: its PartitionSpec (``P('data', None)``) or
    ``replicated``; None for one device (nothing is split)."""
    if sharding is None or len(getattr(sharding, "device_set", ())) <= 1:
        return None
    spec = getattr(sharding, "spec", None)
    if spec is not None:
        return spec_text(spec)
    if getattr(sharding, "is_fully_replicated", False):
        return "replicated"
    return str(sharding)


def value_sharding(value: Any) -> str | None:
    """The sharding of a concrete array (None for anything else, or one device)."""
    if not isinstance(value, jax.Array):
        return None
    try:
        return sharding_text(value.sharding)
    except Exception:  # deleted or donated
        return None


def dim_axes(aval: Any) -> tuple[str, ...]:
    """Per dimension, the mesh axes its explicit sharding splits it on (``'data'``,
    ``'(data,model)'``, ``''`` for none); ``()`` when nothing is split."""
    spec = getattr(getattr(aval, "sharding", None), "spec", None)
    shape = getattr(aval, "shape", ())
    if spec is None or not any(p is not None for p in spec):
        return ()
    out = []
    for _, part in zip(shape, tuple(spec) + (None,) * (len(shape) - len(spec))):
        if part is None:
            out.append("")
        elif isinstance(part, tuple):
            out.append(f"({','.join(part)})")
        else:
            out.append(str(part))
    return tuple(out)


# ---------------------------------------------------------------------- meshes
def _is_mesh(value: Any) -> bool:
    return bool(getattr(value, "axis_names", ())) and hasattr(value, "axis_sizes")


def find_mesh(closed: Any, shardings: Iterable[Any] = ()) -> Any:
    """The mesh a program runs on: the first of the given shardings' meshes (the inputs'),
    else of its sharded types, of its ``shard_map`` / ``sharding_constraint`` / ``reshard``
    equations (sub-jaxprs too); None when there is none."""
    for s in shardings:
        mesh: Any = getattr(s, "mesh", None)
        if _is_mesh(mesh) and math.prod(mesh.axis_sizes) > 1:
            return mesh
    jaxpr = getattr(closed, "jaxpr", closed)
    stack = [jaxpr]
    while stack:
        j = stack.pop()
        for var in j.invars:
            mesh = getattr(getattr(var.aval, "sharding", None), "mesh", None)
            if _is_mesh(mesh):
                return mesh
        for eqn in j.eqns:
            for value in eqn.params.values():
                for v in value if isinstance(value, (tuple, list)) else (value,):
                    if type(v) in _PLAIN_TYPES:  # most params: no mesh, no jaxpr
                        continue
                    if _is_mesh(v):  # a mesh, or a NamedSharding's
                        return v
                    if _is_mesh(mesh := getattr(v, "mesh", None)):
                        return mesh
                    inner = getattr(v, "jaxpr", v)
                    if hasattr(inner, "eqns") and hasattr(inner, "invars"):
                        stack.append(inner)
    return None


# Params of these types hold no mesh and no jaxpr (a tuple in a tuple is not looked into).
_PLAIN_TYPES = frozenset({int, float, bool, str, type(None), tuple, list})


def axis_types_text(mesh: Any) -> dict[str, str]:
    """Axis name → ``explicit`` / ``auto`` / ``manual``."""
    types = getattr(mesh, "axis_types", None) or ()
    return {name: str(getattr(t, "name", t)).lower() for name, t in zip(mesh.axis_names, types)}


def mesh_text(mesh: Any) -> str:
    """``mesh data=4 × model=2 (explicit) · 8 cpu devices``."""
    if mesh is None:
        return ""
    axes = " × ".join(f"{n}={s}" for n, s in zip(mesh.axis_names, mesh.axis_sizes))
    types = axis_types_text(mesh)
    if len(set(types.values())) == 1:
        kinds = f" ({next(iter(types.values()))})"
    elif types:
        kinds = " (" + ", ".join(f"{n} {t}" for n, t in types.items()) + ")"
    else:
        kinds = ""
    if isinstance(mesh, jax.sharding.Mesh) and mesh.devices.size:  # an AbstractMesh has no devices
        kind = mesh.devices.flat[0].device_kind
    else:
        kind = getattr(mesh, "device_kind", None)
    count = math.prod(mesh.axis_sizes)
    return f"mesh {axes}{kinds} · {count} {kind + ' ' if kind else ''}device{'s' if count != 1 else ''}"


# ---------------------------------------------------------------------- equations
def _nbytes(aval: Any) -> int:
    try:
        return math.prod(int(d) for d in aval.shape) * int(aval.dtype.itemsize)
    except (AttributeError, TypeError):
        return 0


def collective_axes(params: dict[str, Any]) -> str:
    """The mesh axes a collective runs over: ``data``, ``(data,model)``."""
    axes = params.get("axes", params.get("axis_name"))
    axes = axes if isinstance(axes, (tuple, list)) else () if axes is None else (axes,)
    names = ["unnamed axis" if is_jax_name(a) else str(a) for a in axes if not isinstance(a, int)]
    if len(names) <= 1:
        return "".join(names)
    return f"({','.join(names)})"


def collective_label(eqn: Any) -> str:
    """``psum · model · 256 B``: the collective as the user calls it, the axes it runs
    over and the bytes each device sends into it per call (its operands, per shard)."""
    name = eqn.primitive.name
    sent = sum(_nbytes(v.aval) for v in eqn.invars)
    return f"{USER_NAME.get(name, name)} · {collective_axes(eqn.params)} · {fmt_bytes(sent)}"


def specs_text(specs: Any) -> str:
    """The specs in order, a run of one spec counted (``8 × P('batch'), replicated``):
    a step over many arrays keeps a label that reads at a glance."""
    if not isinstance(specs, (tuple, list)):
        return spec_text(specs)
    texts = [spec_text(s) if s is not None else "replicated" for s in specs]
    runs = [(text, len(list(run))) for text, run in itertools.groupby(texts)]
    return ", ".join(text if n == 1 else f"{n} × {text}" for text, n in runs)


def shard_map_specs(eqn: Any) -> str:
    """``in: P('data'), P(None, 'model') → out: P('data')``: a shard_map's specs ("" when
    it has none)."""
    ins, outs = eqn.params.get("in_specs"), eqn.params.get("out_specs")
    if ins is None and outs is None:
        return ""
    return f"in: {specs_text(ins)} → out: {specs_text(outs)}"


def is_jax_name(name: Any) -> bool:
    """A name JAX made up, not the user (``_fun``, an unnamed pmap's
    ``_internal_pmap_axis_name``)."""
    return isinstance(name, str) and name.startswith("_")


def constraint_label(eqn: Any) -> str | None:
    """``sharding_constraint P('data', None)`` / ``reshard P('data', None)``: the spec a
    resharding step asks for (None for other equations)."""
    name = eqn.primitive.name
    sharding = eqn.params.get("sharding", eqn.params.get("dst_sharding"))
    if name not in ("sharding_constraint", "reshard") or sharding is None:
        return None
    spec = getattr(sharding, "spec", None)
    return f"{name} {spec_text(spec) if spec is not None else sharding}"


# ---------------------------------------------------------------------- compiled HLO
HLO_KINDS = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all", "collective-permute")
# ``%x = f32[4,16]{1,0} all-reduce(...)``; async forms (``all-gather-start``) counted once,
# at their start (a collective XLA wraps in an ``async-start`` is its own line inside the
# wrapped computation, counted there).
_HLO_LINE = re.compile(
    r"^\s*(?:ROOT\s+)?%?[\w.\-]+\s*=\s*(?P<type>.+?)\s+(?P<kind>" + "|".join(HLO_KINDS)
    + r")(?P<start>-start)?\(")
_HLO_ARRAY = re.compile(r"\b(?P<dtype>[a-z]+\d*)\[(?P<dims>[\d,]*)\]")
_OP_NAME = re.compile(r'op_name="(?P<name>[^"]*)"')
_HLO_BITS = {"pred": 8, "s4": 4, "u4": 4}


def _hlo_bytes(type_text: str, largest: bool = False) -> int:
    """Bytes of an HLO result type (``f32[4,16]{1,0}``): a tuple's arrays summed (the
    results of combined collectives), or its largest (``largest``: an async start's tuple
    holds its operand beside its result, and a permute's also two u32 contexts)."""
    sizes = []
    for m in _HLO_ARRAY.finditer(type_text):
        dtype = m.group("dtype")
        digits = re.sub(r"\D", "", dtype)
        bits = _HLO_BITS.get(dtype, int(digits) if digits else 0)
        sizes.append(math.prod(int(d) for d in m.group("dims").split(",") if d) * bits // 8)
    return max(sizes, default=0) if largest else sum(sizes)


@dataclass(frozen=True, slots=True)
class HloCollective:
    kind: str  # all-reduce | all-gather | reduce-scatter | all-to-all | collective-permute
    bytes: int  # its result on one device
    op_name: str  # the jaxpr equation it came from (name stack and primitive)


def hlo_collectives(text: str) -> list[HloCollective]:
    """Every collective of an HLO module's text, in order (the partitioner's and the
    user's alike)."""
    found = []
    for line in text.splitlines():
        m = _HLO_LINE.match(line)
        if m is None:
            continue
        op = _OP_NAME.search(line)
        kind = m.group("kind")
        largest = m.group("start") is not None and kind in ("all-gather", "collective-permute")
        found.append(HloCollective(kind, _hlo_bytes(m.group("type"), largest), op.group("name") if op else ""))
    return found


def plural(kind: str, n: int) -> str:
    return f"{n} {kind}{'s' if n != 1 else ''}"


@dataclass
class CollectiveCounts:
    """The collectives of one executable: count and bytes per kind, and where each came
    from (the user's group, when its op-name says)."""

    items: list[HloCollective] = field(default_factory=list)
    # Per kind, the innermost user group holding all of that kind (``block ×12``), where
    # that is narrower than the whole program.
    places: dict[str, str] = field(default_factory=dict)

    @property
    def counts(self) -> dict[str, int]:
        return dict(Counter(c.kind for c in self.items))

    @property
    def bytes(self) -> int:
        return sum(c.bytes for c in self.items)

    def bytes_of(self, kind: str) -> int:
        return sum(c.bytes for c in self.items if c.kind == kind)

    def text(self) -> str:
        """``14 all-reduces; 2 all-gathers in `block ×12` · 3.1 MiB per device and run``:
        every kind with its count, and where all of one kind sit in one group, which."""
        if not self.items:
            return "no collectives"
        parts = []
        for kind in HLO_KINDS:
            n = sum(1 for c in self.items if c.kind == kind)
            if not n:
                continue
            place = f" in `{self.places[kind]}`" if kind in self.places else ""
            parts.append(f"{plural(kind, n)}{place}")
        return f"{'; '.join(parts)} · {fmt_bytes(self.bytes)} per device and run"

    def rows(self) -> list[str]:
        """One line per kind: ``2 all-gathers · 1.2 MiB in `block ×12```."""
        out = []
        for kind in HLO_KINDS:
            n = sum(1 for c in self.items if c.kind == kind)
            if n:
                place = f" in `{self.places[kind]}`" if kind in self.places else ""
                out.append(f"{plural(kind, n)} · {fmt_bytes(self.bytes_of(kind))}{place}")
        return out

    def to_json(self) -> dict[str, Any]:
        return {"counts": self.counts, "bytes": self.bytes, "places": dict(self.places),
                "items": [{"kind": c.kind, "bytes": c.bytes, "op_name": c.op_name} for c in self.items]}


def scope_places(counts: CollectiveCounts) -> dict[str, str]:
    """Per kind, the scopes all of that kind's op-names share (``block/attention``), for
    an executable without a graph: jaxviz's call scopes read as their function's name."""
    places = {}
    for kind in {c.kind for c in counts.items}:
        paths = [[name for p in scope_path(op) if (name := scope_name(p))]
                 for c in counts.items if c.kind == kind for op in fused_op_names(c.op_name)]
        common = []
        for level in zip(*paths):
            if len(set(level)) > 1:
                break
            common.append(level[0])
        if common:
            places[kind] = "/".join(common)
    return places


# jaxviz.call_scopes names the scope of each user call "jv<call number>:<function>".
CALL_SCOPE = re.compile(r"jv(\d+):")


_TRANSFORM = re.compile(r"^\w+\((.*)\)$")


def scope_name(part: str) -> str:
    """One op-name scope in the user's words: ``transpose(jvp(jv3:block))`` → ``block``,
    ``jvp()`` → ``""``."""
    while (m := _TRANSFORM.match(part)) is not None:
        part = m.group(1)
    return CALL_SCOPE.sub("", part)


def call_numbers(op_name: str) -> list[int]:
    """The user calls an HLO op-name passes through, outermost first."""
    return [int(n) for n in CALL_SCOPE.findall(op_name)]


def fused_op_names(op_name: str) -> list[str]:
    """The op-names an HLO op-name stands for: XLA writes an instruction fused from several
    operations as ``prefix/(op-name:op-name:…)`` (a ``:`` of a call scope, ``jv3:block``,
    is no separator)."""
    prefix, fused, rest = op_name.partition("/(")
    if not fused or not rest.endswith(")"):
        return [op_name]
    inner, parts, depth, start = rest[:-1], [], 0, 0
    for i, ch in enumerate(inner):
        depth += (ch == "(") - (ch == ")")
        if ch == ":" and depth == 0 and not _CALL_TAIL.search(inner, start, i):
            parts.append(inner[start:i])
            start = i + 1
    parts.append(inner[start:])
    return [f"{prefix}/{part}" for part in parts]


_CALL_TAIL = re.compile(r"jv\d+$")


def scope_path(op_name: str) -> list[str]:
    """An HLO op-name's scopes, outermost first, the jit around everything and the
    primitive left out: ``jit(f)/transpose(jvp(jv3:block))/dot_general`` →
    ``['transpose(jvp(jv3:block))']``."""
    parts = _split_op_name(op_name)
    return parts[1:-1] if len(parts) > 2 else []


def _split_op_name(op_name: str) -> list[str]:
    """Split on ``/`` outside parentheses."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(op_name):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "/" and depth == 0:
            out.append(op_name[start:i])
            start = i + 1
    out.append(op_name[start:])
    return out


def compiled_shardings(compiled: Any) -> tuple[list[Any], list[Any]]:
    """The flat input and output shardings of a ``jax.stages.Compiled`` (empty lists
    where the executable does not say)."""
    out: list[list[Any]] = []
    for attr in ("input_shardings", "output_shardings"):
        try:
            out.append(jax.tree_util.tree_leaves(getattr(compiled, attr)))
        except Exception:
            out.append([])
    return out[0], out[1]


def eqn_label(eqn: Any) -> str | None:
    """The label of an equation that moves or places data across devices (a collective,
    a resharding step); None for the others (``tracing`` names pmap and shard_map)."""
    name = eqn.primitive.name
    if name in COLLECTIVES:
        return collective_label(eqn)
    return constraint_label(eqn)


def aval_sharding_text(aval: Any) -> str | None:
    """The sharding a type says, on a mesh with explicit axes (``P('data', None)``,
    ``replicated``); None elsewhere (where the compiler chooses)."""
    sharding: Any = getattr(aval, "sharding", None)
    mesh = getattr(sharding, "mesh", None)
    if not _is_mesh(mesh) or "explicit" not in axis_types_text(mesh).values():
        return None
    return spec_text(sharding.spec)
