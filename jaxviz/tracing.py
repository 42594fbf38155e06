"""Function or cell → ``Program``: trace with JAX's own staging API (``jax.jit(f).trace``),
classify the inputs, and build the hierarchical graph model.

User call structure comes from ``jaxviz.call_scopes``: while JAX traces, every call of a user
function opens a ``jax.named_scope``, so the equations it records carry the call in their
name stacks (read through ``_jax_internals``) and become nested groups here.
"""

from __future__ import annotations

import bisect
import contextlib
import functools
import gc
import inspect
import io
import itertools
import re
import sys
import time
from collections.abc import Callable, Container, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import jax
import jax.extend.core as jcore
import numpy as np

from . import _jax_internals as internals
from . import adapters, call_scopes, phases, sharding
from .adapters import optax as optax_adapter
from .adapters.base import (
    UnsplittableArgument,
    is_hashable,
    output_leaf_names,
    positional_names,
)
from .call_scopes import CalledNames, CallInfo, display_function, make_source
from .code_paths import PACKAGE_DIR, installed_package, is_user_file
from .graph import LOOP_PRIMITIVES, DeferredParams, Edge, Graph, Group, Node, SourceLoc, name_stem
from .jaxprs import (
    aval_of_value,
    aval_of_var,
    fresh_function,
    holds_jaxpr,
    is_array,
    is_python_scalar,
    path_text,
    short,
    sub_jaxprs,
)
from .program import InputInfo, Program, traced_inputs

PYTREE_GROUP_MIN = 4  # an argument with this many leaves is drawn as one group
PYTREE_SPLIT_MIN = 16  # and one with more is split by its keys into groups within it
_PATH_STEP = re.compile(r"\[[^\]]*\]|\.\w+")  # one key of a leaf's path: ['w'], [3], .kernel
LINE_GROUP_MIN = 4  # this many consecutive equations from one line become a group (a box: one row)
LINE_ALONE_MAX = 30  # a program that is one line of more equations than this is one box
LOOP_ROUND_MIN = 3  # a line's run splits into loop rounds of at least this many equations
LOOP_ROUNDS_MAX = 64  # and of at most this many rounds (an unrolled chain stays one group)
LIBRARY_DEPTH = 6  # library calls nested deeper than this are shown as their caller
REPLAY_WALKS = True  # a sub-jaxpr walked before is made again from its first walk (GraphBuilder._walk_sub)
# The library call a user's function runs inside as a callback: (that function's call
# name, the call's library path as group keys, outermost first, how many of those the
# library made outside a pass it differentiates the callback in).
Enclosing = tuple[str, tuple[tuple[str, str], ...], int]


class LibraryCalls(NamedTuple):
    """The library calls a walk outward over a traceback passed, up to a user frame."""

    user: int  # that user frame's index, or the traceback's length
    names: list[str]  # the calls, innermost first, each with its call site after ``@``
    crossed_jaxviz: bool  # jaxviz's own frames were passed
    called: Any  # the code of the library function called from the user frame, or None
    in_pass: int | None  # how many calls were passed inside JAX's differentiation API

    def outside_pass(self) -> int:
        """How many of the calls (at most ``LIBRARY_DEPTH``, outermost first) were made
        outside the pass a library differentiates in: 0 where it differentiates none."""
        if self.in_pass is None:
            return 0
        return min(len(self.names) - self.in_pass, LIBRARY_DEPTH)


# Called with an exception ``trace`` raised while staging, before it propagates:
# ``jaxviz.errors`` adds a tracer error's explanation as a note (so that the model
# imports no explainer, which draws).
TRACE_ERROR_HOOKS: list[Callable[[BaseException], None]] = []


# ---------------------------------------------------------------------- graph building
def _display_params(params: dict[str, Any], name: str | None = None) -> dict[str, str]:
    """Params worth a tooltip line: not sub-jaxprs (they are groups), and not settings left
    at nothing (``accuracy=None``, ``in_layouts=(None, None)``, ``donated_invars=(False,)``);
    ``name``, if given, for the one the equation has (``where`` for ``jit: _where``)."""
    out = {}
    for key, val in params.items():
        if isinstance(val, (tuple, list)):
            if any(isinstance(v, _JAXPR_TYPES) for v in val) or all(v is None or v is False for v in val):
                continue
        elif val is None or val is False or isinstance(val, _JAXPR_TYPES):
            continue
        out[key] = short(val)
    if name is not None:
        out["name"] = name
    return out


def _holder_params(eqn: Any) -> dict[str, str]:
    """``_display_params`` of an equation holding sub-jaxprs, named after the jnp helper
    its jit is for, if any (``where``)."""
    return _display_params(eqn.params, library_helper_name(eqn))


_JAXPR_TYPES = (jcore.ClosedJaxpr, jcore.Jaxpr)
_LITERAL, _DROP_VAR = jcore.Literal, internals.DropVar
# The groups a name stack opens (``jax.named_scope``, ``vmap``): a library may open them inside its call.
_NAME_STACK_KINDS = ("scope", "transform")


# A function with differentiation rules of its own (``jax.custom_vjp``, ``jax.custom_jvp``):
# the equation that calls it is drawn under the function's name.
CUSTOM_RULE_CALLS = frozenset({"custom_vjp_call", "custom_jvp_call", "custom_vjp_call_jaxpr"})
# Equations that call one function as it is, with rules or a compiled body of their own
# (not a loop, a branch or a map): a library may make its call through one of them.
CALLING_PRIMITIVES = CUSTOM_RULE_CALLS | {"jit", "pjit", "remat2", "checkpoint"}

# Primitives and scopes JAX names after its own machinery, in the words the user wrote.
USER_WORD_OF_PRIMITIVE = {"remat2": "checkpoint", "remat": "checkpoint"}
USER_WORD_OF_SCOPE = {"rematted_computation": "recomputed forward"}
LOOP_BODY_LEVELS = 4  # how deep below a loop's body its step's call is looked for


def _eqn_label(eqn: Any) -> str:
    mapped = _mapped_label(eqn)  # pmap, shard_map
    if mapped is not None:
        return mapped
    across_devices = sharding.eqn_label(eqn)  # a collective, a resharding step
    if across_devices is not None:
        return across_devices
    if eqn.primitive.name in CUSTOM_RULE_CALLS:  # named after the function it wraps (``mha``)
        wrapped = internals.traced_function(eqn.params.get("call_jaxpr"))
        # the user's function or JAX's (``relu``); not a library's inner wrapper (``fn_wrapper``)
        if wrapped and wrapped[0] != "<lambda>" and (is_user_file(wrapped[1]) or internals.is_jax_file(wrapped[1])):
            return wrapped[0]
    name: str = USER_WORD_OF_PRIMITIVE.get(eqn.primitive.name) or eqn.primitive.name
    fname = eqn.params.get("name")
    helper = library_helper_name(eqn)
    if helper is not None:
        return helper
    if isinstance(fname, str) and fname and fname != name:
        return f"{name}: {fname}"
    return name


def _mapped_label(eqn: Any) -> str | None:
    """``pmap train_step (batch: 8)`` for the equation a ``jax.pmap`` call stages,
    ``shard_map step (data: 4, model: 2)`` for a ``shard_map``; else None."""
    pmap = internals.pmap_call(eqn, _is_user_code) if eqn.primitive.name in ("jit", "pjit", "xla_pmap") else None
    if pmap is not None:
        return " ".join(["pmap", *([pmap.function] if pmap.function else []), _axes_text(pmap.axes)])
    axes = internals.mesh_axes(eqn)
    if axes is None:
        return None
    function = internals.jaxpr_function_name(eqn.params.get("jaxpr"))
    shown = [function] if function and not function.startswith("_") else []
    # A pmap's own shard_map splits on an axis JAX names internally: its specs say nothing.
    specs = sharding.shard_map_specs(eqn) if all(name for name, _ in axes) else ""
    return " ".join(["shard_map", *shown, _axes_text(axes, specs)])


def _is_user_code(code: Any) -> bool:
    return is_user_file(code.co_filename)


def _is_library_file(file: str) -> bool:
    """An installed library's code, not JAX's."""
    return installed_package(file) is not None and not internals.is_jax_file(file)


@functools.lru_cache(maxsize=256)
def _package_word(name: str) -> str | None:
    """``diffrax`` for a library call named ``diffrax.loop.body_fun``; None for one named
    after a method's class (``HMC.sample``), which does not say its package."""
    package, dot, _ = name.partition(".")
    return package if dot and package[:1].islower() else None


def _axes_text(axes: Sequence[tuple[str | None, int]], specs: str = "") -> str:
    """``(batch: 8)``; an axis the user did not name: ``(8 devices)``; then the specs, if any
    (``(data: 4; in: P('data') → out: P('data'))``)."""
    named = ", ".join(f"{name}: {size}" if name else f"{size} devices" for name, size in axes)
    return f"({named}; {specs})" if specs else f"({named})"


# Where JAX's small jitted helpers live: ``jnp.where`` is a ``jit`` named ``_where``.
_HELPER_MODULES = (jax.numpy, jax.numpy.linalg, jax.nn, jax.lax, jax.random)


@functools.lru_cache(maxsize=1024)
def _public_helper(name: str) -> str | None:
    """``where`` for ``_where``, ``max`` for ``_reduce_max``, ``roll`` for
    ``_roll_static``, ``clip`` for ``clip``: the
    public function of ``jax.numpy`` (or ``nn``, ``lax``, ``random``) a jitted helper
    implements."""
    public = name.lstrip("_")
    for candidate in (public, public.removeprefix("reduce_"), public.removesuffix("_static")):
        if candidate and any(callable(getattr(m, candidate, None)) for m in _HELPER_MODULES):
            return candidate
    return None


def library_helper_name(eqn: Any) -> str | None:
    """The user's call (``where``) for a ``jit`` equation JAX made for one of its own
    helpers (``_where``), else None."""
    fname = eqn.params.get("name")
    if not isinstance(fname, str) or not holds_jaxpr(eqn.params):
        return None
    return _public_helper(fname)


# The outer transformation of a merged name stack element → the phase it stands for.
PHASE_OF_TRANSFORM = {"jvp": "forward", "transpose": "backward"}


def _scope_path(eqn: Any) -> list[tuple[str, str]]:
    """Name stack as group keys. Consecutive transforms merge (``transpose(jvp)``); the
    first ``jvp``/``transpose`` becomes the ``forward``/``backward`` phase, and the
    differentiation plumbing below a phase (a ``jvp`` inside the backward pass of a
    ``remat``, say) is dropped: it is how JAX computes the pass, not the user's structure."""
    path: list[tuple[str, str]] = []
    for el in internals.name_stack(eqn):
        if el.kind == "transform" and path and path[-1][0] == "transform" \
                and not _applied_inside_pass(path[-1][1], el.name):
            path[-1] = ("transform", f"{path[-1][1]}({el.name})")
        else:
            path.append((el.kind, el.name))
    out: list[tuple[str, str]] = []
    phase_at: int | None = None  # where the scopes inside the phase start in ``out``
    replay: int | None = None
    for at, (kind, name) in enumerate(path):
        phase = PHASE_OF_TRANSFORM.get(name.partition("(")[0]) if kind == "transform" else None
        if phase is not None:
            inner = out[phase_at:] if phase_at is not None else []
            if phase_at is not None and inner and out[:phase_at - 1][-len(inner):] == inner:
                # a custom rule transposed in the caller's scope restates the scopes
                # around the pass (``f / transpose / f / jvp / …``): they are not in it
                del out[phase_at:]
            elif phase_at is None or inner and not _scope_restated(path, at + 1, inner[0]):
                # the pass itself, or the user's own differentiation inside it (MAML's
                # inner ``grad``): a pass of its own, within the scopes it was taken in
                out.append(("phase", phase))
                phase_at = len(out)
                continue
            replay = phase_at  # plumbing (a remat's jvp) re-enters the pass: its scopes repeat ours
            continue
        if replay is not None and replay < len(out) and out[replay] == (kind, name):
            replay += 1
            continue
        replay = None
        out.append(_path_key(kind, name))
    return out


def _applied_inside_pass(run: str, transform: str) -> bool:
    """Whether ``transform``, next on the name stack after the merged transformations
    ``run``, is one applied inside the pass they make (``grad`` of a loss that calls
    ``jax.vmap(predict)``: ``jvp``, then ``vmap``), not a part of how JAX differentiates:
    ``run`` is differentiation only (``jvp``, ``transpose(jvp)``), ``transform`` is not."""
    return transform not in PHASE_OF_TRANSFORM and all(
        part in PHASE_OF_TRANSFORM for part in run.replace(")", "").split("("))


def _as_called(run: list[tuple[str, str]], call: CallInfo, scope: str) -> list[tuple[str, str]]:
    """A run of transformation keys before the call ``scope`` (``call``) as the user
    asked for them (``GraphBuilder._transformations_named``)."""
    if call.jacobian is not None:
        return [("transform", f"{call.jacobian}@{scope}")]
    if call.transformations[:2] == ("vmap", "grad") and len(run) == 1 and run[0][0] == "transform":
        name = run[0][1]
        if name.startswith("vmap(") and ("jvp" in name or "transpose" in name):
            return [("transform", f"vmap@{scope}"), ("phase", phases.BACKWARD if "transpose" in name else phases.FORWARD)]
    return run


def _around_pass(head: Sequence[tuple[str, str]], run: Sequence[tuple[str, str]],
                 tail: Sequence[tuple[str, str]], library: Sequence[tuple[str, str]],
                 outside: int) -> list[tuple[str, str]] | None:
    """``head``, then the library calls made outside the pass the library differentiates
    in (the first ``outside``), the transformations ``run`` holding that pass, the calls
    made inside it, ``tail``; None where the library differentiates none of ``run``."""
    if not outside or all(kind != "phase" for kind, _ in run):
        return None
    return [*head, *library[:outside], *run, *library[outside:], *tail]


def _module_word(name: str) -> str:
    """What a module's scope and its class have in common: ``linear`` for Haiku's
    ``linear_0`` scope and its ``Linear`` class, ``multiheadattention`` for its
    ``multi_head_attention`` and ``MultiHeadAttention``, ``mlp`` for ``eqx.nn.MLP``."""
    return name_stem(name.partition("@")[0].rpartition(".")[2]).lower().replace("_", "")


def _past_module_calls(scope: list[tuple[str, str]], library: list[tuple[str, str]],
                       outside: int) -> tuple[list[tuple[str, str]], int]:
    """``library`` (and how many of its calls are outside the pass) without the calls that
    are the framework modules whose scopes the name stack ends with (before its trailing
    transformations): Haiku's ``mlp / linear_0`` scopes are its ``MLP`` and ``Linear``
    modules, each called through ``run_interceptors``; they show already, and the calls
    up to the innermost module so named are how the framework called it. A scope
    inside that module's is a module the user named (Flax's ``Dense(name="query")``,
    Haiku's ``mean_ema``): the calls up to the innermost module call are its."""
    end = _trailing_transforms(scope, ("transform", "phase"))
    start = end
    while start and scope[start - 1][0] == "scope" and call_scopes.activation_number(scope[start - 1][1]) is None:
        start -= 1
    if start == end:
        return library, outside
    words = [_module_word(name) for _, name in scope[start:end]]
    cut, deepest = 0, -1  # the calls before ``cut`` are the modules'; the innermost scope named
    for k, (_, name) in enumerate(library):
        word = _module_word(name)
        if word in words:
            cut, deepest = k + 1, max(deepest, len(words) - 1 - words[::-1].index(word))
    if deepest < len(words) - 1:
        cut = max((k + 1 for k in range(cut, len(library)) if _is_module_call(library[k][1])), default=cut)
    return library[cut:], max(0, outside - cut)


def _is_module_call(key_name: str) -> bool:
    """Whether a library call's name is a class's ``__call__`` (``Linear``, not
    ``HMC.sample`` nor ``optax.adam``): how frameworks call their modules."""
    name = key_name.partition("@")[0]
    return "." not in name and name[:1].isupper()


def _trailing_transforms(path: list[tuple[str, str]], kinds: tuple[str, ...]) -> int:
    """Where the run of keys of ``kinds`` that ``path`` ends with starts."""
    at = len(path)
    while at and path[at - 1][0] in kinds:
        at -= 1
    return at


def _sites_filled(paths: list[list[tuple[str, str]]]) -> list[list[tuple[str, str]]]:
    """``paths`` (one per equation, in program order), where an equation's pass or
    Jacobian does not say which differentiation it belongs to (no call follows it: a
    backward pass's seed, a Jacobian's basis; ``GraphBuilder._of_one_differentiation``,
    ``GraphBuilder._transformations_named``), with that of the nearest equation in one at the
    same place: the one before it, else the one after."""
    at_of: dict[int, int | None] = {}
    for path in paths:
        if id(path) not in at_of:
            at_of[id(path)] = next((k for k, key in enumerate(path) if _differentiates(key)), None)
    filled = list(paths)
    for order in (range(len(paths)), range(len(paths) - 1, -1, -1)):
        sited: dict[tuple[tuple[str, str], ...], tuple[str, str]] = {}
        for i in order:
            path, at = filled[i], at_of.get(id(filled[i]))
            if at is None:
                continue
            prefix, key = tuple(path[:at]), path[at]
            if "@" in key[1]:
                sited[prefix] = key
            elif (found := sited.get(prefix)) is not None and found[0] == key[0]:
                site = found[1].partition("@")[2]
                filled[i] = [*path[:at], (key[0], f"{key[1]}@{site}") if key[0] == "phase" else found,
                             *path[at + 1:]]
                at_of[id(filled[i])] = at
    return filled


def _differentiates(key: tuple[str, str]) -> bool:
    """Whether a path key is a pass or a transformation that differentiates."""
    kind, name = key
    return kind == "phase" or kind == "transform" and ("jvp" in name or "transpose" in name or "@" in name)


def _same_key(key: tuple[str, ...], outer: tuple[str, ...]) -> bool:
    """Whether a sub-jaxpr equation's ``key`` is the key ``outer`` of the equation that
    holds it: a pass that does not say its differentiation is the holder's pass."""
    if key == outer[:2]:
        return True
    return key[0] == "phase" == outer[0] and "@" not in key[1] and outer[1].partition("@")[0] == key[1]


def _path_key(kind: str, name: str) -> tuple[str, str]:
    """A name-stack element as a group key: a scope in the user's words."""
    return (kind, USER_WORD_OF_SCOPE.get(name, name) if kind == "scope" else name)


def _scope_restated(path: list[tuple[str, str]], at: int, scope: tuple[str, str]) -> bool:
    """Whether ``path[at]`` is ``scope`` again (as ``_scope_path`` writes it)."""
    return at < len(path) and _path_key(*path[at]) == scope


# What the build reads of things that outlive a trace and never change, kept between
# builds (a cell run again, a model traced again records the same code objects):
# per code object of the tracebacks, by id (the code kept beside it: a code object hashes
# its whole bytecode and constants), ``GraphBuilder._code_info``; the ids of those that
# only pass a call on (not the user's nor jaxviz's, no library call: JAX's machinery, most
# of a traceback). Cleared past this many entries.
KEPT_BETWEEN_BUILDS_MAX = 50_000
_CODE_INFOS: dict[int, tuple[Any, bool, bool, str | None]] = {}
_PASSING_CODES: set[int] = set()
_DIFFERENTIATING_CODES: set[int] = set()  # of those, JAX's differentiation API's
# Per literal value (a 0-d array by its dtype and bytes), its text (``_literal_text``).
_LITERAL_TEXTS: dict[tuple[Any, ...], str] = {}
_MISSING = object()  # a cache's "not read yet", where None is an answer


@dataclass
class _Walk:
    """What one walk over a sub-jaxpr's equations made (``GraphBuilder._walk_sub``), kept to
    make the same again for a later call of that sub-jaxpr: the nodes, groups and edges it
    added (each a range, made in that order), the entries it added to the builder's tables
    (by key, in order), and how it reached outside: through the sub-jaxpr's inputs (by
    index) and its holder group."""

    sub: Any  # kept alive: walks are found by its id
    base_path: list[tuple[str, ...]]
    look: tuple[str, str, bool, bool]  # the holder's (name, kind, has a source, under a library call)
    holder: int
    nodes: range
    groups: range
    edges: range
    edge_inputs: dict[int, int]  # an edge (its offset) from outside the walk → the input it came through
    outputs: list[int]  # per output, its node's offset in the walk, or ~(the input it is)
    env_in: list[int]  # per input, the node it stood for
    unnamed: list[bool]  # per input: whether its node was a constant still to be named
    named: list[bool]  # per input: whether the walk named it
    tables: dict[str, list[Any]]  # per table of the builder (``_WALKED_TABLES``), the keys it added
    calls: list[tuple[int, int]]  # ``call_groups`` it added: (activation number, group id)
    holder_groups: list[int]  # what it added to the holder
    holder_nodes: list[int]
    holder_source: SourceLoc | None  # the holder's source after it


# The builder's tables a walk adds entries to: (what keys them, what their values are),
# each a node (n), a group (g), a (group, ...) pair (p), a node's values through it (t)
# or anything else, kept as it is (-); replayed with keys and values moved.
_WALKED_TABLES = {"sites": "n-", "outside_phases": "n-", "_passes_through": "nt", "functions_run": "g-",
                  "apis_called": "g-", "private_calls": "g-", "activation": "g-", "differentiated": "g-",
                  "_keyed": "pg", "_last_at_site": "p-"}


class _ValuesThrough(Mapping[int, Mapping[str, frozenset[str]]]):
    """``GraphBuilder._values_through``: per node, its outer results' edge names → the
    edge names of the inner results each is, written when first read."""

    def __init__(self, passes_through: dict[int, list[tuple[Any, list[Any]]]], names: dict[Any, str]) -> None:
        self._passes_through, self._names = passes_through, names
        self._written: dict[int, dict[str, frozenset[str]]] = {}

    def _named(self, var: Any) -> str | None:  # a literal has no name (and no hash)
        return None if isinstance(var, jcore.Literal) else self._names.get(var)

    def __getitem__(self, node: int) -> dict[str, frozenset[str]]:
        found = self._written.get(node)
        if found is None:
            named = self._named
            found = self._written[node] = {
                outer: frozenset(n for v in inner if (n := named(v)) is not None)
                for out_var, inner in self._passes_through[node] if (outer := named(out_var)) is not None}
        return found

    def __contains__(self, node: object) -> bool:
        return node in self._passes_through

    def __iter__(self) -> Iterator[int]:
        return iter(self._passes_through)

    def __len__(self) -> int:
        return len(self._passes_through)


class GraphBuilder:
    """Builds the ``Graph`` of a ClosedJaxpr in one linear pass over all equations."""

    def __init__(self, name: str, calls: dict[str, CallInfo], cell_file: str | None) -> None:
        self.graph = Graph(name)
        self.captured: list[tuple[InputInfo, Any]] = []  # captured arrays, to name sub-jaxpr consts
        self.lost_outputs: set[str] = set()  # outputs the real call drops (state updated inside jax.jit)
        self._unnamed_consts: set[int] = set()  # const nodes named after their first use (_name_const)
        self.calls = calls
        self.cell_file = cell_file
        self.activation: dict[int, int] = {}  # call group → activation number (call order)
        self.differentiated: dict[int, str] = {}  # pass group → the function it differentiates
        # (activation number, its group): the group objects, whose ids Graph.finish may renumber
        self.call_groups: list[tuple[int, Any]] = []
        self._sources: dict[tuple[str, int, str], SourceLoc] = {}  # shared: one per line
        # per traceback: its innermost user frame, that frame's source, its library path,
        # how many of its calls are outside the pass the library differentiates in, the
        # library call it is a callback of, and the frame's site (``_note_pass``)
        self._by_traceback: dict[Any, tuple[Any, SourceLoc | None, list[tuple[str, str]], int,
                                            Enclosing | None, tuple[int, int] | None]] = {}
        # per stack outside an innermost user frame (its codes' ids, alive while the jaxpr
        # is, and offsets): ``_enclosing_call``'s answer
        self._enclosing_by_stack: dict[tuple[tuple[int, ...], tuple[int, ...]], Any] = {}
        if len(_CODE_INFOS) > KEPT_BETWEEN_BUILDS_MAX:
            _CODE_INFOS.clear()
            _PASSING_CODES.clear()
            _DIFFERENTIATING_CODES.clear()
        if len(_LITERAL_TEXTS) > KEPT_BETWEEN_BUILDS_MAX:
            _LITERAL_TEXTS.clear()
        self._code_infos = _CODE_INFOS  # by id(code): _code_info
        self._passing_codes = _PASSING_CODES
        self._var_names: dict[Any, str] = {}
        self._keyed: dict[tuple[int, tuple[str, ...]], int] = {}  # (parent, key) → group
        # (parent, site) → the library call last made there, in which pass of its caller
        self._last_at_site: dict[tuple[int, str], tuple[tuple[str, ...], int]] = {}
        self._layer_calls: set[str] = set()  # library calls' keys named after a layer's attribute
        self._passes: dict[int, int] = {}  # id(code) → its passes so far (_note_pass)
        self._last_offsets: dict[tuple[int, bool], int] = {}  # (id(code), backward) → its last equation's offset
        self.outside_phases: dict[int, Any] = {}  # node id → equation, outside fwd/bwd
        # An equation's node that its sub-jaxprs' results flow back into: per outer result,
        # the inner results it is (a jit over a whole pytree passes each leaf through).
        self._passes_through: dict[int, list[tuple[Any, list[Any]]]] = {}
        self.sites: dict[int, Any] = {}  # node id → the user frame (line and column) it came from
        # per (name stack, library path): the equations of one layer share both
        self._eqn_paths: dict[tuple[Any, ...], list[tuple[str, str]]] = {}
        self._eqn_paths_seen: dict[tuple[int, int], tuple[Any, list[tuple[str, str]]]] = {}  # by identity
        self._unsited_paths: set[int] = set()  # ids of those whose pass does not say its differentiation
        self._literal_texts = _LITERAL_TEXTS
        self._params_texts: dict[tuple[Any, ...], tuple[str, DeferredParams, list[Any]]] = {}  # per distinct params
        self.library_nodes: set[int] = set()  # equations recorded inside a library call
        self._library_groups: dict[int, bool] = {}  # group → whether inside a library call
        self.functions_run: dict[int, list[str]] = {}  # eqn group → the functions JAX traced into it
        self.apis_called: dict[int, str | None] = {}  # eqn group of lambdas → ``lax.map``
        # functions a library had JAX trace for it (Equinox's ``fun_checkpoint``): not the
        # user's, so not named beside the user's function a box runs
        self.plumbing_run: set[str] = set()
        # eqn group → the private function of a library (or of JAX) it calls as it is
        # (``jit: _odeint_wrapper``): how the library makes a call (_merge_private_calls)
        self.private_calls: dict[int, str] = {}
        self.called = CalledNames()  # library calls named as the user's values say
        # where given (``build_program``): by id, the code objects of the tracebacks' frames
        # from their innermost user frame outward (those a user function can be among)
        self.frame_codes: dict[int, Any] | None = None
        self._walks: dict[int, list[_Walk]] = {}  # by id of the sub-jaxpr walked

    def build(self, closed: Any, inputs: list[InputInfo], input_names: list[str],
              output_names: list[str], const_names: dict[int, InputInfo]) -> Graph:
        g = self.graph
        jaxpr = internals.open_jaxpr(closed)
        env: dict[Any, int] = {}
        for info in inputs:  # static values and captured scalars: shown, never an edge
            if info.kind in ("static", "captured", "constant") and info.aval is None:
                kind = "input" if info.kind == "static" else "const"
                g.add_node(kind, f"{info.name} = {info.value}", 0, input_kind=info.kind)
        for i, var in enumerate(jaxpr.constvars):
            info = const_names.get(i)
            label = info.name if info else f"const {aval_of_var(var).text}"
            kind = info.kind if info else "constant"
            env[var] = g.add_node("const", label, 0, input_kind=kind, outputs=[aval_of_var(var)])
            if info is None:
                self._unnamed_consts.add(env[var])
        by_name = {i.name: i for i in inputs}
        in_groups = self._pytree_groups(input_names, "inputs")
        for var, name in zip(jaxpr.invars, input_names):
            info = by_name.get(name)
            placed = (info.sharding if info else None) or sharding.aval_sharding_text(var.aval)
            env[var] = g.add_node("input", name, in_groups.get(name, 0),
                                  input_kind=info.kind if info else "traced", outputs=[aval_of_var(var)],
                                  params={"sharding": placed} if placed else {})
        self._add_eqns(jaxpr.eqns, 0, env, base_path=[])
        out_groups = self._pytree_groups(output_names, "outputs")
        for var, names in _outputs_by_value(jaxpr.outvars, output_names):
            aval = aval_of_var(var)
            lost = names[0] in self.lost_outputs
            placed = sharding.aval_sharding_text(var.aval)
            out = g.add_node("output", " = ".join(names) + (" (lost)" if lost else ""), out_groups.get(names[0], 0),
                             input_kind="lost" if lost else None, outputs=[aval],
                             params={"sharding": placed} if placed else {})
            if not isinstance(var, jcore.Literal) and var in env:
                g.add_edge(env[var], out, aval, self._var_name(var))
        phases.shape_phases(g, self.outside_phases, optax_adapter.transformation_of, self._values_through())
        self._fold_leaves()
        self._merge_jitted_calls()
        self._merge_private_calls()
        self._merge_helper_calls()
        self._name_loops()
        self._name_loops_as_forward()
        # after the loops are named: ``_loop_body`` tells the frames a body restates by what
        # they hold, which a scope placed inside them would change
        self._place_scopes_opened_in_calls()
        self._merge_transformations_in_calls()
        self._mark_repeats()
        self._group_long_lines()
        return g.finish()

    def _pytree_groups(self, names: list[str], kind: str) -> dict[str, int]:
        """Arguments (or outputs) with many leaves, e.g. ``params``, become one group."""
        by_root: dict[str, list[str]] = {}
        for name in names:
            by_root.setdefault(_pytree_root(name), []).append(name)
        # Results returned as one list (``out[0]``, ``out[1]``, ...): group them as ``out``.
        singles = [r for r, m in by_root.items() if len(m) == 1 and r.startswith("out[")]
        if len(singles) >= PYTREE_GROUP_MIN:
            by_root["out"] = [by_root.pop(r)[0] for r in singles]
        placed: dict[str, int] = {}
        for root, members in by_root.items():
            if len(members) >= PYTREE_GROUP_MIN:
                lost = "lost, " if kind == "outputs" and all(m in self.lost_outputs for m in members) else ""
                gid = self.graph.add_group(f"{root} ({lost}{len(members)} arrays)", kind, 0)
                self._split_pytree(gid, root, members, kind, placed)
        return placed

    def _split_pytree(self, gid: int, prefix: str, members: list[str], kind: str,
                      placed: dict[str, int]) -> None:
        """A big pytree's leaves, grouped by their next key (``params`` → ``['blocks']`` →
        ``['blocks'][3]``), so that opening ``params (386 arrays)`` shows its parts, not
        386 leaves in a row."""
        by_key: dict[str, list[str]] = {}
        for name in members:
            key = _PATH_STEP.match(name, len(prefix))
            by_key.setdefault(key.group() if key else "", []).append(name)
        if len(by_key) == 1 and "" not in by_key and len(members) > PYTREE_SPLIT_MIN:
            # one key below this one (``model.blocks``): split below it
            self._split_pytree(gid, prefix + next(iter(by_key)), members, kind, placed)
            return
        if len(members) <= PYTREE_SPLIT_MIN or len(by_key) < 2 or "" in by_key:
            placed.update(dict.fromkeys(members, gid))
            return
        for key, sub in by_key.items():
            if len(sub) < 2:
                placed[sub[0]] = gid
                continue
            child = self.graph.add_group(f"{prefix}{key} ({len(sub)} arrays)", kind, gid)
            self._split_pytree(child, prefix + key, sub, kind, placed)

    def _merge_jitted_calls(self) -> None:
        """A function under ``jax.jit`` is one group, the call's (``sgd``,
        ``Environment.reset``, ``diffrax.diffeqsolve`` under Equinox's ``filter_jit``),
        holding the ``jit`` equation's node: not a ``jit: sgd`` group around a ``sgd``
        group. Where a scope the function's own code opened cuts its equations into pieces
        (diffrax's ``outer-loop``), the piece is that scope's, inside the one call."""
        g = self.graph
        for group in list(g.groups):
            if group.holder is None or group.kind != "eqn":
                continue
            jitted = g.nodes[group.holder].params.get("name")
            calls = [c for c in group.groups if _is_call_of(g.groups[c], jitted)]
            if not calls:
                continue
            call = g.groups[calls[0]]
            group.name, group.kind, group.source = call.name, call.kind, call.source or group.source
            pieces = [c for c in group.groups if g.groups[c].name == call.name]
            pieces += [c for scope in group.groups if g.groups[scope].kind == "scope"
                       for c in g.groups[scope].groups if g.groups[c].name == call.name]
            for piece in pieces:
                self._dissolve(g.groups[piece])

    def _dissolve(self, group: Any) -> None:
        """``group``'s nodes and groups moved into its parent, in its place; it is left
        empty and out of the tree."""
        g = self.graph
        parent = g.groups[group.parent]
        at = parent.groups.index(group.id)
        parent.groups[at:at + 1] = group.groups
        parent.nodes = sorted(parent.nodes + group.nodes)
        for nid in group.nodes:
            g.nodes[nid].group = parent.id
        for c in group.groups:
            g.groups[c].parent = parent.id
        group.nodes, group.groups, group.parent = [], [], None

    def _merge_private_calls(self) -> None:
        """A library call made through one of its own private functions, under a ``jit``
        or a custom derivative (``odeint`` → ``jit: _odeint_wrapper``,
        ``equinox.nondifferentiable`` → ``_nondifferentiable``), is one group: the call's,
        holding that equation's node, as ``_merge_jitted_calls`` makes of a jitted call.
        The private function is how the library made the call, not a step of it."""
        g = self.graph
        for gid in self.private_calls:
            wrapper = g.groups[gid]
            call = g.groups[wrapper.parent] if wrapper.parent is not None else None
            if wrapper.kind != "eqn" or call is None or call.kind != "library" or call.holder is not None \
                    or call.groups != [gid]:
                continue  # (a jnp helper's group is the user's call already: ``normal``)
            call.holder = wrapper.holder
            self._dissolve(wrapper)

    def _merge_helper_calls(self) -> None:
        """A call of JAX's public function that runs as its jitted helper is that helper's
        one operation (``one_hot``), not a ``jax.nn.one_hot`` group around it. (A helper
        whose own code calls the function, ``standardize``'s, is ``_open_group``'s.)"""
        g = self.graph
        for group in list(g.groups):
            if group.kind != "library" or group.parent is None or group.nodes or len(group.groups) != 1:
                continue
            helper = g.groups[group.groups[0]]
            if helper.helper and group.name.startswith("jax.") and helper.name == group.name.rpartition(".")[2]:
                self._dissolve(group)

    def _place_scopes_opened_in_calls(self) -> None:
        """A scope or transformation a library call opened inside itself (diffrax's
        ``outer-loop``, a ``jax.named_call`` around Equinox's while loop; the ``vmap`` and
        ``jnp.einsum`` scopes of ``jax.nn.dot_product_attention``) cuts that call in two:
        the name stack puts the scope outside the call, the traceback the call inside the
        scope. Where a scope holds, through scopes alone, one call made at the same site
        as one beside it (one call, two pieces), and else only scopes (the library's own,
        nested: ``checkpointed-fwd``) and calls of the user's functions (that the library
        calls back, under its ``jvp``), the scope goes into that call, as deep as both
        pieces are the same calls, holding what its piece holds there."""
        g = self.graph
        site_of = {gid: key for (_, key), gid in self._keyed.items() if key[0] == "library"}
        for scope in list(g.groups):
            if scope.kind not in _NAME_STACK_KINDS or scope.parent is None:
                continue
            inner = scope  # down the name stack's groups to the one call they hold
            while not inner.nodes and len(inner.groups) == 1 and g.groups[inner.groups[0]].kind in _NAME_STACK_KINDS:
                inner = g.groups[inner.groups[0]]
            calls = [c for c in inner.groups if g.groups[c].kind not in _NAME_STACK_KINDS + ("call",)]
            if inner.nodes or len(calls) != 1:
                continue
            chain = [g.groups[calls[0]]]  # the piece's calls, down to where the two part
            into = self._same_site_call_around(scope, chain[0], site_of)
            if into is None:
                continue
            while not chain[-1].nodes and len(chain[-1].groups) == 1:
                inner = g.groups[chain[-1].groups[0]]
                deeper = self._same_site_child(into, inner, site_of)
                if deeper is None:
                    break
                chain.append(inner)
                into = deeper
            for call in chain:  # outermost first: each hands what it holds to the scope
                self._dissolve(call)
            self._move_into(scope, into)
            self._dissolve_calls_of(scope, site_of.get(into.id), site_of)

    def _merge_transformations_in_calls(self) -> None:
        """Inside a library call, the transformations of one name are one group where at
        most one of them holds calls of the library's (and all that one the same), or
        where they stand next to each other and are not each the transformation of a
        call of its own: the name stack cannot tell one ``vmap`` from two, and the
        equations of one (over ``jax.nn.dot_product_attention``'s heads, over mctx's
        ``qtransform_completed_by_mix_value``) interleave with the scopes and calls it
        holds, which cut it into pieces. Two holding different calls (mctx's search vmaps
        ``simulate``, then ``backward``) are two."""
        g = self.graph
        for call in g.groups:
            if call.kind != "library" or call.parent is None:
                continue
            by_name: dict[str, list[Any]] = {}
            for child in call.groups:
                if g.groups[child].kind == "transform":
                    by_name.setdefault(g.groups[child].name, []).append(g.groups[child])
            for same in by_name.values():
                held = {names for group in same
                        if (names := frozenset(g.groups[c].name for c in group.groups if g.groups[c].kind == "library"))}
                runs = [same] if len(held) <= 1 else self._adjacent_pieces(call, same)
                for run in runs:
                    for group in run[1:]:
                        self._merge_into(group, run[0])

    def _adjacent_pieces(self, parent: Any, same: list[Any]) -> list[list[Any]]:
        """The runs of ``same`` (``parent``'s transformations of one name) that stand next
        to each other among its members in program order, but for a run each of which
        is the transformation of one call alone, a different one (``vmap(f)``, then
        ``vmap(g)``)."""
        g = self.graph
        pieces = {group.id for group in same}
        members = sorted([(n, -1) for n in parent.nodes]
                         + [(min(phases.nodes_below(g, c), default=-1), c) for c in parent.groups])
        runs: list[list[Any]] = [[]]
        for _, gid in members:
            if gid in pieces:
                runs[-1].append(g.groups[gid])
            elif runs[-1]:
                runs.append([])
        return [run for run in runs if len(run) > 1 and not self._each_of_its_own_call(run)]

    def _each_of_its_own_call(self, run: list[Any]) -> bool:
        """Whether each of ``run`` holds one call and nothing else, each another."""
        g = self.graph
        held = [g.groups[t.groups[0]] for t in run if not t.nodes and len(t.groups) == 1]
        return len(held) == len(run) and all(h.kind in ("call", "library") for h in held) \
            and len({h.name for h in held}) == len(held)

    def _merge_into(self, group: Any, into: Any) -> None:
        """``group``'s nodes and groups moved into its sibling ``into`` (put inside it, then
        dissolved); it is left empty and out of the tree."""
        self._move_into(group, into)
        self._dissolve(group)

    def _move_into(self, group: Any, into: Any) -> None:
        """``group`` taken from its parent and put last inside ``into``."""
        self.graph.groups[group.parent].groups.remove(group.id)
        into.groups.append(group.id)
        group.parent = into.id

    def _dissolve_calls_of(self, group: Any, site: tuple[str, ...] | None,
                           site_of: dict[int, tuple[str, ...]]) -> None:
        """The pieces of the library call made at ``site`` under ``group``, a scope placed
        in that call, dissolved where they stand (``jnp.einsum``'s scope placed in
        ``jax.nn.dot_product_attention`` held a piece of it); not inside other calls."""
        for child in list(group.groups):
            inner = self.graph.groups[child]
            same = site is not None and site_of.get(child) == site
            if same or inner.kind != "library":
                self._dissolve_calls_of(inner, site, site_of)
            if same:
                self._dissolve(inner)

    def _same_site_call_around(self, scope: Any, call: Any, site_of: dict[int, tuple[str, ...]]) -> Any:
        """The piece of ``call`` beside ``scope``, or beside a scope around it (Equinox's
        ``vmap`` around its attention, the einsum's scope inside), or None."""
        inside, around = scope, self.graph.groups[scope.parent]
        while (into := self._same_site_child(around, call, site_of, inside.id)) is None \
                and around.kind in _NAME_STACK_KINDS and around.parent is not None:
            inside, around = around, self.graph.groups[around.parent]
        return into

    def _same_site_child(self, parent: Any, call: Any, site_of: dict[int, tuple[str, ...]],
                         skip: int | None = None) -> Any:
        """The one library call among ``parent``'s groups (but ``skip``) made at the same
        site as ``call``, or None."""
        site = site_of.get(call.id)
        same = [c for c in parent.groups if c != skip and c != call.id and site is not None
                and site_of.get(c) == site]
        return self.graph.groups[same[0]] if len(same) == 1 else None

    def _name_loops(self) -> None:
        """A box holding sub-jaxprs is named after the functions JAX traced into them:
        ``relu (custom_jvp_call)``, ``mha (custom_vjp_call)``; a loop after the function
        it runs, with its trip count: ``_update_step ×100 (scan)``, and for layers stacked
        and run by ``nnx.scan``, after the layer its step calls: ``DotReluDot ×4 (scan:
        forward)``."""
        g = self.graph
        for group in list(g.groups):
            if group.kind != "eqn" or group.holder is None:
                continue
            holder = g.nodes[group.holder]
            if group.name != holder.primitive and group.name != _eqn_label_word(holder.primitive):
                continue  # already named (a jit's function)
            recorded = [n for n in self.functions_run.get(group.id, []) if not call_scopes.is_plumbing_name(n)]
            body = self._loop_body(group)
            if body is None and recorded and all(n in self.plumbing_run for n in recorded):
                # a library's own function (Equinox's fun_checkpoint) calling the user's
                body = self._loop_body(group, majority=False)
            shown = g.groups[body].name if body is not None else (recorded[-1] if recorded else None)
            api = self.apis_called.get(group.id) if shown is None else None
            shown = shown or api
            if shown is None:
                continue
            # not JAX's own (_fori_cond_fun), nor a library's, but for a cond's branches:
            # what it chooses between, whoever wrote them
            others = [n for n in recorded if n != shown and not n.startswith("_")
                      and (holder.primitive == "cond" or n not in self.plumbing_run)]
            length = holder.params.get("length")
            count = f" ×{length}" if length is not None else ""
            word = _eqn_label_word(holder.primitive)
            if api is not None and api.rpartition(".")[2] == word:
                group.name = f"{shown}{count}"  # lax.scan ×7, not lax.scan ×7 (scan)
            else:
                group.name = f"{shown}{count} ({word}: {', '.join(others)})" if others else f"{shown}{count} ({word})"

    def _name_loops_as_forward(self) -> None:
        """A later pass's loop is named as its forward copy (the loop of the same kind and
        trip count where the forward has the same groups): its transpose runs the
        backward of the same step, though only a library's wrappers may be left in its
        body to say so (Flax's lifted scan: ``Block ×6 (scan)``, not
        ``flax.scan.inner.scanned ×6``)."""
        g = self.graph
        for group in g.groups:
            if group.kind != "eqn" or group.holder is None or group.parent is None:
                continue
            holder = g.nodes[group.holder]
            copy = g.forward_copy(group.parent) if holder.primitive in LOOP_PRIMITIVES else None
            if copy is None:
                continue
            same = [c for c in g.groups[copy].groups
                    if (h := g.groups[c].holder) is not None and g.groups[c].kind == "eqn"
                    and g.nodes[h].primitive == holder.primitive
                    and g.nodes[h].params.get("length") == holder.params.get("length")]
            if len(same) == 1:
                group.name = g.groups[same[0]].name

    def _loop_body(self, loop: Any, majority: bool = True) -> int | None:
        """The call group that holds most of a loop's equations (in its body's jaxpr
        group, for a ``while``), or None; without ``majority``, the biggest call (a
        scope, where no call is). Where the body's top level holds no call, the level
        below it (through transformations, control flow and phases: an adjoint's
        backward loop runs the ``jvp`` of the solver's step) is looked at, and so on."""
        g = self.graph
        candidates = list(loop.groups)
        # a while's condition is not what it runs
        candidates += [c for j in loop.groups if g.groups[j].kind == "jaxpr" and g.groups[j].name != "cond_jaxpr"
                       for c in g.groups[j].groups]
        candidates = self._past_callers(candidates, loop)
        for _ in range(LOOP_BODY_LEVELS):
            if any(self._is_step_call(c) for c in candidates):
                break
            scopes = [c for c in candidates if g.groups[c].kind == "scope"]  # kept, not looked into
            candidates = scopes + self._past_callers([k for c in candidates if g.groups[c].kind != "scope"
                                                      for k in g.groups[c].groups], loop)
        calls_ = [c for c in candidates if self._is_step_call(c)]
        if not calls_ and not majority:  # a Flax module's scope (``CheckpointBlock_0``)
            calls_ = [c for c in candidates if g.groups[c].kind == "scope"
                      and g.groups[c].name not in USER_WORD_OF_SCOPE.values()]
        if not calls_:
            return None
        sizes = {c: len(phases.nodes_below(g, c)) for c in calls_}
        best = max(calls_, key=sizes.__getitem__)
        if majority and sizes[best] * 2 < len(phases.nodes_below(g, loop.id)):
            return None
        inner = g.groups[best]
        # a step function that only calls the layer; a user's step that only calls a
        # library (blackjax's kernel) is named after the user's function
        while not inner.nodes and len(inner.groups) == 1 \
                and g.groups[inner.groups[0]].kind in ("call", inner.kind):
            inner = g.groups[inner.groups[0]]
        handed = self._handed_on(inner)
        return (handed or inner).id

    def _is_step_call(self, gid: int) -> bool:
        group = self.graph.groups[gid]
        return group.kind in ("call", "library") and group.holder is None

    def _past_callers(self, candidates: list[int], loop: Any) -> list[int]:
        """The groups of a loop's body, where those restating the library frames the loop
        was called from (tracebacks in the body hold them again, in order: diffrax's
        ``diffeqsolve`` › … › Equinox's ``checkpointed_while_loop``, or the frames from
        an outer loop's step down) stand for what they hold: they are not what the loop
        runs. A frame restates a caller when what it holds goes on down the callers'
        path (or it is the loop's own caller): a step's own ``new_body_fun``, named as an
        outer one, does not."""
        g = self.graph
        callers: list[str] = []
        up = loop.parent
        while up is not None:
            if g.groups[up].kind == "library":
                callers.append(g.groups[up].name)
            up = g.groups[up].parent
        callers.reverse()

        def restates(gid: int, at: int) -> bool:
            group = g.groups[gid]
            return group.kind == "library" and group.name == callers[at] and (
                at == len(callers) - 1 or any(g.groups[k].name == callers[at + 1] for k in group.groups))

        out: list[int] = []
        todo: list[tuple[int, int | None]] = [(c, None) for c in reversed(candidates)]
        while todo:
            c, at = todo.pop()
            starts = range(len(callers)) if at is None else [at] if at < len(callers) else []
            found = next((i for i in starts if restates(c, i)), None)
            if found is None:
                out.append(c)
            else:
                todo.extend((k, found + 1) for k in reversed(g.groups[c].groups))
        return out

    def _handed_on(self, group: Any) -> Any | None:
        """A library's function that hands the loop's step on to another library's, which
        does most of it (Equinox's rewritten ``new_body_fun`` calling diffrax's
        ``body_fun``): that function's group; else None."""
        g = self.graph
        if group.kind != "library":
            return None
        inner = [c for c in group.groups if g.groups[c].kind == "library" and g.groups[c].holder is None]
        if not inner:
            return None
        sizes = {c: len(phases.nodes_below(g, c)) for c in inner}
        best = max(inner, key=sizes.__getitem__)
        other = g.groups[best]
        packages = {_package_word(other.name), _package_word(group.name)}
        if sizes[best] * 2 <= len(phases.nodes_below(g, group.id)) or len(packages) < 2 or None in packages:
            return None
        return other

    def _fold_leaves(self) -> None:
        """More than a few sibling leaves of one kind that no pytree group holds (an
        Equinox model's static fields, captured Python constants, a sampler's unnamed
        constants) become one box of that kind, which opens by their key paths: a row of
        42 leaves would set the first view's width."""
        g = self.graph
        for group in list(g.groups):
            by_kind: dict[str, list[int]] = {}
            for nid in group.nodes:
                node = g.nodes[nid]
                kind = _leaf_kind(node) if node.kind != "eqn" else None
                if kind is not None:
                    by_kind.setdefault(kind, []).append(nid)
            for kind, nids in by_kind.items():
                if len(nids) >= PYTREE_GROUP_MIN:
                    self._fold_leaf_group(group.id, kind, nids)

    def _fold_leaf_group(self, parent: int, kind: str, nids: list[int]) -> None:
        g = self.graph
        names = {nid: g.nodes[nid].label.partition(" = ")[0] for nid in nids}
        roots = {_pytree_root(n) for n in names.values()}
        root = f"{roots.pop()} " if len(roots) == 1 and kind in ("statics", "captured") else ""
        gid = g.add_group(f"{root}{kind} ({len(nids)})", "inputs", parent)
        placed: dict[str, int] = {}
        if root:
            self._split_pytree(gid, root.strip(), sorted(set(names.values())), "inputs", placed)
        moved = set(nids)
        g.groups[parent].nodes = [n for n in g.groups[parent].nodes if n not in moved]
        for nid in nids:
            target = placed.get(names[nid], gid)
            g.nodes[nid].group = target
            g.groups[target].nodes.append(nid)

    def _group_long_lines(self) -> None:
        """Long runs of equations from one source line (a ``tree_map`` over all the
        parameters, say) become one group named after the line; a line run again and
        again by a Python loop (five message-passing rounds) becomes one group per round,
        so each round is wired to the next rather than all to one hub. An equation that
        holds a sub-jaxpr (``relu``'s ``custom_jvp_call``) goes with its line."""
        g = self.graph
        line_keys = self._line_keys()
        for group in list(g.groups):
            if len(group.nodes) + len(group.groups) < LINE_GROUP_MIN:
                continue  # too few members for a run (most groups: an equation's, a layer's)
            members = self._members_in_order(group)
            alone = len(group.groups) == sum(g.groups[c].holder is not None for c in group.groups)
            targets: list[tuple[int, list[int]]] = []  # moved in one pass over the group, after
            for key, grouped in itertools.groupby(members, line_keys.__getitem__):
                run = list(grouped)  # node ids: an equation, or the own node of an eqn group
                if key is None or len(run) < LINE_GROUP_MIN:
                    continue
                rounds = self._loop_rounds(run)
                if len(rounds) == 1 and len(run) == len(members) and alone \
                        and (group.id != 0 or len(run) <= LINE_ALONE_MAX):
                    continue  # all the group does: a box in a box (or one box) says nothing
                src = g.nodes[run[0]].source
                name = f"line {src.cell_line or src.line}: {short(src.text or src.function, 40)}" if src \
                    else f"{g.nodes[run[0]].primitive} ({len(run)} equations)"
                for k, round_members in enumerate(rounds, 1):
                    gid = g.add_group(name, "line", group.id, source=src)
                    if len(rounds) > 1:
                        g.groups[gid].repeat = f"{name} {k}/{len(rounds)}"
                    targets.append((gid, round_members))
            if targets:
                self._move_members(group, targets)

    def _line_keys(self) -> list[tuple[str, int | str] | None]:
        """Per node, what a run of equations that reads as one box shares: their user line;
        for equations JAX made with no user line (pmap's per-array ``squeeze`` of the mapped
        axis), their primitive. None: no equation, or one inside a library call."""
        library = self.library_nodes
        return [None if node.kind != "eqn" or node.id in library
                else (node.source.file, node.source.line) if node.source else ("", node.primitive or "")
                for node in self.graph.nodes]

    def _members_in_order(self, group: Any) -> list[int]:
        """The group's equations in program order, an equation group standing as its own
        equation's node."""
        g = self.graph
        owned = [g.groups[c].holder for c in group.groups if g.groups[c].holder is not None]
        return sorted([n for n in group.nodes if g.nodes[n].kind == "eqn"] + owned)

    def _loop_rounds(self, run: list[int]) -> list[list[int]]:
        """Split a run of one line's equations where the line starts over: an operation
        (a column of the line) seen earlier in the round comes again. At least three rounds
        of at least ``LOOP_ROUND_MIN`` equations each (a two-operation lambda per leaf stays
        one run), doing the same operations."""
        if len(run) < 3 * LOOP_ROUND_MIN:
            return [run]  # too short for three rounds
        rounds: list[list[int]] = [[]]
        seen: set[Any] = set()
        last = None
        for nid in run:
            site = self.sites.get(nid)
            if site is not None and site != last and site in seen:
                rounds.append([])
                seen = set()
            rounds[-1].append(nid)
            seen.add(site)
            last = site
        if not 3 <= len(rounds) <= LOOP_ROUNDS_MAX or min(map(len, rounds)) < LOOP_ROUND_MIN:
            return [run]
        # Rounds that compute the same (one box folds them: ``line 5 ×5``) stay apart, so
        # each round is wired to the next; rounds that differ (a comprehension over
        # layers of different sizes) would be the line cut into pieces.
        g = self.graph
        shapes = {tuple((g.nodes[n].primitive, tuple(g.nodes[n].outputs)) for n in r) for r in rounds}
        if len(shapes) > 1:
            return [run]
        return rounds

    def _move_members(self, group: Any, targets: list[tuple[int, list[int]]]) -> None:
        """Move equations (or the equation groups whose own node they are) of ``group``
        into the new groups of ``targets``, in one pass over ``group``."""
        g = self.graph
        owner = {n: gid for gid, members in targets for n in members}
        own_groups = {c: owner.get(g.groups[c].holder) for c in group.groups if g.groups[c].holder is not None}
        for gid, members in targets:
            g.groups[gid].nodes = [n for n in members if g.nodes[n].group == group.id]
        for c, gid in own_groups.items():
            if gid is not None:
                g.groups[gid].groups.append(c)
                g.groups[c].parent = gid
        group.nodes = [n for n in group.nodes if n not in owner]
        group.groups = [c for c in group.groups if own_groups.get(c) is None]
        for gid, _ in targets:
            for nid in g.groups[gid].nodes:
                g.nodes[nid].group = gid

    def _add_eqns(self, eqns: Sequence[Any], base: int, env: dict[Any, int],
                  base_path: list[tuple[str, ...]]) -> None:
        open_groups: list[tuple[tuple[str, ...], int]] = []
        last_path: Sequence[tuple[str, ...]] | None = None
        group, full_path, in_library, outside = base, base_path, False, True
        backward = _in_backward(base_path)
        last_site: tuple[int, int] | None = None
        tracebacks = [internals.traceback_of(eqn) for eqn in eqns]
        infos = [self._traceback_info(eqn, traceback) for eqn, traceback in zip(eqns, tracebacks)]
        paths = [self._eqn_path(eqn, library, outside, enclosing)
                 for eqn, (_, _, library, outside, enclosing, _) in zip(eqns, infos)]
        if self._unsited_paths and not self._unsited_paths.isdisjoint(map(id, paths)):
            paths = _sites_filled(paths)
        copies = self._replayed_copies(tracebacks, paths)
        for i, eqn in enumerate(eqns):
            frame, source, library = infos[i][0], infos[i][1], infos[i][2]
            path: Sequence[tuple[str, ...]] = paths[i]
            replayed = copies[i] if copies is not None else None
            if replayed is not None:  # a later copy of a replayed call: a key of its own
                depth, copy = replayed
                path = [*path[:depth], (*path[depth], str(copy)), *path[depth + 1:]]
            site = infos[i][5]
            if site != last_site and site is not None and not _of_literals(eqn):
                last_site = site
                self._note_pass(site, backward)
            if path is not last_path:  # consecutive equations of one scope share all this
                last_path = path
                group, full_path = self._open_path(path, base, base_path, open_groups)
                in_library = bool(full_path) and full_path[-1][0] == "library"
                outside = all(key[0] != "phase" for key in full_path)  # where an update may be
                was, backward = backward, _in_backward(full_path)
                if backward != was:
                    last_site = None
            first_node = len(self.graph.nodes)
            self._add_eqn(eqn, group, env, full_path, source)
            if open_groups and open_groups[-1][0][0] == "library":
                self._name_call_sites(open_groups, first_node)
            if in_library or library or (source is None and self._under_library(group)):
                # Its user line is the library call's: the call's group says it already
                # (a framework module's, its scope: ``_past_module_calls``; an equation
                # of a body the library traced has no user line at all).
                self.library_nodes.add(first_node)
            self.sites[first_node] = frame
            if outside:
                self.outside_phases[first_node] = eqn

    def _walk_sub(self, sub: Any, holder: int, sub_env: dict[Any, int], base_path: list[tuple[str, ...]]) -> None:
        """``_add_eqns`` over a sub-jaxpr's equations in group ``holder``. JAX traces a jitted
        or checkpointed function once and gives every later call the same sub-jaxpr: a walk
        over one walked before, in a like place, is made again from what the first walk
        made (``_Walk``), ids offset, so that the graph model costs per distinct sub-jaxpr,
        as ``make_jaxpr`` does, and not per call."""
        inputs = [*sub.constvars, *sub.invars]
        look = self._holder_look(holder)
        env_in = [sub_env[v] for v in inputs]
        unnamed = [n in self._unnamed_consts for n in env_in]
        for walk in self._walks.get(id(sub), ()) if REPLAY_WALKS else ():
            if walk.sub is sub and walk.look == look and walk.unnamed == unnamed and walk.base_path == base_path:
                self._replay(walk, holder, inputs, env_in, sub_env, sub.outvars)
                return
        g = self.graph
        starts = {name: len(getattr(self, name)) for name in _WALKED_TABLES}
        sizes = (len(g.nodes), len(g.groups), len(g.edges), len(self.call_groups),
                 len(g.groups[holder].groups), len(g.groups[holder].nodes))
        self._add_eqns(sub.eqns, holder, sub_env, base_path=base_path)
        walk = self._walk_made(sub, base_path, look, holder, sizes, starts, inputs, env_in, unnamed, sub_env)
        if walk is not None:
            self._walks.setdefault(id(sub), []).append(walk)

    def _holder_look(self, holder: int) -> tuple[str, str, bool, bool]:
        """What a walk reads of the group it is made in (``_open_group`` merges a call into a
        group of the same name, and gives it a source where it has none)."""
        group = self.graph.groups[holder]
        return group.name, group.kind, group.source is not None, self._under_library(holder)

    def _walk_made(self, sub: Any, base_path: list[tuple[str, ...]], look: tuple[str, str, bool, bool],
                   holder: int, sizes: tuple[int, ...], starts: dict[str, int], inputs: list[Any],
                   env_in: list[int], unnamed: list[bool], sub_env: dict[Any, int]) -> _Walk | None:
        """The record of the walk just made, or None where it reached outside in a way a
        replay would not make again (everything made since ``sizes`` was made by it)."""
        g = self.graph
        n0, g0, e0, c0, hg0, hn0 = sizes
        names = [self._var_names.get(v) for v in inputs]
        inputs_by_value: dict[tuple[int, str | None], list[int]] = {}  # (node, name) → the inputs it is
        for k, value in enumerate(zip(env_in, names)):
            inputs_by_value.setdefault(value, []).append(k)
        edge_inputs: dict[int, int] = {}
        for i in range(e0, len(g.edges)):
            e = g.edges[i]
            if e.src < n0:  # from outside the walk: through one input
                through = inputs_by_value.get((e.src, e.var), ())
                if len(through) != 1:
                    return None
                edge_inputs[i - e0] = through[0]
        outputs = []
        for var in sub.outvars:
            node = None if isinstance(var, jcore.Literal) else sub_env.get(var)
            if node is None or node < n0 and var not in inputs:
                return None
            outputs.append(node - n0 if node >= n0 else ~inputs.index(var))
        made = lambda gid: gid is not None and (gid >= g0 or gid == holder)  # noqa: E731
        calls = [(number, group.id) for number, group in self.call_groups[c0:]]
        tables = {name: _added_since(getattr(self, name), start) for name, start in starts.items()}
        if not (all(made(g.nodes[n].group) for n in range(n0, len(g.nodes)))
                and all(made(g.groups[k].parent) for k in range(g0, len(g.groups)))
                and all(made(gid) and g.groups[gid] is group for (_, gid), (_, group)
                        in zip(calls, self.call_groups[c0:]))
                and all(made(key[0]) for name in ("_keyed", "_last_at_site") for key in tables[name])
                and all(made(self._keyed[key]) for key in tables["_keyed"])):
            return None
        named = [was and n not in self._unnamed_consts for n, was in zip(env_in, unnamed)]
        return _Walk(sub, list(base_path), look, holder, range(n0, len(g.nodes)), range(g0, len(g.groups)),
                     range(e0, len(g.edges)), edge_inputs, outputs, env_in, unnamed, named, tables, calls,
                     g.groups[holder].groups[hg0:], g.groups[holder].nodes[hn0:], g.groups[holder].source)

    def _replay(self, walk: _Walk, holder: int, inputs: list[Any], env_in: list[int],
                sub_env: dict[Any, int], outvars: Sequence[Any]) -> None:
        """Make ``walk`` again in group ``holder``, the sub-jaxpr's ``inputs`` standing for
        the nodes ``env_in``: what walking it again would make."""
        g = self.graph
        n0 = len(g.nodes)
        dn, dg = n0 - walk.nodes.start, len(g.groups) - walk.groups.start
        old_holder = walk.holder

        def group_of(gid: int | None) -> int:  # a group the walk made, or its holder (None: none)
            return holder if gid is None or gid == old_holder else gid + dg

        for k in walk.groups:
            old = g.groups[k]
            parent = group_of(old.parent)
            g.groups.append(old.copied(k + dg, parent, g.groups[parent].depth + 1, dg, dn))
        nodes, edges = g.nodes, g.edges
        # a walk's nodes lie in a few groups: each moved once, not once per node
        moved = {gid: group_of(gid) for gid in {nodes[n].group for n in walk.nodes}}
        nodes.extend([nodes[n].copied(n + dn, moved[nodes[n].group]) for n in walk.nodes])
        e0, through = walk.edges.start, walk.edge_inputs
        for i in walk.edges:
            e = edges[i]
            k = through.get(i - e0)
            if k is None:
                edges.append(Edge(e.src + dn, e.dst + dn, e.aval, e.var))
            else:  # through an input: from what stands for it now, under its name now
                edges.append(Edge(env_in[k], e.dst + dn, e.aval, self._var_name(inputs[k])))
        new_holder = g.groups[holder]
        new_holder.groups += [c + dg for c in walk.holder_groups]
        new_holder.nodes += [n + dn for n in walk.holder_nodes]
        if new_holder.source is None:
            new_holder.source = walk.holder_source
        self._replay_tables(walk, group_of, dn)
        for number, gid in walk.calls:
            self.call_groups.append((number, g.groups[group_of(gid)]))
        for new, old, named in zip(env_in, walk.env_in, walk.named):
            if named:  # a constant named after its first use: that use is the same
                g.nodes[new].label = g.nodes[old].label
                self._unnamed_consts.discard(new)
        self._unnamed_consts.update(n + dn for n in walk.nodes if n in self._unnamed_consts)
        for var, out in zip(outvars, walk.outputs):
            if not isinstance(var, jcore.Literal):
                sub_env[var] = n0 + out if out >= 0 else env_in[~out]
        self.library_nodes.update(n + dn for n in walk.nodes if n in self.library_nodes)

    def _replay_tables(self, walk: _Walk, group_of: Callable[[int], int], dn: int) -> None:
        """The entries ``walk`` added to the builder's tables, keys moved."""
        moved: dict[str, Callable[[Any], Any]] = {
            "n": lambda node: node + dn,
            "g": group_of,
            "p": lambda pair: (group_of(pair[0]), *pair[1:]),
            "t": lambda through: [(v, list(inner)) for v, inner in through],
            "-": lambda value: value,
        }
        for name, (key_kind, value_kind) in _WALKED_TABLES.items():
            table = getattr(self, name)
            if (key_kind, value_kind) == ("n", "-"):  # most entries (a node's site): no call per entry
                table.update({key + dn: table[key] for key in walk.tables[name]})
                continue
            move_key, move_value = moved[key_kind], moved[value_kind]
            for key in walk.tables[name]:
                table[move_key(key)] = move_value(table[key])

    def _under_library(self, group: int) -> bool:
        """Whether ``group`` lies inside a library call's group."""
        found = self._library_groups.get(group)
        if found is None:
            found = self._library_groups[group] = any(
                self.graph.groups[g].kind == "library" for g in self.graph.ancestors(group))
        return found

    def _open_path(self, path: Sequence[tuple[str, ...]], base: int, base_path: list[tuple[str, ...]],
                   open_groups: list[tuple[tuple[str, ...], int]]) -> tuple[int, list[tuple[str, ...]]]:
        """Open the groups of an equation's ``path`` below ``base`` (``open_groups``: those
        open now, updated); its group and its full path."""
        # A sub-jaxpr's equations carry the path of the equation holding it (or of
        # the part of it its own caller shares, a library calling back user code).
        shared = 0
        while shared < min(len(path), len(base_path)) and _same_key(path[shared], base_path[shared]):
            shared += 1
        path = path[shared:]
        common = 0
        while (common < len(open_groups) and common < len(path)
               and open_groups[common][0] == self._one_call_key(path, common)):
            common += 1
        del open_groups[common:]
        for at in range(common, len(path)):
            parent = open_groups[-1][1] if open_groups else base
            key = self._one_call_key(path, at)
            open_groups.append((key, self._group_for(key, parent)))
        group = open_groups[-1][1] if open_groups else base
        return group, base_path[:shared] + list(path)

    def _replayed_copies(self, tracebacks: list[Any], paths: list[list[tuple[str, str]]],
                         ) -> list[tuple[int, int] | None] | None:
        """Per equation, (depth in its path, copy number) where it belongs to a later copy
        of a call whose trace JAX cached and replayed: ``jax.checkpoint(block)`` called in
        a loop is traced once, and under ``grad`` its forward equations come back once per
        call, all under that one activation. They are told apart by their tracebacks: a
        replay reuses the traced equations' traceback objects, a Python loop makes new
        ones. ``tracebacks``: the equations' (``internals.traceback_of``). None where
        nothing was replayed (the common case, found in one pass)."""
        if not _comes_back(tracebacks):
            return None
        by_call: dict[tuple[tuple[str, str], ...], list[int]] = {}
        for i, path in enumerate(paths):
            for depth, key in enumerate(path):
                if key[0] == "scope" and self._traced_by_jax(key[1]):
                    by_call.setdefault(tuple(path[:depth + 1]), []).append(i)
        starts = {call: found for call, indices in by_call.items()
                  if (found := replay_starts([tracebacks[i] for i in indices])) is not None}
        copies: list[tuple[int, int] | None] = [None] * len(tracebacks)
        for call in _replay_roots(starts):
            indices = by_call[call]
            for position, i in enumerate(indices):
                copy = bisect.bisect_right(starts[call], position) - 1
                if copy > 0:
                    copies[i] = (len(call) - 1, copy)
        return copies

    def _traced_by_jax(self, scope: str) -> bool:
        call = self._call_of(scope)
        return call is not None and call.traced_by_jax

    def _eqn_path(self, eqn: Any, library: list[tuple[str, str]], outside: int, enclosing: Enclosing | None,
                  ) -> list[tuple[str, str]]:
        """The equation's group keys: its name stack's, then its library calls'
        (``library``, as ``_traceback_info`` reads them; the first ``outside`` of them
        hold the pass the library differentiates in), all inside the library call
        that runs the user's code as a callback (``enclosing``), if any. A
        transformation the name stack ends with (``vmap``), under library calls, is
        taken as applied by the library to its innermost call (mctx's search vmaps its
        ``update``): the name stack does not say where among them it was applied.
        Read once per name stack and library path (callers must not mutate the list).
        Keyed by identity (the stack kept beside its path; a library path is
        ``_traceback_info``'s, kept as long as this builder): a key of nested tuples
        hashes them whole, every time."""
        stack = internals.name_stack(eqn)
        found = self._eqn_paths_seen.get((id(stack), id(library)))
        if found is None or found[0] is not stack:
            key = (stack, enclosing, outside, *library)
            path = self._eqn_paths.get(key)
            if path is None:
                path = self._of_one_differentiation(self._transformations_named(_scope_path(eqn)))
                path = self._join_paths(path, library, outside)
                path = self._eqn_paths[key] = path if enclosing is None else self._inside_call(path, *enclosing)
                if any(_differentiates(key) and "@" not in key[1] for key in path):
                    self._unsited_paths.add(id(path))
            found = self._eqn_paths_seen[(id(stack), id(library))] = (stack, path)
        return found[1]

    def _transformations_named(self, path: list[tuple[str, str]]) -> list[tuple[str, str]]:
        """``path`` with the transformations JAX composed for what the user asked for,
        read from the call they transformed (each run of transformations is followed by
        a call): a Jacobian (``jax.hessian(loss)`` is ``vmap(jvp)(jvp)`` for the forward
        pass it differentiates, ``vmap(jvp)(vmap)(transpose)(jvp)`` for its backward, and
        more) as one group named after it, and a batched gradient
        (``jax.vmap(jax.grad(loss))``: ``vmap(jvp)``, ``vmap(transpose)(jvp)``) as a
        ``vmap`` group holding its passes; each keyed by the call, so one group."""
        out: list[tuple[str, str]] = []
        at = 0
        while at < len(path):
            end = at
            while end < len(path) and path[end][0] in ("transform", "phase"):
                end += 1
            call = self._call_of(path[end][1]) if at < end < len(path) \
                and call_scopes.activation_number(path[end][1]) is not None else None
            out.extend(_as_called(path[at:end], call, path[end][1]) if call is not None else path[at:end])
            if end < len(path):
                out.append(path[end])
            at = end + 1
        return out

    def _of_one_differentiation(self, path: list[tuple[str, str]]) -> list[tuple[str, str]]:
        """``path`` with its outermost pass keyed, after ``@``, by the differentiation it
        belongs to: two gradients taken in one function (a GAN's) are two sets of
        passes. Told by the call JAX differentiated, the first call inside the pass
        (``jv12:d_loss_fn``); where the user's code made that call, the function JAX
        differentiated went unrecorded (the traced function itself, a lambda): told by
        the function that made it, so all its calls (a siamese loss's two calls of one
        model, ``lambda p: loss(inner_update(p))``'s) are in one pass. Where no call
        follows the pass (a backward pass's seed), the key says nothing more
        (``_sites_filled``)."""
        at = next((k for k, (kind, _) in enumerate(path) if kind == "phase"), None)
        if at is None:
            return path
        scope = next((name for kind, name in path[at + 1:] if call_scopes.activation_number(name) is not None), None)
        if scope is None:
            return path
        call = self._call_of(scope)
        site = scope if call is None or call.differentiated or call.caller is None else "{}:{}".format(*call.caller)
        return [*path[:at], ("phase", f"{path[at][1]}@{site}"), *path[at + 1:]]

    def _traceback_info(self, eqn: Any, traceback: Any,
                        ) -> tuple[Any, SourceLoc | None, list[tuple[str, str]], int, Enclosing | None,
                                   tuple[int, int] | None]:
        """(the innermost user frame, its source line, the library path, how many of its
        calls hold the pass the library differentiates in, the library call it is a
        callback of, the frame's site: its code's id and its offset) of the
        equation's ``traceback``: read once per distinct traceback (a layer called in a
        loop records the same ones), each equation paying one lookup."""
        info = self._by_traceback.get(traceback)
        if info is None:
            codes, lastis = internals.code_stack_columns(eqn)
            user, library, outside = self._library_path(codes, lastis)
            frame = internals.frame_at(codes[user], lastis[user]) if user < len(codes) else None
            # what lies outside the user frame: shared by the tracebacks of one user line
            stack = (tuple(map(id, codes[user:])), tuple(lastis[user:]))
            enclosing = self._enclosing_by_stack.get(stack, _MISSING)
            if enclosing is _MISSING:
                enclosing = self._enclosing_by_stack[stack] = self._enclosing_call(codes, lastis, user)
                if self.frame_codes is not None:  # (by identity: a code object hashes its bytecode)
                    self.frame_codes.update(zip(stack[0], codes[user:]))
            site = (id(codes[user]), lastis[user]) if user < len(codes) else None
            info = self._by_traceback[traceback] = (frame, self._source_of(frame), library, outside, enclosing, site)
        return info

    @staticmethod
    def _join_paths(scope: list[tuple[str, str]], library: list[tuple[str, str]],
                    outside: int) -> list[tuple[str, str]]:
        """An equation's name-stack keys and library calls as one path. A pass the name
        stack ends with, where the library differentiates (``outside`` of its calls were
        made outside the pass), is inside those calls; a transformation the name stack
        ends with, inside all but the innermost call (see ``_eqn_path``). A framework's
        module calls whose scopes the name stack holds already are those scopes
        (``_past_module_calls``)."""
        library, outside = _past_module_calls(scope, library, outside)
        if not library:
            return scope
        run = _trailing_transforms(scope, ("transform", "phase"))
        around = _around_pass(scope[:run], scope[run:], [], library, outside)
        if around is not None:
            return around
        split = _trailing_transforms(scope, ("transform",))
        if split == len(scope):
            return scope + library
        return scope[:split] + library[:-1] + scope[split:] + library[-1:]

    def _inside_call(self, path: list[tuple[str, str]], function: str,
                     library: tuple[tuple[str, str], ...], outside: int) -> list[tuple[str, str]]:
        """``path`` with ``library``'s calls opened around the call scope of ``function``
        (the callback) and the transformations the library applied to it (a solver's
        ``jvp``), the pass it differentiates in inside the ``outside`` calls that hold
        it; unchanged where the callback has no call scope of its own."""
        callback = len(path) - 1
        while callback >= 0 and not (path[callback][0] == "scope" and (call := self._call_of(path[callback][1]))
                                     is not None and call.function == function):
            callback -= 1
        if callback < 0:
            return path
        at = callback
        while at and path[at - 1][0] in ("transform", "phase"):
            at -= 1
        around = _around_pass(path[:at], path[at:callback], path[callback:], library, outside)
        return around if around is not None else [*path[:at], *library, *path[at:]]

    def _api_called(self, eqn: Any) -> str | None:
        """The function the user's innermost line called to make ``eqn``, as written
        there, without ``jax.``: ``lax.map`` for ``jax.lax.map(lambda x: ..., xs)``."""
        for code, lasti in internals.code_stack(eqn):  # innermost first
            if self._is_user_code(code):
                text = call_scopes.called_function_text(code, lasti)
                return text.removeprefix("jax.") if text else None
        return None

    def _library_path(self, codes: Sequence[Any], lastis: Sequence[int],
                      ) -> tuple[int, list[tuple[str, str]], int]:
        """(the index of the innermost user frame in an equation's ``code_stack``, given as
        its columns, or its length; the library calls below that frame, outermost first,
        as group keys (``("library", "HMC.sample")``); how many of those the library made
        outside a pass it differentiates in): read from the traceback JAX keeps, so no
        library function is touched, in one walk from the innermost frame. At most
        ``LIBRARY_DEPTH`` levels; a name repeated by recursion counts once."""
        calls = self._library_calls(codes, lastis, 0)
        return calls.user, [("library", n) for n in reversed(calls.names[-LIBRARY_DEPTH:])], calls.outside_pass()

    def _library_calls(self, codes: Sequence[Any], lastis: Sequence[int], start: int) -> LibraryCalls:
        """The library calls from frame ``start`` outward to the next user frame (see
        ``LibraryCalls``)."""
        names: list[str] = []
        outermost = None  # the code of the library function the user called
        in_pass = None  # how many calls were passed inside JAX's differentiation API
        infos, passing, in_library = self._code_infos, self._passing_codes, True
        for i in range(start, len(codes)):  # innermost first
            code = codes[i]
            if id(code) in passing:
                if id(code) in _DIFFERENTIATING_CODES:
                    in_pass = len(names)
                continue
            known = infos.get(id(code))
            _, user, ours, name = known if known is not None and known[0] is code else self._code_info(code)
            if user:
                made = call_scopes.factory_made(codes[i - 1]) if in_library and i > start else None
                if made is not None and (not names or names[-1].partition("@")[0] != made):
                    names.append(f"{made}@{id(code)}:{lastis[i]}")  # a closure the user called
                    outermost = codes[i - 1]
                if outermost is not None and in_library:
                    name = self.called.name(code, lastis[i], outermost)
                    if name is not None:
                        names[-1] = name + names[-1][names[-1].index("@"):]
                        if self.called.held(code, lastis[i], outermost):
                            self._layer_calls.add(names[-1])
                return LibraryCalls(i, names, not in_library, outermost, in_pass)
            if ours:
                in_library = False  # jaxviz's tracing the user's code (JAX < 0.9 keeps the whole stack)
            elif name is None:
                passing.add(id(code))
                if internals.is_differentiation_entry(code):
                    _DIFFERENTIATING_CODES.add(id(code))
                    in_pass = len(names)
            elif in_library:
                # the calling frame's position: two call sites of one function are two calls
                caller = (codes[i + 1], lastis[i + 1]) if i + 1 < len(codes) else (None, 0)
                held = self.called.attribute_called(*caller, code) if caller[0] is not None else None
                call = f"{held or name}@{id(caller[0])}:{caller[1]}"
                if held is not None:  # a library's layer that another calls: ``self.ii(x)``
                    self._layer_calls.add(call)
                if names and names[-1].partition("@")[0] == name:
                    # a call of itself (optax.adam's chain inside the user's chain) is one
                    # call, the outermost: where it was made is where every equation of it was
                    names[-1] = call
                else:
                    names.append(call)
                outermost = code
        return LibraryCalls(len(codes), names, not in_library, outermost, in_pass)

    def _enclosing_call(self, codes: Sequence[Any], lastis: Sequence[int], user: int) -> Enclosing | None:
        """Where the user's code at frame ``user`` runs as a callback of a library call
        (the loss a solver differentiates, the log density a sampler evaluates): (the
        user function the library called, that call's library path, outermost first,
        how many of those calls hold the pass it is differentiated in). Where no user
        frame lies beyond the library's (a loop body JAX traced apart: NUTS's leapfrog
        evaluating the model), the calls up to the traceback's end enclose it.
        None where no library call is outside the user's frames; where the library
        called a method (a framework running the user's own model: Flax's
        ``Module.apply`` calling ``__call__``); and where the user called an object the
        library made around the function (``nnx.value_and_grad(loss_fn)``'s ``GradFn``):
        a transformation, not a call around its function."""
        entry = user
        while entry < len(codes):
            calls = self._library_calls(codes, lastis, entry + 1)
            if calls.crossed_jaxviz or calls.user == len(codes) and not calls.names:
                return None
            if calls.names and (call_scopes.is_method(codes[entry]) or calls.called.co_name == "__call__"):
                return None
            if calls.names:
                keys = tuple(("library", n) for n in reversed(calls.names[-LIBRARY_DEPTH:]))
                return call_scopes.call_name(codes[entry]), keys, calls.outside_pass()
            entry = calls.user  # user code calling user code: its caller may be the callback
        return None

    def _name_call_sites(self, open_groups: list[tuple[tuple[str, ...], int]], node: int) -> None:
        """A library call's group is located at the user line that made it (its first
        equation's); a layer named after the attribute holding it is not: like a module's
        scope, it is a part of the model, not a line."""
        source = self.graph.nodes[node].source
        for key, gid in reversed(open_groups):
            if key[0] != "library":
                break
            if key[1] in self._layer_calls:
                continue
            group = self.graph.groups[gid]
            if group.source is not None:
                break
            group.source = source

    def _one_call_key(self, path: Sequence[tuple[str, ...]], at: int) -> tuple[str, ...]:
        """``path[at]``, or for a module's scope around a call of its ``__call__`` (a Flax
        module's, ``Discriminator / jv3:Discriminator``), that scope keyed by the call:
        each call is one group however JAX interrupts it, and two calls are two groups."""
        key = path[at]
        if at + 1 < len(path) and (self._calls_itself(key, path[at + 1]) or self._transforms(key, path[at + 1])):
            return (*key, path[at + 1][1])
        return key

    def _transforms(self, transform: tuple[str, ...], following: tuple[str, ...]) -> bool:
        """Whether ``transform`` is what JAX called the call ``following`` for (the
        ``vmap`` of ``jax.vmap(model)(x)``, keyed by that call as a module's scope is:
        one group however JAX interrupts it, a loop's hoisted equations say)."""
        if transform[0] != "transform" or following[0] != "scope":
            return False
        call = self._call_of(following[1]) if call_scopes.activation_number(following[1]) is not None else None
        return call is not None and transform[1] in call.transformations

    def _group_for(self, key: tuple[str, ...], parent: int) -> int:
        """The group for a name-stack key under ``parent``. A phase or a call is one group
        however its equations interleave with others (JAX emits the backward pass of one
        layer in pieces), so it is reused; so is a module's scope keyed by its call
        (``_one_call_key``). Other scopes open anew after an interruption."""
        # A library call is one group too: its key holds its call site; so is a
        # Jacobian's transformation: its key holds the call it differentiates.
        kind, name, *call = key
        reusable = kind in ("phase", "library") or call_scopes.activation_number(name) is not None \
            or kind == "transform" and "@" in name or kind in ("scope", "transform") and bool(call)
        if not reusable:
            return self._open_group((key[0], key[1]), parent)
        gid = self._keyed.get((parent, key))
        called_since = key[0] == "library" and self._called_since(parent, key)
        if gid is None or called_since:
            # (kind, name, copy) for a replayed call's later copy
            gid = self._keyed[(parent, key)] = self._open_group((key[0], key[1]), parent)
        return gid

    def _called_since(self, parent: int, key: tuple[str, ...]) -> bool:
        """Whether ``key``'s call site makes a new call since ``key``'s group under
        ``parent`` was last entered: another library call was made there (a loop over
        layers, ``stax.serial``'s, calls each from one site, so ``Dense`` after
        ``elementwise`` is a new call), or the code calling there has since begun another
        pass of a loop (``for layer in self.layers: x = relu(layer(x))``: ``_note_pass``)."""
        site = key[1].partition("@")[2]
        made = (key, self._passes.get(int(site.partition(":")[0]), 0))
        last, self._last_at_site[(parent, site)] = self._last_at_site.get((parent, site)), made
        return last is not None and last != made

    def _note_pass(self, site: tuple[int, int], backward: bool) -> None:
        """Count the passes of the user's code at ``site`` (``id(code)``, the offset of the
        call an equation came from): equations come in the order they were traced, so an
        equation from an offset before the last one's is the code's next pass of a loop;
        in a ``backward`` pass, which comes in reverse, after it. Not told an equation of
        literals alone (``_of_literals``)."""
        code, offset = site
        last = self._last_offsets.get((code, backward))
        if last is not None and (offset > last if backward else offset < last):
            self._passes[code] = self._passes.get(code, 0) + 1
        self._last_offsets[(code, backward)] = offset

    def _call_of(self, scope: str) -> CallInfo | None:
        """The call a call scope (``jv3:CNN``) records: this trace's, or one remembered."""
        return self.calls.get(scope) or call_scopes.known_call(scope)

    def _calls_itself(self, scope: tuple[str, ...], following: tuple[str, ...]) -> bool:
        """Whether ``following`` is a call of the function ``scope`` is named after (a
        Flax module's scope, then its ``__call__``), which ``_open_group`` makes one."""
        if scope[0] != "scope" or following[0] != "scope" or call_scopes.activation_number(following[1]) is None:
            return False
        call = self._call_of(following[1])
        return call is not None and call.function == scope[1]

    def _open_group(self, key: tuple[str, str], parent: int) -> int:
        kind, name = key
        if kind in ("transform", "phase"):
            gid = self.graph.add_group(name.partition("@")[0], kind, parent)
            if kind == "phase" and (call := self._call_of(name.partition("@")[2])) is not None and call.differentiated:
                self.differentiated[gid] = call.function
            return gid
        if kind == "library":
            name = name.partition("@")[0]
            outer = self.graph.groups[parent]
            if outer.kind == "scope" and name_stem(outer.name) == name.rpartition(".")[2]:
                return parent  # a Flax module's own scope (``Dense_0``) around its call
            if outer.helper and outer.name == name.rpartition(".")[2]:
                return parent  # a jitted ``jax.nn.standardize``: its helper's group is the call
            return self.graph.add_group(name, "library", parent)
        number = call_scopes.activation_number(name)
        if number is None:
            return self.graph.add_group(name, "scope", parent)
        call = self._call_of(name)
        outer = self.graph.groups[parent]
        if call is not None and outer.kind in ("scope", "eqn") and outer.name == call.function:
            # A Flax module's own scope around its __call__, a custom_vjp's equation around
            # the function it wraps: one group, not "MLP > MLP".
            if outer.source is None:
                outer.source = call.call_site
            self.call_groups.append((number, outer))
            return parent
        if call is not None:
            gid = self.graph.add_group(call.function, "call", parent, source=call.call_site)
        else:  # a scope from a trace too long ago to remember: its name is still right
            gid = self.graph.add_group(name.partition(":")[2], "call", parent)
        self.activation[gid] = number
        self.call_groups.append((number, self.graph.groups[gid]))
        return gid

    def _source_of(self, f: Any) -> SourceLoc | None:
        if f is None:
            return None
        key = (f.file, f.line, f.function)
        loc = self._sources.get(key)
        if loc is None:
            loc = self._sources[key] = make_source(f.file, f.line, f.function, self.cell_file)
        return loc

    def _var_name(self, var: Any) -> str:
        """A short stable name per jaxpr variable (``str(var)`` is slow and not short)."""
        name = self._var_names.get(var)
        if name is None:
            name = self._var_names[var] = f"v{len(self._var_names)}"
        return name

    def _is_user_code(self, code: Any) -> bool:
        return self._code_info(code)[1]

    def _code_info(self, code: Any) -> tuple[Any, bool, bool, str | None]:
        """(code, whether it is the user's, whether it is jaxviz's, the library call it
        stands for or None): read once per code object of the tracebacks. Keyed by
        identity (the code kept beside it): a code object hashes its whole bytecode and
        constants, every time."""
        known = self._code_infos.get(id(code))
        if known is None or known[0] is not code:
            file = code.co_filename
            user = is_user_file(file)
            known = self._code_infos[id(code)] = (
                code, user, file.startswith(PACKAGE_DIR),
                None if user else call_scopes.library_call_name(code))
        return known

    def _add_eqn(self, eqn: Any, group: int, env: dict[Any, int], path: list[tuple[str, ...]],
                 source: SourceLoc | None) -> None:
        g = self.graph
        operands = eqn.invars
        literals = [self._literal_text(v.val) for v in operands if isinstance(v, _LITERAL)]
        if literals:
            operands = [v for v in operands if not isinstance(v, _LITERAL)]
        label, params, subs = self._statics(eqn)
        if subs:  # a jnp helper (``where``) is the user's call, not JAX's ``jit: _where``
            helper = library_helper_name(eqn)
            group = g.add_group(label, "eqn" if helper is None else "call", group, source=source)
            g.groups[group].holder = len(g.nodes)  # the equation's node, added next
            g.groups[group].helper = helper is not None
            names = [internals.jaxpr_function_name(sub) for _, sub, _ in subs]
            self.functions_run[group] = list(dict.fromkeys(n for n in names if n))
            traced = [internals.traced_function(sub) for _, sub, _ in subs]
            self.plumbing_run.update(t[0] for t in traced if t is not None
                                     and not is_user_file(t[1]) and not internals.is_jax_file(t[1]))
            private = [t[0] for t in traced if t is not None and t[0].startswith("_") and not is_user_file(t[1])]
            if eqn.primitive.name in CALLING_PRIMITIVES and private and len(private) == len(traced):
                self.private_calls[group] = private[0]
            if not self.functions_run[group]:  # lambdas: named after the call that ran them
                self.apis_called[group] = self._api_called(eqn)
        node = len(g.nodes)
        g.nodes.append(Node(node, "eqn", label, group, eqn.primitive.name, None, params,
                            [aval_of_var(v) for v in eqn.outvars], literals, source))
        g.groups[group].nodes.append(node)
        if self._unnamed_consts:
            for var in operands:
                if env.get(var) in self._unnamed_consts:
                    self._name_const(env[var], eqn, source)
        bound: Container[Any] = self._walk_subs(eqn, subs, group, env, node, path) if subs else ()
        add_edge, var_names = g.edges.append, self._var_names
        for var in operands:  # the rest (e.g. a cond's predicate) feed the node itself
            src = env.get(var)
            if src is not None and src != node and var not in bound:
                name = var_names.get(var)
                add_edge(Edge(src, node, aval_of_var(var), name if name is not None else self._var_name(var)))
        for var in eqn.outvars:
            if not isinstance(var, _DROP_VAR):
                env[var] = node

    def _walk_subs(self, eqn: Any, subs: list[tuple[str, Any, Sequence[Any]]], group: int,
                   env: dict[Any, int], node: int, path: list[tuple[str, ...]]) -> set[Any]:
        """Walk the sub-jaxprs of the equation at ``node`` in ``group`` (one group of its own
        per sub-jaxpr where it holds several); the operands wired straight into their inputs."""
        g = self.graph
        bound: set[Any] = set()
        for label, sub, consts in subs:
            sub_group = group if len(subs) == 1 else g.add_group(label, "jaxpr", group)
            sub_env = self._sub_env(eqn, sub, consts, sub_group, env, node, bound)
            self._walk_sub(sub, sub_group, sub_env, path)
            for var in sub.outvars:  # inner results flow back into the equation's node
                if not isinstance(var, jcore.Literal) and var in sub_env:
                    g.add_edge(sub_env[var], node, aval_of_var(var), self._var_name(var))
            if len(sub.outvars) == len(eqn.outvars):  # the outer results, position by position
                through = self._passes_through.setdefault(node, [(v, []) for v in eqn.outvars])
                for (_, inner), var in zip(through, sub.outvars):
                    inner.append(var)
        return bound

    def _values_through(self) -> Mapping[int, Mapping[str, frozenset[str]]]:
        """Per equation node that sub-jaxprs' results flow back into: each outer result's
        edge name → the edge names of the inner results it is (``phases`` follows a value
        through the node, not every value into it). Written per node when first read:
        phases reads those of the update only."""
        return _ValuesThrough(self._passes_through, self._var_names)

    def _literal_text(self, value: Any) -> str:
        """``short(value, 20)``, once per distinct literal (a 0-d array: by its dtype and
        bytes, which say all its text does)."""
        if not (isinstance(value, np.ndarray) and value.ndim == 0):
            return short(value, 20)
        key = (type(value), value.dtype, value.tobytes())
        text = self._literal_texts.get(key)
        if text is None:
            text = self._literal_texts[key] = short(value, 20)
        return text

    def _statics(self, eqn: Any) -> tuple[str, DeferredParams, list[tuple[str, Any, Sequence[Any]]]]:
        """(label, ``_display_params`` when first read, sub-jaxprs) of an equation: for one
        that holds no sub-jaxpr, shared by the equations with equal params (a layer's
        ``dot_general``s), per-equation work done once. The params are read-only."""
        params = eqn.params
        try:  # the types too: True and 1 are equal keys but print differently
            key: tuple[Any, ...] | None = (eqn.primitive, tuple(params.items()), tuple(map(type, params.values())))
            found = self._params_texts.get(key)
        except TypeError:  # an unhashable value (an array)
            key, found = None, None
        if found is None:
            # the params shown are written when first read (few are: the first view shows none)
            subs = sub_jaxprs(params)
            if subs:
                return _eqn_label(eqn), DeferredParams(functools.partial(_holder_params, eqn)), subs
            found = (_eqn_label(eqn), DeferredParams(functools.partial(_display_params, params)), [])
            # a collective's label counts the bytes of its operands: not params alone
            if key is not None and eqn.primitive.name not in sharding.COLLECTIVES:
                self._params_texts[key] = found
        return found

    def _sub_env(self, eqn: Any, sub: Any, consts: Sequence[Any], group: int,
                 env: dict[Any, int], node: int, bound: set[Any]) -> dict[Any, int]:
        """Bind a sub-jaxpr's inputs: to the producers of the matching outer operands when
        they line up (shape and dtype, aligned at the end), else to the equation's node."""
        sub_env: dict[Any, int] = {}
        named = _match_consts(consts, self.captured) if self.captured and consts else {}
        for i, var in enumerate(sub.constvars):
            if len(consts) != len(sub.constvars):  # an open jaxpr (linear_solve's): the equation supplies them
                sub_env[var] = node
                continue
            info = named.get(i)  # a captured global a sub-jaxpr closed over
            sub_env[var] = self.graph.add_node(
                "const", info.name if info else f"const {aval_of_var(var).text}", group,
                input_kind=info.kind if info else "constant", outputs=[aval_of_var(var)])
            if info is None:
                self._unnamed_consts.add(sub_env[var])
        outer = list(eqn.invars)[-len(sub.invars):] if sub.invars else []
        aligned = len(outer) == len(sub.invars) and all(
            _same_type(o, i) for o, i in zip(outer, sub.invars))
        for i, var in enumerate(sub.invars):
            src = outer[i] if aligned else None
            if src is not None and not isinstance(src, jcore.Literal) and src in env:
                sub_env[var] = env[src]
                # one value under two names: counted once on the edges it crosses
                self._var_names[var] = self._var_name(src)
                if env[src] != node:
                    bound.add(src)
                    continue
            sub_env[var] = node
        return sub_env

    def _name_const(self, nid: int, eqn: Any, source: SourceLoc | None) -> None:
        """An array constant no global or closure cell holds is named after what made it,
        as its first use says: the library function that used it (``optimistix:
        implicit_jvp``), else the user's line (``line 12: x * np.arange(7)``)."""
        self._unnamed_consts.discard(nid)
        node = self.graph.nodes[nid]
        frames = internals.user_frames(eqn)  # innermost first; outside JAX and jaxviz
        inner = next((f for f in frames if is_user_file(f.file)), None)
        libraries = [f for f in frames[: frames.index(inner) if inner else None] if _is_library_file(f.file)]
        if libraries:  # the library doing the work (most of the frames; wrappers such as
            # equinox's filter_jit are few), at its innermost function
            packages = [installed_package(f.file) for f in libraries]
            package = max(reversed(packages), key=packages.count)
            maker = next(f for f in libraries if installed_package(f.file) == package)
            node.label = f"{package}: {display_function(maker.function)}"
        elif source is not None:
            node.label = f"line {source.cell_line or source.line}: {short(source.text or source.function, 30)}"
        else:  # made inside one of JAX's own public libraries (a solver's tableau)
            made = next(((module, code) for code, _ in internals.code_stack(eqn)
                         if (module := internals.jax_public_module(code.co_filename)) is not None), None)
            if made is not None:
                module, code = made
                node.label = f"{module}: {display_function(code.co_qualname)}"

    def _mark_repeats(self) -> None:
        """Sibling groups of the same name get "name 3/12" so repeated layers read as such,
        numbered in call order (the backward pass visits them in reverse). An argument's
        leaves and the state written back into it (``model (6 arrays)`` in and out) are
        no layers: not numbered, as if halves of one."""
        for parent in self.graph.groups:
            by_name: dict[str, list[int]] = {}
            for c in parent.groups:
                if self.graph.groups[c].holder is None and self.graph.groups[c].kind not in ("inputs", "outputs"):
                    by_name.setdefault(self.graph.groups[c].name, []).append(c)
            steps = self._steps_differentiating(parent)
            for name, ids in by_name.items():
                if len(ids) > 1:
                    ids = sorted(ids, key=lambda c: self.activation.get(c, c))
                    if all(self.graph.groups[c].kind == "transform" for c in ids):
                        self._name_transformations(name, ids)
                        continue
                    functions = [steps.get(c) for c in ids]
                    named = None not in functions and len(set(functions)) == len(ids)
                    for k, (c, function) in enumerate(zip(ids, functions), 1):
                        self.graph.groups[c].repeat = f"{name} · {function}" if named else f"{name} {k}/{len(ids)}"

    def _name_transformations(self, name: str, ids: list[int]) -> None:
        """Sibling transformations of one name, each named after the one call or scope it
        holds where it holds nothing else (mctx's ``vmap · mctx.simulate`` and ``vmap ·
        mctx.backward``, Equinox's ``vmap · eqx.nn.LayerNorm``): not numbered, as if
        repeats of one thing."""
        g = self.graph
        for c in ids:
            group = g.groups[c]
            if not group.nodes and len(group.groups) == 1:
                group.repeat = f"{name} · {g.groups[group.groups[0]].name}"

    def _steps_differentiating(self, parent: Group) -> dict[int, str]:
        """Per phase below ``parent``, the function its step differentiates: its forward's
        or backward's (``jax.grad(d_loss_fn)``), for the update after them too. Two steps
        in one function (a GAN's) read ``forward · d_loss_fn`` … ``update · g_loss_fn``."""
        found: dict[int, str] = {}
        function = None
        for c in parent.groups:
            if self.graph.groups[c].kind != "phase":
                continue
            function = self.differentiated.get(c, function if self.graph.groups[c].name == phases.UPDATE else None)
            if function is not None:
                found[c] = function
        return found


def _is_call_of(group: Any, function: Any) -> bool:
    """Whether ``group`` is a call of the function named ``function`` (a user's, or a
    library's by its last name: ``diffrax.diffeqsolve`` for ``diffeqsolve``)."""
    return (group.kind == "call" and group.name == function
            or group.kind == "library" and group.name.rpartition(".")[2] == function)


def _in_backward(path: Sequence[tuple[str, ...]]) -> bool:
    """Whether a group path runs through a backward pass (``backward@…``)."""
    backward = PHASE_OF_TRANSFORM["transpose"]
    return any(key[0] == "phase" and key[1].partition("@")[0] == backward for key in path)


def _of_literals(eqn: Any) -> bool:
    """Whether ``eqn`` is made of literals alone: JAX makes such an equation when its value
    is first needed (a tangent's zeros), out of the order the code ran in."""
    return all(isinstance(v, jcore.Literal) for v in eqn.invars)


def _added_since(table: dict[Any, Any], size: int) -> list[Any]:
    """The keys added to ``table`` since it had ``size`` of them, in order: read from its
    end, whatever its size."""
    return list(itertools.islice(reversed(table), len(table) - size))[::-1]


def _outputs_by_value(outvars: Sequence[Any], names: list[str]) -> list[tuple[Any, list[str]]]:
    """Outputs with their names; names bound to the same value (``result = loss``) share
    one output node."""
    by_var: dict[Any, list[str]] = {}
    order: list[tuple[Any, list[str]]] = []
    for var, name in zip(outvars, names):
        key = id(var) if isinstance(var, jcore.Literal) else var
        if key in by_var:
            by_var[key].append(name)
        else:
            by_var[key] = [name]
            order.append((var, by_var[key]))
    return order


def _comes_back(tracebacks: list[Any]) -> bool:
    """Whether some traceback object comes back after another one (by identity)."""
    seen: set[int] = set()
    previous = None
    for traceback in tracebacks:
        if traceback is not None and traceback is not previous:
            if id(traceback) in seen:
                return True
            seen.add(id(traceback))
        previous = traceback
    return False


def replay_starts(tracebacks: list[Any]) -> list[int] | None:
    """Where each copy of a replayed trace starts in one call's equations (their
    tracebacks, in order): the first traceback object comes back, and every copy runs
    through the first one's objects in order (dead code may drop some). None for a call
    that ran once, or whose equations are anything else."""
    if not tracebacks or any(t is None for t in tracebacks):
        return None
    first = tracebacks[0]
    starts = [i for i, t in enumerate(tracebacks) if t is first and (i == 0 or tracebacks[i - 1] is not first)]
    if len(starts) < 2:
        return None
    unit = [id(t) for t in tracebacks[:starts[1]]]
    for begin, end in zip(starts[1:], [*starts[2:], len(tracebacks)]):
        at = 0
        for t in tracebacks[begin:end]:
            while at < len(unit) and unit[at] != id(t):
                at += 1
            if at == len(unit):
                return None
    return starts


def _replay_roots(starts: dict[tuple[Any, ...], list[int]]) -> list[tuple[Any, ...]]:
    """The calls to split into copies: the outermost that were replayed; of calls nested
    with the same copies (a jitted model that is only a loop of checkpointed blocks), the
    innermost."""
    roots: list[tuple[Any, ...]] = []
    for call in sorted(starts, key=len):
        if any(call[:len(root)] == root for root in roots):
            continue
        same = [inner for inner in starts if inner[:len(call)] == call
                and len(starts[inner]) == len(starts[call])]
        roots.append(max(same, key=len))
    return roots


def _eqn_label_word(primitive: str | None) -> str:
    """The word an equation's box shows for its primitive (``checkpoint`` for remat)."""
    return USER_WORD_OF_PRIMITIVE.get(primitive or "", primitive or "")


def _leaf_kind(node: Any) -> str | None:
    """Which box a leaf folds into with its like: ``statics``, ``captured``,
    ``constants``; None for what is not such a leaf."""
    if node.kind == "input" and node.input_kind == "static":
        return "statics"
    if node.kind == "const":
        return "captured" if node.input_kind == "captured" else "constants"
    return None


_ROOT = re.compile(r"out\[\d+\]|[^.\[]+")


def _pytree_root(name: str) -> str:
    """``params['w'][0]`` → ``params``; ``state.z`` → ``state``; ``out[1]['b']`` →
    ``out[1]``."""
    m = _ROOT.match(name)
    return m.group() if m else name


def _same_type(a: Any, b: Any) -> bool:
    ta, tb = aval_of_var(a), aval_of_var(b)
    return ta.shape == tb.shape and ta.dtype == tb.dtype


# ---------------------------------------------------------------------- inputs
def captured_values(fn: Callable[..., Any], roots: Iterable[Any] = (), max_functions: int = 50,
                    readers: dict[int, set[Any]] | None = None) -> list[tuple[InputInfo, Any]]:
    """Globals and closure variables that ``fn`` reads, which JAX bakes in at trace time:
    arrays and Python numbers. Followed through the user functions ``fn`` calls by name,
    the functions defined inside them (the usual ``def loss_fn`` inside ``train_step``),
    and the user functions reachable from ``roots`` (a Flax Module's methods behind
    ``state.apply_fn``, the function a Haiku ``transform`` wraps). Functions, modules and
    classes are code, not data. Returns (info, value) pairs; ``readers``, where given, is
    filled with the code of the functions that read each, by ``id(info)``
    (``read_while_traced``)."""
    out: list[tuple[InputInfo, Any]] = []
    seen_names: set[str] = set()
    read_by: dict[str, set[Any]] = {}
    todo = [fn, *call_scopes.user_functions(roots, limit=2_000)][::-1]
    visited: set[int] = set()
    while todo and len(visited) < max_functions:
        f = _python_function(todo.pop())
        if f is None or id(f) in visited:
            continue
        visited.add(id(f))
        for source, mapping in (("closure", _nonlocals(f)), ("global", _globals_read(f))):
            for name, value in mapping.items():
                read_by.setdefault(name, set()).add(f.__code__)
                if name not in seen_names:
                    found = _captured_leaves(name, value, source)
                    if found:
                        seen_names.add(name)
                        out += found
                        if readers is not None:
                            readers.update((id(info), read_by[name]) for info, _ in found)
                if inspect.isfunction(value) or inspect.ismethod(value):
                    todo.append(value)
                elif callable(value) and not isinstance(value, type):  # a model object
                    todo += call_scopes.user_functions([value], limit=500)
    return out


CAPTURED_LEAVES_MAX = 10_000  # a global holding more (a dataset as a list of arrays) is not walked


def _captured_leaves(name: str, value: Any, source: str) -> list[tuple[InputInfo, Any]]:
    """The arrays and Python numbers in a captured value, each named by the value's name and
    its path: ``LR``, ``y0[0]``, ``CONFIG['lr']``, ``model.layers[0].weight``. Code
    (functions, classes, modules) holds none."""
    if is_array(value) or is_python_scalar(value):
        leaves: list[tuple[str, Any]] = [(name, value)]
    elif inspect.isroutine(value) or inspect.isclass(value) or inspect.ismodule(value):
        return []
    else:
        try:
            flat = jax.tree_util.tree_flatten_with_path(value)[0]
        except Exception:  # a value whose flattening fails is not data we can name
            return []
        if len(flat) == 1 and flat[0][1] is value:  # not a container: an object's arrays
            return attribute_arrays(name, value, source)
        if len(flat) > CAPTURED_LEAVES_MAX:
            return []
        names = adapters.captured_leaf_names(name, value) or [name + path_text(p) for p, _ in flat]
        leaves = [(n, leaf) for n, (_, leaf) in zip(names, flat)]
    return [(InputInfo(n, "captured", aval_of_value(leaf) if is_array(leaf) else None, short(leaf, 40), source), leaf)
            for n, leaf in leaves if is_array(leaf) or is_python_scalar(leaf)]


def attribute_arrays(name: str, obj: Any, source: str) -> list[tuple[InputInfo, Any]]:
    """The arrays an object (not a pytree: a model class of the user's own) holds in its
    attributes, one level deep, as ``model.w``, ``model.cfg['b']``: a method reading
    ``self.w`` bakes them in."""
    attributes = getattr(obj, "__dict__", None)
    if not isinstance(attributes, dict) or inspect.isroutine(obj) or inspect.isclass(obj) or inspect.ismodule(obj):
        return []
    found: list[tuple[InputInfo, Any]] = []
    for attr, value in list(attributes.items())[:CAPTURED_LEAVES_MAX]:
        if attr.startswith("__") or inspect.isroutine(value) or not (is_array(value) or _holds_arrays(value)):
            continue
        found += [(info, leaf) for info, leaf in _captured_leaves(f"{name}.{attr}", value, source) if is_array(leaf)]
    return found


def _holds_arrays(value: Any) -> bool:
    try:
        return any(is_array(x) for x in jax.tree_util.tree_leaves(value)[:CAPTURED_LEAVES_MAX])
    except Exception:  # a value whose flattening fails holds nothing we can name
        return False


def _nonlocals(f: Any) -> dict[str, Any]:
    cells = zip(f.__code__.co_freevars, f.__closure__ or ())
    return {name: cell.cell_contents for name, cell in cells if call_scopes.is_filled(cell)}


def _globals_read(f: Any) -> dict[str, Any]:
    """The globals ``f`` and the functions defined inside it name (nested code objects)."""
    g = f.__globals__
    return {name: g[name] for name in call_scopes.global_names(f.__code__) if name in g}


def _python_function(fn: Any) -> Any:
    """The user-written Python function behind ``fn`` (through jit/grad wrappers)."""
    if callable(fn) and hasattr(fn, "__wrapped__"):  # most are not wrapped: unwrap's own cost is the cost
        fn = inspect.unwrap(fn)
    fn = getattr(fn, "__func__", fn)
    if inspect.isfunction(fn) and is_user_file(fn.__code__.co_filename):
        return fn
    return None


def _match_consts(consts: Sequence[Any], candidates: Iterable[tuple[InputInfo, Any]]) -> dict[int, InputInfo]:
    """Which constvars are which captured arrays: by identity first (the usual case, and
    free), then by value among the captured arrays not matched yet, each used once (48
    all-ones layer scales must not all be named after the first). By value as JAX holds
    it: a NumPy global of 64 bits (``np.linspace``'s, ``np.arange``'s) is a 32-bit
    constant unless ``jax_enable_x64``."""
    cands = [(info, value) for info, value in candidates if is_array(value)]
    found: dict[int, InputInfo] = {}
    used: set[int] = set()
    by_id = {id(value): k for k, (_, value) in enumerate(cands)}
    for i, c in enumerate(consts):
        k = by_id.get(id(c))
        if k is not None and k not in used:
            found[i] = cands[k][0]
            used.add(k)
    for i, c in enumerate(consts):
        if i in found:
            continue
        for k, (info, value) in enumerate(cands):
            if k not in used and np.shape(c) == np.shape(value) and _same_as_held(c, value):
                found[i] = info
                used.add(k)
                break
    return found


def _same_as_held(const: Any, value: Any) -> bool:
    """Whether the constant ``const`` is the captured array ``value`` as JAX holds it (its
    dtype canonicalized, its values converted to it)."""
    dtype = getattr(const, "dtype", None)
    if dtype is None or dtype != jax.dtypes.canonicalize_dtype(getattr(value, "dtype", None)):
        return False
    held = np.asarray(value).astype(dtype, copy=False)
    return bool(np.array_equal(np.asarray(const), held, equal_nan=held.dtype.kind in "fc"))


# ---------------------------------------------------------------------- stdout tee
class _Tee(io.TextIOBase):
    """Keeps a copy of what the user's code printed while traced, passing it through when
    ``echo`` (a second trace of the same code keeps quiet: its prints were seen once)."""

    def __init__(self, target: Any, echo: bool = True) -> None:
        self.target = target
        self.echo = echo
        self.buffer_text = io.StringIO()

    def write(self, s: str) -> int:
        self.buffer_text.write(s)
        return self.target.write(s) if self.echo else len(s)

    def flush(self) -> None:
        self.target.flush()


@contextlib.contextmanager
def capture_trace_output(echo: bool = True) -> Any:
    tee = _Tee(sys.stdout, echo)
    with contextlib.redirect_stdout(tee):
        yield tee.buffer_text


# ---------------------------------------------------------------------- public entry points
@dataclass(slots=True)
class Staged:
    """A function staged by ``jax.jit(...).trace`` plus what we learned while tracing."""

    traced: Any  # jax.stages.Traced
    calls: dict[str, CallInfo]
    trace_output: str
    trace_seconds: float
    scopes: str = "code"  # how user calls were recorded: "code" or "hook" (jaxviz.call_scopes)
    reused: list[str] = field(default_factory=list)  # callees JAX had cached
    in_shardings: list[Any] = field(default_factory=list)  # of the array arguments (the mesh)
    # What the user's lines called, read from their frames (released once built)
    called: CalledNames = field(default_factory=CalledNames)
    # whether the recorder records a call of a user's code (``call_scopes.ran_while_traced``)
    records: Callable[[Any], bool] = lambda code: False


def read_while_traced(captured: list[tuple[InputInfo, Any]], readers: dict[int, set[Any]],
                      staged: Staged) -> list[tuple[InputInfo, Any]]:
    """The captured values that a function which ran while traced reads (``readers``: by
    ``id(info)``, from ``captured_values``): an int only a model's ``__init__`` read is
    not baked in. Kept where that cannot be told: a reader that would not be recorded, a
    trace JAX reused from before jaxviz traced (``staged.reused``). A function that ran
    in an earlier trace of jaxviz's counts as run: JAX may reuse that trace."""
    if staged.reused:
        return captured

    def read(info: InputInfo) -> bool:
        codes = readers.get(id(info))
        return codes is None or any(call_scopes.ran_while_traced(code) or not staged.records(code)
                                    for code in codes)

    return [(info, value) for info, value in captured if read(info)]


def stage(make_jitted: Callable[[], Any], args: Sequence[Any], kwargs: dict[str, Any],
          skip: Iterable[Any] = (), cell_file: str | None = None, roots: Iterable[Any] = ()) -> Staged:
    """Trace once, recording user calls and trace-time prints. ``make_jitted()`` returns a
    fresh jitted callable (a cached trace would not run the user's code again); ``roots``
    are where the user functions that may run are found (``jaxviz.call_scopes``)."""
    t0 = time.perf_counter()
    for attempt, recorder in enumerate(_recorders(args, kwargs, skip, cell_file, roots)):
        staged = _stage_with(recorder, make_jitted, args, kwargs, attempt == 0, t0)
        if recorder.complete(staged.traced.jaxpr):
            break
    return staged


def _recorders(args: Sequence[Any], kwargs: dict[str, Any], skip: Iterable[Any], cell_file: str | None,
               roots: Iterable[Any]) -> Iterator[call_scopes.HookScopes | call_scopes.CodeScopes]:
    """The call recorders to trace with in turn, until one is ``complete()``."""
    return call_scopes.recorders([*roots, *args, *kwargs.values()], skip, cell_file)


def _stage_with(recorder: Any, make_jitted: Callable[[], Any], args: Sequence[Any], kwargs: dict[str, Any],
                echo: bool, t0: float) -> Staged:
    """One trace under ``recorder`` (trace-time prints shown where ``echo``); ``t0``: when
    the first try began."""
    with capture_trace_output(echo=echo) as printed, recorder, call_scopes.fresh_jax_traces(), \
            internals.tracer_errors_captured():  # a tracer error says where its value came from
        traced = make_jitted().trace(*args, **kwargs)
    placed = [leaf.sharding for leaf in jax.tree_util.tree_leaves((args, kwargs)) if isinstance(leaf, jax.Array)]
    called = call_scopes.CalledNames(recorder.frames, adapters.named_by_attribute,
                                     adapters.calls_layer_named_by_attribute)
    return Staged(traced, recorder.calls, printed.getvalue(), time.perf_counter() - t0, recorder.mode,
                  recorder.reused(traced.jaxpr), placed, called, recorder.records)


@contextlib.contextmanager
def collector_paused() -> Any:
    """Python's cyclic garbage collector held off while a graph is built: the build makes
    a few objects per equation, none of them garbage, and every full collection it would
    trigger walks every live object (the jaxpr's and JAX's caches): half of a
    100k-equation build. Reference counting still frees what it drops."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def build_program(name: str, staged: Staged, inputs: list[InputInfo], input_names: list[str],
                  output_names: list[str], captured: list[tuple[InputInfo, Any]],
                  cell_file: str | None = None, source: str | None = None,
                  lost_outputs: Sequence[str] = (), frame_codes: dict[int, Any] | None = None) -> Program:
    """``lost_outputs``: names among ``output_names`` of values the traced function returns
    but the real call drops (drawn as lost; not outputs of the Program). ``frame_codes``,
    if given, is filled with the code objects of the traceback frames a user function can
    be among, by id (what ``CodeScopes.complete`` checks; ``GraphBuilder.frame_codes``)."""
    closed = staged.traced.jaxpr
    const_names = _match_consts(closed.consts, captured)
    t0 = time.perf_counter()
    builder = GraphBuilder(name, staged.calls, cell_file)
    builder.frame_codes = frame_codes
    builder.called = staged.called
    builder.captured = [(info, value) for info, value in captured if is_array(value)]
    builder.lost_outputs = set(lost_outputs)
    try:
        with collector_paused():
            graph = builder.build(closed, inputs, input_names, output_names, const_names)
    finally:
        staged.called.release()  # the user's frames, and the values they hold
    program = Program(name, closed, inputs, [n for n in output_names if n not in builder.lost_outputs], graph,
                      source=source, trace_output=staged.trace_output, call_scopes=staged.scopes,
                      lost_outputs=list(lost_outputs), in_shardings=staged.in_shardings)
    for number, group in builder.call_groups:  # read after finish: ids as the graph has them
        if group.id < len(graph.groups) and graph.groups[group.id] is group:
            program.call_groups.setdefault(number, []).append(group.id)
    program.timings["trace"] = staged.trace_seconds
    program.timings["graph"] = time.perf_counter() - t0
    if staged.reused:
        names = ", ".join(f"`{n}`" for n in staged.reused)
        program.notes.append(
            f"{names} ran before this trace, and JAX {jax.__version__} reuses its cached trace "
            "(jax.make_user_context, from JAX 0.7, lets jaxviz trace it again): the calls "
            "inside it are not shown as groups")
    return program


def trace(fn: Callable[..., Any], *args: Any, static_argnums: int | Sequence[int] = (),
          static_argnames: str | Sequence[str] = (), **kwargs: Any) -> Program:
    """Trace ``fn(*args, **kwargs)`` into a Program without running it.

    ``fn`` is what the user calls, traced the way its library traces it
    (``jaxviz.adapters``): a plain function, a ``jax.jit``-ed one (its own static
    arguments apply), a transformed one (``jax.grad(f)``), a ``functools.partial`` or a
    decorated function, an ``eqx.filter_jit`` function or Module, an ``nnx.jit``
    function, a Flax ``model.apply``, a Haiku ``transform``ed ``apply``.
    """
    plan = adapters.adapt(fn, args, kwargs)
    static_argnums = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)
    static_argnames = (static_argnames,) if isinstance(static_argnames, str) else tuple(static_argnames)
    static_argnums = normalize_static_argnums(static_argnums + plan.static_argnums, len(plan.args))
    static_argnames += plan.static_argnames
    auto: dict[int | str, str] = {}
    if plan.input_names is None:  # plain arguments: named by the signature, auto-static
        arg_names = plan.arg_names or positional_names(plan.user_function, len(plan.args))
        auto = _auto_static(arg_names, plan.args, plan.kwargs, static_argnums, static_argnames)
        static_argnums += tuple(i for i in auto if isinstance(i, int))
        static_argnames += tuple(k for k in auto if isinstance(k, str))
        inputs, input_names = _classify_arguments(arg_names, plan.args, plan.kwargs,
                                                  static_argnums, static_argnames)
    else:  # the adapter split and named the leaves
        inputs, input_names = _adapted_inputs(plan), plan.input_names

    # Always trace a fresh function object: JAX caches traces per function, and a cached
    # jaxpr would lack the call scopes recorded while tracing (and take no time).
    def make_jitted() -> Any:
        return jax.jit(fresh_function(plan.function), static_argnums=static_argnums,
                       static_argnames=static_argnames)

    readers: dict[int, set[Any]] = {}
    captured = captured_values(plan.user_function, roots=[*plan.roots, *plan.args, *plan.kwargs.values()],
                               readers=readers)
    captured += _held_by_static_objects(plan, inputs, static_argnums, static_argnames)
    code = getattr(inspect.unwrap(plan.user_function), "__code__", None)
    skip = {*plan.transparent, *([code] if code else [])}
    t0 = time.perf_counter()
    # Each recorder in turn, until one recorded every user call: checked on the frames
    # the graph builder reads anyway, so a complete first trace walks no traceback twice.
    for attempt, recorder in enumerate(_recorders(plan.args, plan.kwargs, skip, None,
                                                  [plan.function, plan.user_function, *plan.roots])):
        try:
            staged = _stage_with(recorder, make_jitted, plan.args, plan.kwargs, attempt == 0, t0)
        except Exception as exc:
            for hook in list(TRACE_ERROR_HOOKS):
                hook(exc)
            raise
        out_names = (plan.output_names or _output_names)(staged.traced.out_info)
        frame_codes: dict[int, Any] = {}
        read = read_while_traced(captured, readers, staged)
        program = build_program(plan.name, staged, inputs + [info for info, _ in read], input_names, out_names,
                                read, lost_outputs=plan.lost_outputs, frame_codes=frame_codes)
        if recorder.complete(staged.traced.jaxpr, frame_codes.values()):
            break
    program.notes += plan.notes
    if auto:
        program.notes.append(f"{', '.join(auto.values())} not arrays: traced as static arguments "
                             "(jax.jit needs static_argnums/static_argnames for them)")
    return program


def _held_by_static_objects(plan: adapters.Plan, inputs: list[InputInfo], static_argnums: Sequence[int],
                            static_argnames: Sequence[str]) -> list[tuple[InputInfo, Any]]:
    """Arrays held by the objects a trace bakes in: a static argument (``model.w``) and the
    callable itself when it is an object (``self.w``)."""
    static = {i.name for i in inputs if i.kind == "static"}
    names = plan.arg_names or positional_names(plan.user_function, len(plan.args))
    objects = [(names[i], plan.args[i]) for i in static_argnums if i < len(plan.args) and names[i] in static]
    objects += [(k, plan.kwargs[k]) for k in static_argnames if k in plan.kwargs]
    if not inspect.isroutine(plan.function) and not isinstance(plan.function, functools.partial):
        objects.append(("self", plan.function))
    return [found for name, value in objects for found in attribute_arrays(name, value, "attribute")]


def _adapted_inputs(plan: adapters.Plan) -> list[InputInfo]:
    traced = [InputInfo(name, "traced", aval_of_value(leaf), None, "argument", sharding.value_sharding(leaf))
              for name, leaf in
              zip(plan.input_names or (), jax.tree_util.tree_leaves((plan.args, plan.kwargs)))]
    return traced + [InputInfo(name, "static", None, short(value, 40), "argument")
                     for name, value in plan.static]


def _output_names(out_info: Any) -> list[str]:
    return output_leaf_names(out_info, "out")


def _auto_static(names: list[str], args: Sequence[Any], kwargs: dict[str, Any],
                 static_argnums: Sequence[int], static_argnames: Sequence[str]) -> dict[int | str, str]:
    """Arguments ``jax.jit`` could not trace (a model object, a string, a function) that
    could be static (hashable): position or name → how to call it. ``jaxviz.trace`` makes
    them static, as the user would with ``static_argnums``, and says so. A value that can
    be neither raises ``UnsplittableArgument`` naming it."""
    found: dict[int | str, str] = {}
    for key, value in [*enumerate(args), *kwargs.items()]:
        if key in static_argnums or key in static_argnames or _jit_can_trace(value):
            continue
        name = key if isinstance(key, str) else names[key]
        if not is_hashable(value):
            raise UnsplittableArgument(_unsplittable_message(name, value))
        found[key] = name
    return found


def _unsplittable_message(name: str, value: Any) -> str:
    """One line: which leaf of ``name`` jax.jit cannot trace, and what to mark static."""
    leaf_path, leaf = "", value
    for path, x in jax.tree_util.tree_flatten_with_path(value)[0]:
        if not (is_array(x) or is_python_scalar(x)):
            leaf_path, leaf = path_text(path), x
            break
    return (f"argument {name!r}: {name}{leaf_path} ({type(leaf).__name__}) is neither an array "
            f"jax.jit can trace nor hashable, so {name!r} cannot be static either; mark the "
            f"non-array parts static (static_argnames={name!r} with a hashable value, or "
            f"eqx.filter_jit / eqx.field(static=True) for a Module's fields)")


def _jit_can_trace(value: Any) -> bool:
    try:
        leaves = jax.tree_util.tree_leaves(value)
    except Exception:
        return False
    return all(is_array(x) or is_python_scalar(x) or isinstance(x, (np.generic, jax.ShapeDtypeStruct))
               for x in leaves)


def _classify_arguments(positional: list[str], args: Sequence[Any], kwargs: dict[str, Any],
                        static_argnums: tuple[int, ...],
                        static_argnames: tuple[str, ...]) -> tuple[list[InputInfo], list[str]]:
    """Inputs in the user's words, and the names of the jaxpr's invars in order.

    Mirrors how ``jax.jit`` flattens a call: positional arguments in order, then keyword
    arguments as a dict (sorted keys), static ones left out.
    """
    static_names = set(static_argnames) | {positional[i] for i in static_argnums if 0 <= i < len(positional)}
    inputs: list[InputInfo] = []
    names: list[str] = []
    calls = [(positional[i], v, i in static_argnums) for i, v in enumerate(args)]
    calls += [(k, kwargs[k], False) for k in sorted(kwargs)]
    for name, value, static_position in calls:
        if static_position or name in static_names:
            inputs.append(InputInfo(name, "static", None, short(value, 40), "argument"))
            continue
        flat = traced_inputs(name, value, "argument")
        inputs += flat
        names += [i.name for i in flat]
    return inputs, names


def normalize_static_argnums(nums: Sequence[int], n_args: int) -> tuple[int, ...]:
    """Negative positions count from the end of the positional arguments, as in jit."""
    return tuple(sorted({i % n_args if n_args and i < 0 else i for i in nums}))
