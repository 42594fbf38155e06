"""Recompilation tracker: every trace and compile of a jitted function, its exact cause in
the user's words, its cost, and globals baked in at trace time that have changed since.

Why it costs nothing on cache hits: JAX reports the start and the end of every trace,
lowering and backend compile through ``jax.monitoring`` (public), and those happen only
on cache misses; a hit runs in C++ and never reaches Python. On a trace we read the
arguments of the call being traced from JAX's own frames (the one private detail, in
``_jax_internals.current_jit_call``), describe them (argument names, pytree paths, avals,
static values, relevant config) and diff them with the previous compile of the same
function. Nothing wraps the jitted function.

Public API::

    with jaxviz.watch() as log:   # or: log = jaxviz.watch(); log.start(); ...; log.stop()
        ...
    log.events      # list[CompileEvent], in order
    log.summary()   # per function: traces, compiles, seconds, distinct signatures
    log.check()     # globals baked in at trace time that have changed since

In IPython (``%load_ext jaxviz``): a session-wide watch starts, stale globals are checked
after every cell, ``%jaxviz watch [off]`` shows a live monitor, ``%jaxviz recompiles [fn]``
the log.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import html
import inspect
import itertools
import linecache
import os
import re
import reprlib
import sys
import threading
import warnings
import weakref
from collections import Counter, OrderedDict, deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import jax
import numpy as np

from . import _jax_internals as internals
from . import objects
from .adapters import equinox, flax_nnx, haiku, wrappers
from .calls import ipython_cell_name, is_user_file, original_code
from .devices import fmt_seconds
from .graph import Aval
from .jaxprs import is_python_scalar, make_aval
from .tracing import captured_values

SCHEMA = "jaxviz.compiles"
SCHEMA_VERSION = 1

CAUSE_KINDS = (
    "first_call", "shape", "dtype", "weak_type", "static_value", "pytree_structure",
    "new_function_object", "arg_count", "sharding", "device", "commitment", "donation",
    "context", "previous_error", "unknown",
)
MAX_CAUSES = 24  # per event; a pytree of 1000 leaves that all changed dtype says so once
MAX_WARNINGS = 100  # kept per watch (storms, stale globals); the oldest go first
_MISSING = object()


def _option_exists(name: str) -> bool:
    try:
        getattr(jax.config, name)
    except Exception:
        return False
    return True


# Configuration that is part of JAX's cache key and that users change, read through the
# public ``jax.config`` (which honours context managers such as default_matmul_precision).
CONTEXT_OPTIONS: tuple[str, ...] = tuple(n for n in (
    "jax_enable_x64", "jax_default_matmul_precision", "jax_numpy_rank_promotion",
    "jax_numpy_dtype_promotion", "jax_default_device", "jax_default_prng_impl",
    "jax_threefry_partitionable", "jax_debug_nans", "jax_debug_infs",
) if _option_exists(n))


class RecompileWarning(UserWarning):
    """A function keeps recompiling (a "recompile storm")."""


# ====================================================================== small helpers
_repr = reprlib.Repr()
_repr.maxstring = 40
_repr.maxother = 40
_repr.maxlist = _repr.maxtuple = _repr.maxdict = _repr.maxset = 6


def short_repr(value: Any) -> str:
    try:
        return _repr.repr(value)
    except Exception:
        return f"<{type(value).__name__}>"


def _plain(value: Any) -> Any:
    """Keep small plain values as they are (tests compare them); others by their repr."""
    if value is None or isinstance(value, (bool, int, float, complex, str)):
        return value
    if isinstance(value, tuple) and len(value) <= 16 and all(
            v is None or isinstance(v, (bool, int, float, str)) for v in value):
        return value
    return short_repr(value)


def _json_safe(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if np.isfinite(value) else str(value)
    if isinstance(value, (tuple, list)):
        return [_json_safe(v) for v in value]
    return short_repr(value)


def _same(a: Any, b: Any) -> bool:
    """Equality that never raises (static arguments may define odd ``__eq__``)."""
    if a is b:
        return True
    try:
        return bool(type(a) is type(b) and a == b)
    except Exception:
        return False


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _ipython_cell(filename: str) -> int | None:
    """The execution count of the IPython cell compiled under ``filename``, if any."""
    name = ipython_cell_name(filename)  # "In[5]"
    m = re.fullmatch(r"In\[(\d+)\]", name) if name else None
    return int(m.group(1)) if m else None


@dataclass(frozen=True, slots=True)
class Site:
    """A place in the user's code: a file and line, or a notebook cell and line."""

    file: str
    line: int
    cell: int | None = None  # IPython execution count
    text: str | None = None  # the source line

    def __str__(self) -> str:
        if self.cell is not None:
            return f"cell [{self.cell}], line {self.line}"
        name = self.file
        if not name.startswith("<"):
            rel = os.path.relpath(name) if os.path.isabs(name) else name
            name = rel if not rel.startswith("..") else os.path.basename(name)
        return f"{name}:{self.line}"

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "cell": self.cell, "text": self.text,
                "label": str(self)}


def _site(file: str, line: int) -> Site:
    text = linecache.getline(file, line).strip() or None
    return Site(file, line, _ipython_cell(file), text)


def _site_of_frame(frame: Any) -> Site | None:
    """The first user frame (not JAX, not a library, not jaxviz) at or above ``frame``."""
    while frame is not None and not is_user_file(frame.f_code.co_filename):
        frame = frame.f_back
    if frame is None:
        return None
    return _site(frame.f_code.co_filename, frame.f_lineno)


# ====================================================================== functions
_TRANSFORM_SUFFIX = "_f"  # jax.grad(f) is a function named grad_f, wrapping f


def _unwrap_chain(fun: Any) -> list[Any]:
    """``fun`` and what it wraps: partials, bound methods, functools.wraps chains."""
    chain = []
    seen: set[int] = set()
    while fun is not None and id(fun) not in seen and len(chain) < 16:
        seen.add(id(fun))
        chain.append(fun)
        if isinstance(fun, functools.partial):
            fun = fun.func
        elif inspect.ismethod(fun):
            fun = fun.__func__
        elif (original := haiku.original_function(fun)) is not None:
            fun = original[0]
        else:
            fun = getattr(fun, "__wrapped__", None)
    return chain


@dataclass(frozen=True, slots=True)
class FunctionInfo:
    """A jitted function: its name (``grad(loss)`` for transformed ones) and definition."""

    name: str
    qualname: str
    defined: Site | None

    def __str__(self) -> str:
        return f"{self.name} ({self.defined})" if self.defined else self.name

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "qualname": self.qualname,
                "defined": self.defined.to_json() if self.defined else None}


def _describe_function(fun: Any) -> tuple[Any, FunctionInfo, Any]:
    """(identity key, FunctionInfo, the innermost Python function or None)."""
    chain = _unwrap_chain(fun)
    transforms: list[str] = []
    key: list[Any] = []
    inner = None
    suffix = ""
    for f in chain:
        code = getattr(f, "__code__", None)
        if code is None:
            key.append(type(f).__qualname__)
            continue
        transformed = haiku.original_function(f)
        if transformed is not None:  # hk.transform(forward).apply: "forward.apply"
            suffix = f".{transformed[1]}"
        code = original_code(code)  # a function jaxviz is tracing keeps its identity
        inner = f
        if internals.is_jax_file(code.co_filename) and code.co_name.endswith(_TRANSFORM_SUFFIX):
            transforms.append(code.co_name[: -len(_TRANSFORM_SUFFIX)])
        cell = _ipython_cell(code.co_filename)
        # Re-running a notebook cell makes a new file name for the same source: key cells
        # by code, so that "same code, new function object" is recognised.
        key.append((code.co_qualname if hasattr(code, "co_qualname") else code.co_name,
                    code.co_firstlineno, code.co_code,
                    "<cell>" if cell is not None else code.co_filename))
    if inner is not None:
        code = inner.__code__
        qualname = getattr(inner, "__qualname__", code.co_name)
        base = getattr(inner, "__name__", code.co_name)
        defined = _site(code.co_filename, code.co_firstlineno)
    else:
        qualname = base = getattr(fun, "__name__", None) or type(fun).__name__
        defined = None
    name = base + suffix
    for t in transforms:
        name = f"{t}({name})"
    return tuple(key), FunctionInfo(name, qualname, defined), inner


def _is_internal(fun: Any) -> bool:
    """JAX's own jitted functions (``jnp.sin``, eager primitives): not the user's."""
    for f in _unwrap_chain(fun):
        code = getattr(f, "__code__", None)
        if code is not None and not internals.is_jax_file(code.co_filename):
            return False
    return True


# ====================================================================== signatures
@dataclass(frozen=True, slots=True)
class Leaf:
    """One array leaf of an argument: its aval and, for committed arrays, its placement."""

    aval: Aval
    # "device cpu:1" or a sharding's text when committed; "numpy" for a host array; None
    # for an uncommitted jax.Array (numpy arrays are uncommitted too: same executable)
    placement: str | None = None

    @property
    def text(self) -> str:
        return self.aval.text


_LEAVES: dict[Leaf, Leaf] = {}  # interned: consecutive signatures share their leaves


def _intern(leaf: Leaf) -> Leaf:
    if len(_LEAVES) > 200_000:
        _LEAVES.clear()
    return _LEAVES.setdefault(leaf, leaf)


NUMPY = "numpy"


def _placement(value: Any) -> str | None:
    if isinstance(value, (np.ndarray, np.generic)):
        return NUMPY
    if not isinstance(value, jax.Array) or isinstance(value, jax.core.Tracer):
        return None
    try:
        if not value.committed:
            return None
        sharding = value.sharding
    except Exception:
        return None
    return _sharding_text(sharding)


def _sharding_text(sharding: Any) -> str:
    """``device cpu:1``, ``P('d',) over mesh {'d': 2}``, or the sharding's own text."""
    devices = getattr(sharding, "device_set", None)
    if type(sharding).__name__ == "SingleDeviceSharding" and devices and len(devices) == 1:
        (d,) = devices
        return f"device {d.platform}:{d.id}"
    spec, mesh = getattr(sharding, "spec", None), getattr(sharding, "mesh", None)
    if spec is not None and mesh is not None:
        try:
            return f"{spec} over mesh {dict(mesh.shape)}"
        except Exception:
            pass
    text = " ".join(str(sharding).split())
    return text if len(text) <= 80 else text[:79] + "…"


def is_committed(placement: str | None) -> bool:
    return placement not in (None, NUMPY)


def placement_words(placement: str | None) -> str:
    """How an argument was placed, as the cause's before/after."""
    if placement is None:
        return "uncommitted"
    if placement == NUMPY:
        return "a numpy array (uncommitted)"
    return "committed to " + placement.removeprefix("device ")


def _leaf_of(value: Any) -> Leaf:
    try:
        out = make_aval(jax.typeof(value))
    except Exception:
        out = make_aval(value)
    return _intern(Leaf(out, _placement(value)))


@dataclass(frozen=True, slots=True)
class ArgSig:
    """One argument of a call: static (its value) or traced (structure and leaves)."""

    name: str
    static: bool
    passed: str = "positional"  # or "keyword"
    value: Any = None  # the static value
    structure: Any = None  # PyTreeDef of a traced argument
    leaves: tuple[tuple[str, Leaf], ...] = ()  # (pytree path inside the argument, leaf)
    donated: bool = False  # donate_argnums / donate_argnames
    # leaves a jit-like wrapper holds static (eqx.filter_jit: every non-array leaf)
    statics: tuple[tuple[str, Any], ...] = ()

    def text(self) -> str:
        if self.static:
            return f"{short_repr(self.value)} (static)"
        if len(self.leaves) == 1 and not self.leaves[0][0] and not self.statics:
            return self.leaves[0][1].text
        parts = [f"{p}: {leaf.text}" for p, leaf in self.leaves]
        parts += [f"{p}: {short_repr(v)} (static)" for p, v in self.statics]
        inner = ", ".join(parts[:8])
        more = f", … {len(parts) - 8} more" if len(parts) > 8 else ""
        return f"{{{inner}{more}}}"


@dataclass(frozen=True, slots=True)
class Signature:
    """What JAX's cache key is made of, in the user's words."""

    args: tuple[ArgSig, ...]
    context: tuple[tuple[str, Any], ...]

    def describe(self) -> dict[str, str]:
        out = {a.name: a.text() for a in self.args}
        for name, value in self.context:
            if name == "jax_enable_x64" and value:
                out["(config) " + name] = str(value)
        return out

    def __str__(self) -> str:
        return ", ".join(f"{k}: {v}" for k, v in self.describe().items())

    @property
    def key(self) -> Any:
        try:
            hash(self)
            return self
        except TypeError:
            return repr(self)


def _arg_names(call: internals.JitCall) -> tuple[list[tuple[str, Any, bool, str]], int]:
    """[(name, value, static, passed)] for the call's arguments, bound to parameter names."""
    params = []
    sig = call.signature
    if sig is None:
        try:
            sig = inspect.signature(call.fun)
        except (TypeError, ValueError):
            sig = None
    if sig is not None:
        params = list(sig.parameters.values())
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    var_pos = next((p.name for p in params if p.kind == p.VAR_POSITIONAL), None)
    var_kw = next((p.name for p in params if p.kind == p.VAR_KEYWORD), None)
    named = {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    nums = set(call.static_argnums)
    n = len(call.args)
    out = []
    for i, value in enumerate(call.args):
        if i < len(positional):
            name = positional[i].name
        elif var_pos is not None:
            name = f"{var_pos}[{i - len(positional)}]"
        else:
            name = f"arg{i}"
        out.append((name, value, i in nums or (i - n) in nums, "positional"))
    for key, value in call.kwargs.items():
        name = key if key in named or var_kw is None else f"{var_kw}[{key!r}]"
        out.append((name, value, key in call.static_argnames, "keyword"))
    return out, n


def _donated(call: internals.JitCall, index: int, name: str, passed: str) -> bool:
    if passed == "positional":
        return index in call.donate_argnums
    return name in call.donate_argnames


def signature_of(call: internals.JitCall,
                 is_static_leaf: Callable[[Any], bool] | None = None) -> Signature:
    """The call's signature; ``is_static_leaf``: the leaves a jit-like wrapper holds
    static (compared by value), for a call made through one (``eqx.filter_jit``)."""
    args = []
    named, _ = _arg_names(call)
    for index, (name, value, static, passed) in enumerate(named):
        if static:
            args.append(ArgSig(name, True, passed, value))
            continue
        statics: tuple[tuple[str, Any], ...] = ()
        try:
            flat, treedef = jax.tree_util.tree_flatten_with_path(value)
            if is_static_leaf is not None:
                statics = tuple((sys.intern(jax.tree_util.keystr(p)), v) for p, v in flat
                                if is_static_leaf(v))
                flat = [(p, v) for p, v in flat if not is_static_leaf(v)]
            leaves = tuple((sys.intern(jax.tree_util.keystr(p)), _leaf_of(v)) for p, v in flat)
        except Exception:  # an odd object JAX will reject anyway
            treedef, leaves = None, (("", _leaf_of(value)),)
        args.append(ArgSig(name, False, passed, None, treedef, leaves,
                           _donated(call, index, name, passed), statics))
    return Signature(tuple(args), context_snapshot())


def context_snapshot() -> tuple[tuple[str, Any], ...]:
    """Configuration and context managers that are part of JAX's cache key."""
    out = []
    try:  # jax.sharding.set_mesh / use_abstract_mesh
        mesh = jax.sharding.get_abstract_mesh()
        out.append(("mesh", None if mesh.empty else f"{dict(mesh.shape)}"))
    except Exception:
        pass
    for name in CONTEXT_OPTIONS:
        try:
            value = getattr(jax.config, name)
        except Exception:
            continue
        out.append((name, value if isinstance(value, (bool, int, float, str, type(None)))
                    else short_repr(value)))
    return tuple(out)


# ====================================================================== causes
@dataclass(frozen=True)
class Cause:
    """Why a call missed the cache: ``path`` is the argument's own name (with the pytree
    path inside it), ``before``/``after`` the value on the previous compile and now."""

    kind: str
    path: str
    before: Any = None
    after: Any = None
    axis: int | None = None  # for shape changes along one axis
    # for pytree_structure: "node" (another container type), "children" (other keys or
    # number of children), "static_field" (a static field of ``owner``, a registered
    # dataclass), "static_data" (other auxiliary data of a custom node of type ``owner``)
    # for static_value: "hash" (equal to the compiled value, hashed differently) or
    # "identity" (a new object of a class compared by identity); for new_function_object:
    # the kind of the new object ("partial", "method", "closure", ...), ``owner`` where it
    # was created and ``note`` what it is, in words
    detail: str | None = None
    owner: str | None = None
    note: str | None = None

    def __str__(self) -> str:
        p, b, a = f"`{self.path}`", self.before, self.after
        k = self.kind
        if k == "first_call":
            return f"first call of {p}"
        if k == "shape":
            where = f" on axis {self.axis} ({b[self.axis]} → {a[self.axis]})" if self.axis is not None else ""
            return f"{p} changed shape {_shape(b)} → {_shape(a)}{where}"
        if k == "dtype":
            return f"{p} changed dtype {b} → {a}"
        if k == "weak_type":
            what = {True: "a Python scalar (weakly typed)", False: "a typed array/scalar"}
            return f"{p} was {what.get(b, b)} and is now {what.get(a, a)}"
        if k == "static_value":
            if self.detail == "hash":
                return (f"static argument {p} is equal to the compiled value ({short_repr(a)}) "
                        f"but hashes differently: {self.owner} hashes by identity")
            if self.detail == "made_again":
                return (f"static argument {p} is a new {self.owner} made again (new function "
                        "objects with the same code): it never equals the compiled one")
            if self.detail == "identity":
                return (f"static argument {p} is a new {self.owner} object ({short_repr(a)}); "
                        f"{self.owner} has no __eq__, so it never equals the compiled one")
            return f"static argument {p} changed {short_repr(b)} → {short_repr(a)}"
        if k == "pytree_structure":
            if b is None:
                return f"{p} is new (the pytree gained it: {a})"
            if a is None:
                return f"{p} is gone (the pytree lost it: was {b})"
            if self.detail == "static_field":
                return f"static field {p} of {self.owner} changed {b} → {a}"
            if self.detail == "static_data":
                return f"the static (auxiliary) data of {p}, a {self.owner} node, changed {b} → {a}"
            if self.detail == "children":
                return f"{p} changed its entries {b} → {a}"
            if self.detail == "node":
                return f"{p} changed container {b} → {a}"
            return f"the pytree structure of {p} changed {b} → {a}"
        if k == "new_function_object":
            if self.note:
                verb = "defined" if self.detail == "closure" or self.before is None else "created"
                where = f", {verb} at {self.owner}" if self.owner else ""
                return f"{p} is {self.note}{where}: not the object compiled before"
            return f"{p} is a new function object with the same code (object #{a}, was #{b})"
        if k == "arg_count":
            if b is None:
                return f"argument {p} is new ({a})"
            if a is None:
                return f"argument {p} is no longer passed"
            return f"{p} is now passed as {a} (was {b})"
        if k in ("sharding", "device"):
            return f"{p} moved: {b} → {a}"
        if k == "commitment":
            return f"{p} was {b} and is now {a} (committed and uncommitted inputs compile apart)"
        if k == "donation":
            return (f"{p} is donated now (donate_argnums) and was not at the compiled call" if a
                    else f"{p} was donated (donate_argnums) at the compiled call and is not now")
        if k == "context":
            return f"config {self.path} changed {b!r} → {a!r}"
        if k == "previous_error":
            return f"the previous trace of {p} failed ({b}) and was not cached"
        if self.detail == "unreadable":
            return (f"jaxviz could not read the arguments of this call of {p} ({self.before}), "
                    "so it could not compare them with the compiled ones")
        return (f"no difference found for {p} since an earlier compile (compared {COMPARED}): "
                "was JAX's cache cleared, or full?")

    def to_json(self) -> dict[str, Any]:
        out = {"kind": self.kind, "path": self.path, "before": _json_safe(self.before),
               "after": _json_safe(self.after), "axis": self.axis, "text": str(self)}
        if self.detail is not None:
            out.update(detail=self.detail, owner=self.owner)
        if self.note is not None:
            out["note"] = self.note
        return out


# What a signature holds (the unknown cause says it all matched).
COMPARED = ("the function object, each argument's shape, dtype, weak type, static value "
            "(== and hash), pytree structure, placement and donation, and JAX's config")


def _shape(s: Any) -> str:
    if isinstance(s, tuple):
        return "(" + ", ".join(map(str, s)) + ("," if len(s) == 1 else "") + ")"
    return str(s)


def _short_structure(treedef: Any) -> str:
    """``tuple (*, *)``, ``list [*, *]``, ``Batch(*, *)``: the container and its layout."""
    if treedef is None:
        return "?"
    text = str(treedef)
    if text.startswith("PyTreeDef(") and text.endswith(")"):
        text = text[len("PyTreeDef("):-1]
    try:
        kind = treedef.node_data()[0].__name__
    except Exception:
        kind = None
    text = f"{kind} {text}" if kind and not text.startswith(kind) else text
    return text if len(text) <= 60 else text[:59] + "…"


# ---------------------------------------------------------------------- treedef diff
class _Hole:
    """A placeholder leaf, to rebuild a treedef's containers and read their child keys."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "*"


def _rebuild(treedef: Any) -> Any:
    try:
        return treedef.unflatten([_Hole() for _ in range(treedef.num_leaves)])
    except Exception:  # a custom unflatten that checks its leaves
        return _MISSING


def _one_level(treedef: Any, obj: Any) -> list[tuple[str, Any, Any]] | None:
    """[(key text, key, child object)] of one node, in flattening order, or None."""
    if obj is _MISSING:
        return None
    try:
        flat, _ = jax.tree_util.tree_flatten_with_path(obj, is_leaf=lambda y: y is not obj)
    except Exception:
        return None
    if len(flat) != len(treedef.children()) or any(len(p) != 1 for p, _ in flat):
        return None
    return [(jax.tree_util.keystr(p), p[0], child) for p, child in flat]


def _node_text(treedef: Any) -> str:
    data = treedef.node_data()
    if data is None:
        return "an array leaf"
    if data[0] is type(None):
        return "None"
    return _short_structure(treedef)


def _entries_text(keys: list[str]) -> str:
    if not keys:
        return "none"
    return ", ".join(keys[:8]) + (f", … {len(keys) - 8} more" if len(keys) > 8 else "")


def _type_name(t: Any) -> str:
    return getattr(t, "__name__", None) or type(t).__name__


def _value_text(value: Any) -> str:
    """A short text of a value; functions with their address (closures made again are
    equal in name, not in identity)."""
    if inspect.isfunction(value) or inspect.ismethod(value) or inspect.isbuiltin(value):
        name = getattr(value, "__qualname__", None) or getattr(value, "__name__", "?")
        return f"<function {name.split('.<locals>.')[-1]} at {id(value):#x}>"
    return short_repr(value)


def _items(value: Any) -> list[tuple[str, Any]] | None:
    """(label, part) of a small container, to point at the part that differs."""
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return [(f"{f}=", v) for f, v in zip(value._fields, value)]
    if isinstance(value, (tuple, list)) and len(value) <= 64:
        return [("", v) for v in value]
    if isinstance(value, dict) and len(value) <= 64:
        return [(f"{k!r}: ", v) for k, v in value.items()]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [(f"{f.name}=", getattr(value, f.name, None)) for f in dataclasses.fields(value)]
    return None


def _pair_texts(a: Any, b: Any, depth: int = 3) -> tuple[str, str]:
    """Texts of two unequal values that show where they differ (both sides differ)."""
    if depth and type(a) is type(b):
        ia, ib = _items(a), _items(b)
        if ia is not None and ib is not None and [k for k, _ in ia] == [k for k, _ in ib]:
            for i, ((label, va), (_, vb)) in enumerate(zip(ia, ib)):
                if _same(va, vb):
                    continue
                sa, sb = _pair_texts(va, vb, depth - 1)
                head = "…, " if i else ""
                tail = ", …" if i < len(ia) - 1 else ""
                if isinstance(a, dict):
                    open_, close = "{", "}"
                elif isinstance(a, list):
                    open_, close = "[", "]"
                elif isinstance(a, tuple) and not hasattr(a, "_fields"):
                    open_, close = "(", ")"
                else:
                    open_, close = type(a).__name__ + "(", ")"
                return (f"{open_}{head}{label}{sa}{tail}{close}",
                        f"{open_}{head}{label}{sb}{tail}{close}")
    sa, sb = _value_text(a), _value_text(b)
    if sa == sb:  # equal-looking, not equal: a new object
        sa, sb = f"{sa} (object {id(a):#x})", f"{sb} (object {id(b):#x})"
    return sa, sb


def _static_field_names(node_type: Any, aux: Any, keys: list[tuple[str, Any, Any]]) -> list[str] | None:
    """The static (meta) field names of a registered dataclass node (flax.struct,
    jax.tree_util.register_dataclass), in the order of its auxiliary data."""
    if not (dataclasses.is_dataclass(node_type) and isinstance(aux, tuple)):
        return None
    data = {getattr(k, "name", None) for _, k, _ in keys}
    meta = [f.name for f in dataclasses.fields(node_type) if f.name not in data]
    return meta if len(meta) == len(aux) else None


def _library_static_fields(node_type: Any, aux: Any) -> list[tuple[str, Any]] | None:
    """A library node's static fields by name (an ``nnx.Module``'s attributes, an
    ``eqx.Module``'s ``eqx.field(static=True)``), from its auxiliary data."""
    for adapter in (flax_nnx, equinox):
        fields = adapter.static_fields(node_type, aux)
        if fields is not None:
            return fields
    return None


def _first_node_difference(ta: Any, oa: Any, tb: Any, ob: Any, path: str, depth: int = 0
                           ) -> tuple[str, str, Any, Any, str | None] | None:
    """(path, detail, before, after, owner) at the first node where two treedefs differ:
    node type, number or keys of children, then auxiliary (static) data, depth first."""
    na, nb = ta.node_data(), tb.node_data()
    if na is None and nb is None:
        return None
    if na is None or nb is None or na[0] is not nb[0]:
        return path, "node", _node_text(ta), _node_text(tb), None
    (node_type, aux_a), (_, aux_b) = na, nb
    ka, kb = _one_level(ta, oa), _one_level(tb, ob)
    ca, cb = ta.children(), tb.children()
    names_a = [k for k, _, _ in ka] if ka is not None else [f"[{i}]" for i in range(len(ca))]
    names_b = [k for k, _, _ in kb] if kb is not None else [f"[{i}]" for i in range(len(cb))]
    if len(ca) != len(cb) or names_a != names_b:
        return path, "children", _entries_text(names_a), _entries_text(names_b), None
    if not _same(aux_a, aux_b):
        owner = _type_name(node_type)
        if _same_code(aux_a, aux_b):  # jax.tree_util.Partial over a closure made again
            return path, "new_function", aux_a, aux_b, owner
        named_a, named_b = _library_static_fields(node_type, aux_a), _library_static_fields(node_type, aux_b)
        if named_a is not None and named_b is not None and [n for n, _ in named_a] == [n for n, _ in named_b]:
            for (fname, va), (_, vb) in zip(named_a, named_b):
                if not _same(va, vb):
                    return (path + "." + fname, "static_field", *_pair_texts(va, vb), owner)
        fields = _static_field_names(node_type, aux_a, kb or [])
        if fields is not None and isinstance(aux_b, tuple) and len(aux_b) == len(fields):
            for fname, va, vb in zip(fields, aux_a, aux_b):
                if not _same(va, vb):
                    return (path + "." + fname, "static_field", *_pair_texts(va, vb), owner)
        return (path, "static_data", *_pair_texts(aux_a, aux_b), owner)
    if depth > 200:
        return None
    for i, (sa, sb) in enumerate(zip(ca, cb)):
        found = _first_node_difference(sa, ka[i][2] if ka else _MISSING, sb,
                                       kb[i][2] if kb else _MISSING, path + names_b[i], depth + 1)
        if found is not None:
            return found
    return None


def _structure_cause(name: str, old: Any, new: Any) -> Cause:
    """The first node where two pytree structures of argument ``name`` differ."""
    found = None
    if old is not None and new is not None:
        try:
            found = _first_node_difference(old, _rebuild(old), new, _rebuild(new), "")
        except Exception:
            found = None
    if found is None:
        return Cause("pytree_structure", name, _short_structure(old), _short_structure(new))
    path, detail, before, after, owner = found
    if detail == "new_function":
        return _function_in_tree_cause(name + path, after, owner)
    return Cause("pytree_structure", name + path, before, after, detail=detail, owner=owner)


def _same_code(a: Any, b: Any) -> bool:
    """Two distinct Python functions with the same code: one made again."""
    ca, cb = getattr(a, "__code__", None), getattr(b, "__code__", None)
    return a is not b and ca is not None and cb is not None and \
        original_code(ca) is original_code(cb)


def _function_in_tree_cause(path: str, fun: Any, owner: str) -> Cause:
    """A pytree node (``jax.tree_util.Partial``, a module's static field) holds a function
    made again: which one, and where it is defined."""
    code = fun.__code__
    qualname = getattr(fun, "__qualname__", code.co_name)
    what = "a jax.tree_util.Partial" if owner == "Partial" else f"a {owner}"
    if "<locals>" in qualname:
        parent = qualname.split(".<locals>.")[-2].split(".")[-1]
        note = (f"{what} over a new closure `{fun.__name__}`, made again by a new call of "
                f"`{parent}`")
    else:
        note = f"{what} over a new function object `{fun.__name__}` (the same code)"
    return Cause("new_function_object", path, None, None,
                 detail="tree_partial" if owner == "Partial" else "closure",
                 owner=str(_site(code.co_filename, code.co_firstlineno)), note=note)


def diff(old: Signature, new: Signature) -> list[Cause]:
    """Every difference between two call signatures, as causes, in argument order."""
    causes: list[Cause] = []
    for (name, a), (name2, b) in zip(old.context, new.context):
        if name == name2 and not _same(a, b):
            causes.append(Cause("context", name, a, b))
    olds = {a.name: a for a in old.args}
    news = {a.name: a for a in new.args}
    for arg in old.args:
        if arg.name not in news:
            causes.append(Cause("arg_count", arg.name, arg.text(), None))
    for arg in new.args:
        prev = olds.get(arg.name)
        if prev is None:
            causes.append(Cause("arg_count", arg.name, None, arg.text()))
            continue
        if prev.passed != arg.passed:
            causes.append(Cause("arg_count", arg.name, prev.passed, arg.passed))
        if prev.static or arg.static:
            if prev.static != arg.static or not _same(prev.value, arg.value):
                causes.append(_static_cause(arg.name, prev.value, arg.value))
            elif _hash(prev.value) != _hash(arg.value):
                causes.append(Cause("static_value", arg.name, _plain(prev.value), _plain(arg.value),
                                    detail="hash", owner=type(arg.value).__name__))
            continue
        if prev.donated != arg.donated:
            causes.append(Cause("donation", arg.name, prev.donated, arg.donated))
        causes += _diff_traced(arg.name, prev, arg)
        if prev.statics or arg.statics:
            causes += _diff_statics(arg.name, prev.statics, arg.statics)
    return causes


def _diff_statics(name: str, before: tuple[tuple[str, Any], ...],
                  after: tuple[tuple[str, Any], ...]) -> list[Cause]:
    """Leaves a wrapper holds static (``model.step_count``): changed values. Leaves that
    appear or go are told by the structure diff."""
    old = dict(before)
    causes = []
    for path, value in after:
        prev = old.get(path, _MISSING)
        if prev is _MISSING:
            continue
        if not _same(prev, value):
            causes.append(_static_cause(name + path, prev, value))
        elif _hash(prev) != _hash(value):
            causes.append(Cause("static_value", name + path, _plain(prev), _plain(value),
                                detail="hash", owner=type(value).__name__))
    return causes


def _hash(value: Any) -> int | None:
    try:
        return hash(value)
    except Exception:
        return None


def _made_again(a: Any, b: Any, depth: int = 2) -> bool:
    """``b`` is ``a`` made again: the same code in new function objects (a closure, or a
    tuple of them such as an optax GradientTransformation), equal in everything else."""
    if _same_code(a, b):
        return True
    if depth and type(a) is type(b) and isinstance(a, tuple) and len(a) == len(b) and a:
        pairs = [(x, y) for x, y in zip(a, b) if not _same(x, y)]
        return bool(pairs) and all(_made_again(x, y, depth - 1) for x, y in pairs)
    return False


def _static_cause(name: str, before: Any, after: Any) -> Cause:
    """A static value that changed; a new object of a class without ``__eq__`` (compared
    by identity) is told apart from a real change of value."""
    cls = type(after)
    if type(before) is cls and _made_again(before, after):
        return Cause("static_value", name, _plain(before), _plain(after), detail="made_again",
                     owner=cls.__name__)
    if (type(before) is cls and cls.__eq__ is object.__eq__ and before is not after
            and not inspect.isroutine(after) and short_repr(before) == short_repr(after)):
        return Cause("static_value", name, _plain(before), _plain(after), detail="identity",
                     owner=cls.__name__)
    return Cause("static_value", name, _plain(before), _plain(after))


def _diff_traced(name: str, prev: ArgSig, arg: ArgSig) -> list[Cause]:
    causes: list[Cause] = []
    if prev.leaves is arg.leaves and prev.structure == arg.structure:
        return causes
    before = dict(prev.leaves)
    if prev.structure != arg.structure:
        after = dict(arg.leaves)
        gained = [p for p in after if p not in before]
        lost = [p for p in before if p not in after]
        for p in gained:
            causes.append(Cause("pytree_structure", name + p, None, after[p].text))
        for p in lost:
            causes.append(Cause("pytree_structure", name + p, before[p].text, None))
        if not gained and not lost:  # same leaf paths: other containers, static data, ...
            causes.append(_structure_cause(name, prev.structure, arg.structure))
    for path, leaf in arg.leaves:
        old = before.get(path)
        if old is None or old is leaf:
            continue
        full = name + path
        a, b = old.aval, leaf.aval
        if a.shape != b.shape:
            axis = None
            if len(a.shape) == len(b.shape):
                changed = [i for i, (x, y) in enumerate(zip(a.shape, b.shape)) if x != y]
                axis = changed[0] if len(changed) == 1 else None
            causes.append(Cause("shape", full, a.shape, b.shape, axis))
        if a.dtype != b.dtype:
            causes.append(Cause("dtype", full, a.dtype, b.dtype))
        elif a.weak_type != b.weak_type:
            causes.append(Cause("weak_type", full, a.weak_type, b.weak_type))
        pa, pb = old.placement, leaf.placement
        if is_committed(pa) and is_committed(pb) and pa != pb:
            kind = "device" if pa.startswith("device ") and pb.startswith("device ") else "sharding"
            causes.append(Cause(kind, full, pa.removeprefix("device "), pb.removeprefix("device ")))
        elif is_committed(pa) != is_committed(pb):
            causes.append(Cause("commitment", full, placement_words(pa), placement_words(pb)))
    return causes


# ====================================================================== events
@dataclass(eq=False)
class CompileEvent:
    """One trace (and usually lowering and backend compile) of a jitted function."""

    function: FunctionInfo
    call_site: Site | None
    signature: Signature | None
    causes: list[Cause]
    count: int  # the n-th compile of this function seen by jaxviz
    time: float  # wall clock (time.time()) at the start
    kind: str = "call"  # "call" | "aot" (.trace/.lower) | "compile" (no new trace)
    durations: dict[str, float | None] = field(
        default_factory=lambda: {"trace": None, "lower": None, "compile": None})
    suggestion: str | None = None
    error: str | None = None
    thread: str = ""
    more_causes: int = 0  # causes left out beyond MAX_CAUSES
    note: str | None = None
    done: bool = False
    jax_name: str = ""  # the name JAX's monitoring events use (fun_name)

    @property
    def name(self) -> str:
        return self.function.name

    @property
    def total_seconds(self) -> float:
        return sum(v for v in self.durations.values() if v)

    def reason(self) -> str:
        if self.kind == "compile" and not self.causes:
            return self.note or "compiled without a new trace"
        if not self.causes or self.causes[0].kind == "first_call":
            return "first compile seen"
        texts = [str(c) for c in self.causes[:4]]
        more = len(self.causes) - 4 + self.more_causes
        if more > 0:
            texts.append(f"{more} more")
        return "; ".join(texts)

    def message(self) -> str:
        nth = "for the first time" if self.count == 1 else f"for the {_ordinal(self.count)} time"
        verb = {"aot": "traced ahead of time", "compile": "compiled"}.get(self.kind, "compiled")
        where = f" at {self.call_site}" if self.call_site else ""
        head = f"`{self.function.name}`"
        if self.function.defined:
            head += f" (defined at {self.function.defined})"
        costs = ", ".join(f"{k} {fmt_seconds(v)}" for k, v in self.durations.items() if v is not None)
        if self.error:
            return f"{head} failed to trace{where}: {self.error}" + (f" ({costs})" if costs else "") + "."
        if self.kind == "compile" and not self.causes:
            return f"{head} compiled{where} {self.note or 'without a new trace'}" + (f" ({costs})" if costs else "") + "."
        because = "" if self.count == 1 and (not self.causes or self.causes[0].kind == "first_call") \
            else f" because {self.reason()}"
        return f"{head} {verb} {nth}{where}{because}" + (f" ({costs})" if costs else "") + "."

    def __str__(self) -> str:
        return self.message()

    def __repr__(self) -> str:
        return f"<CompileEvent {self.message()}>"

    def to_json(self) -> dict[str, Any]:
        """The bridge's ``compile`` payload (plus a few extra keys)."""
        return {
            "function": self.function.name,
            "defined": str(self.function.defined) if self.function.defined else None,
            "call_site": str(self.call_site) if self.call_site else None,
            "count": self.count,
            "causes": [c.to_json() for c in self.causes],
            "message": self.message(),
            "suggestion": self.suggestion,
            "durations": dict(self.durations),
            "time": self.time,
            "kind": self.kind,
            # what the panel counts as a recompile: not a function's first compile
            "recompile": self.count > 1 and not (self.causes and self.causes[0].kind == "first_call"),
            "error": self.error,
            "signature": self.signature.describe() if self.signature else None,
            "thread": self.thread,
        }


# ====================================================================== suggestions
def _suggest(event: CompileEvent, history: _Object | None) -> str | None:
    causes = event.causes
    if not causes:
        return None
    by_kind: dict[str, list[Cause]] = {}
    for c in causes:
        by_kind.setdefault(c.kind, []).append(c)
    name = event.function.name
    if "new_function_object" in by_kind and by_kind["new_function_object"][0].detail:
        return _suggest_new_object(by_kind["new_function_object"][0], name)
    if "new_function_object" in by_kind:
        return (f"`{name}` was created again (a `jax.jit(...)`, lambda or nested def made "
                "inside a loop or a re-run cell): JAX's cache belongs to the function object, "
                "so every new object compiles again. Create the jitted function once, outside "
                "the loop, and reuse it.")
    if "previous_error" in by_kind:
        return None
    if "context" in by_kind:
        c = by_kind["context"][0]
        return (f"`{c.path}` is part of the cache key and changed ({c.before!r} → {c.after!r}). "
                "Set configuration once at start-up rather than around calls.")
    if "static_value" in by_kind and by_kind["static_value"][0].detail:
        return _suggest_static_identity(by_kind["static_value"][0])
    if "static_value" in by_kind:
        c = by_kind["static_value"][0]
        seen = len(history.static_values.get(c.path, ())) if history else 0
        so_far = f" ({seen} values so far)" if seen > 2 else ""
        return (f"`{c.path}` is a static argument: each new value compiles a new program{so_far}. "
                "That is fine for a few values (a mode flag); if it changes every step, pass it "
                f"as a traced argument instead (drop it from static_argnums/static_argnames and "
                "use jnp.where / lax.cond / lax.fori_loop on it).")
    if "pytree_structure" in by_kind:
        c = by_kind["pytree_structure"][0]
        if c.detail in ("static_field", "static_data"):
            return _suggest_static_data(c, event.signature)
        if c.detail == "node":
            return (f"`{c.path}` arrived as another kind of container ({c.before} → {c.after}): a "
                    "different pytree structure is a different program. Pass the same container "
                    "types every call.")
        if c.before is None:
            what = f"gained `{c.path}`"
        elif c.after is None:
            what = f"lost `{c.path}`"
        else:
            what = f"changed structure at `{c.path}`"
        return (f"The argument {what}: a different pytree structure is a different program. "
                "Create every entry up front (e.g. with zeros) so the structure stays fixed.")
    if "arg_count" in by_kind:
        return ("Call the function with the same arguments, passed the same way, each time "
                "(always or never the optional ones; positional or keyword, not both).")
    if "commitment" in by_kind:
        c = by_kind["commitment"][0]
        return (f"`{c.path}` was {c.before} and is now {c.after}: JAX compiles committed "
                "inputs (jax.device_put to a device) and uncommitted ones (numpy arrays, "
                "arrays JAX placed by default) separately. Place it the same way every call: "
                "jax.device_put every input (once, before the loop), or none.")
    if "donation" in by_kind:
        c = by_kind["donation"][0]
        return (f"`{c.path}` is donated by one jitted version of `{name}` and not by the "
                "other (jax.jit with and without donate_argnums): each compiles its own "
                "program. Jit the function once, with the donation you want, and call that.")
    if "device" in by_kind or "sharding" in by_kind:
        c = (by_kind.get("device") or by_kind["sharding"])[0]
        return (f"`{c.path}` arrived with another placement ({c.before} → {c.after}). Put inputs "
                "on the same device/sharding every time (jax.device_put once, before the loop).")
    if "shape" in by_kind:
        return _suggest_shape(by_kind["shape"], history, event.call_site)
    if "dtype" in by_kind or "weak_type" in by_kind:
        c = (by_kind.get("dtype") or by_kind["weak_type"])[0]
        leaf = _leaf_at(event.signature, c.path)
        python_scalar = c.kind == "weak_type" or (leaf is not None and leaf.aval.weak_type)
        arg = c.path  # the leaf itself, e.g. `s.opt_state.hyperparams['learning_rate']`
        if c.kind == "dtype" and python_scalar:
            return (f"`{c.path}` is a Python number that was {_py_kind(c.before)} and is now "
                    f"{_py_kind(c.after)}: each kind compiles its own program. Pass the same "
                    f"kind every call (e.g. `float({arg})`, or `2.0` rather than `2`), or cast once "
                    f"with `jnp.asarray({arg}, jnp.{c.after})`.")
        if c.kind == "dtype":
            return (f"`{c.path}` changed dtype {c.before} → {c.after}. Cast it once, the same way "
                    f"every call, e.g. `jnp.asarray({arg}, jnp.{c.before})`.")
        what = ("became a Python scalar (weakly typed)" if c.after
                else "became a typed array/scalar (was a Python scalar)")
        return (f"`{c.path}` {what}: weak and strong types compile different programs. Pass the "
                f"same kind every call, e.g. always `jnp.asarray({arg}, jnp.{leaf.aval.dtype if leaf else 'float32'})`.")
    if "unknown" in by_kind:
        return ("jaxviz found this call equal to an earlier compile in everything it compares "
                f"({COMPARED}): the cache was probably cleared (jax.clear_caches(), "
                "f.clear_cache()) or evicted.")
    return None


def _suggest_static_identity(c: Cause) -> str:
    """A static value that is a new object each call, found equal or not by identity."""
    cls = c.owner
    if c.detail == "made_again":
        optax = (" For optax, build the optimizer once; to change a hyperparameter, use "
                 "`optax.inject_hyperparams(optax.adam)(learning_rate=...)` and change "
                 "`opt_state.hyperparams['learning_rate']`." if cls.startswith("GradientTransformation")
                 else "")
        return (f"`{c.path}` is a {cls} made again (e.g. `optax.adam(...)` or a closure called "
                "again in the loop): its functions are new objects, so JAX never finds it in "
                f"its cache. Create it once, before the loop, and pass that same object.{optax}")
    if c.detail == "hash":
        why = (f"`{c.path}` is equal (==) to the value compiled before, but {cls}'s __hash__ "
               "is by identity (object.__hash__), and JAX finds static values by hash: every "
               f"new {cls} object compiles again.")
    else:
        why = (f"`{c.path}` is a new {cls} object each call, and {cls} has no __eq__: it is "
               "compared by identity, so it never matches the compiled one.")
    return (f"{why} Give {cls} value equality and a matching hash: make it "
            f"`@dataclasses.dataclass(frozen=True)` (or a NamedTuple), or define "
            f"`__eq__` and `__hash__` from the same fields, e.g. "
            f"`def __hash__(self): return hash(dataclasses.astuple(self))`; or create the "
            f"{cls} once and pass the same object.")


def _suggest_new_object(c: Cause, name: str) -> str:
    """A new function object of a known kind: how to keep one."""
    fix = {
        "partial": (f"Build the partial once, outside the loop, and reuse it; or jit `{name}` "
                    "itself and pass the bound values as arguments (static_argnames for "
                    "Python values)."),
        "tree_partial": ("A jax.tree_util.Partial's function is static: a closure made "
                         "again is a new program. Define the function once (not inside "
                         "the loop or a helper) and wrap that same function."),
        "method": (f"Jit the method once on one object and reuse it; or jit the unbound "
                   f"function and pass the object as an argument (`jax.jit(type(obj).{name})"
                   "(obj, x)`, the object a pytree such as an eqx.Module, or static and hashable)."),
        "method_object": (f"Jit the bound method once (`{name} = jax.jit(obj.{name})` before "
                          "the loop) and call that object every time."),
        "closure": (f"`{name}` is made by each call of its enclosing function: define it once "
                    "(module level) and pass what it closes over as arguments, or make the "
                    "jitted function once and keep it."),
        "lambda": ("Define the function once (a `def` at module level or before the loop) "
                   "and jit it once."),
        "cell": (f"Re-running the cell defined `{name}` again: its jitted versions compile "
                 "again. That is expected once per re-run; if it happens in a loop, define "
                 "the function outside it."),
    }.get(c.detail or "")
    head = f"JAX's compile cache belongs to the function object: `{c.path}` is {c.note}."
    return f"{head} {fix}" if fix else (f"{head} Create the jitted function once and reuse it.")


def _suggest_static_data(c: Cause, sig: Signature | None) -> str:
    """A static field (or a custom node's auxiliary data) changed."""
    what = (f"`{c.path}` is a static field of {c.owner} (not a pytree leaf)"
            if c.detail == "static_field"
            else f"`{c.path}` is a {c.owner} whose static (auxiliary) pytree data changed")
    text = f"{what}: it is part of the compile key (compared with ==), so each new value compiles a new program"
    if any(m in f"{c.before}{c.after}" for m in ("(object 0x", "<function ", " object at 0x")):
        text += (", and so does a new object that is not equal to the old one (a re-created "
                 "optax transformation, a new closure or lambda)")
    text += (". Keep it fixed across steps (create it once and reuse the same object); if the "
             "value has to change, move it into the arrays")
    if "GradientTransformation" in f"{c.before}{c.after}":
        arg = _arg_of(sig, c.path)
        hyper = [p for p, _ in (arg.leaves if arg is not None else ()) if ".hyperparams[" in p]
        if hyper:
            names = ", ".join(f"`{arg.name}{p}`" for p in hyper[:3])
            text += (f": change the hyperparameter arrays ({names}, e.g. with "
                     "`jnp.asarray(new_value, jnp.float32)`) instead of creating a new "
                     "transformation object.")
        else:
            text += (": build the optimizer once with `optax.inject_hyperparams`, e.g. "
                     "`tx = optax.inject_hyperparams(optax.adam)(learning_rate=1e-3)`, and change "
                     "`opt_state.hyperparams['learning_rate']` (an array) instead of creating a "
                     "new transformation object.")
    else:
        text += " (a data field holding a jnp array, passed as a traced argument)."
    return text


def _arg_of(sig: Signature | None, path: str) -> ArgSig | None:
    if sig is None:
        return None
    for arg in sig.args:
        if not arg.static and (path == arg.name or path.startswith((arg.name + ".", arg.name + "["))):
            return arg
    return None


def _leaf_at(sig: Signature | None, path: str) -> Leaf | None:
    if sig is None:
        return None
    arg = _arg_of(sig, path)
    if arg is not None:
        rest = path[len(arg.name):]
        for p, leaf in arg.leaves:
            if p == rest:
                return leaf
    return None


def _py_kind(dtype: Any) -> str:
    text = str(dtype)
    for prefix, name in (("int", "an int"), ("uint", "an int"), ("float", "a float"),
                         ("complex", "a complex"), ("bool", "a bool")):
        if text.startswith(prefix):
            return f"{name} ({text})"
    return text


def _suggest_shape(shape_causes: list[Cause], history: _Object | None, site: Site | None) -> str:
    axes = {c.axis for c in shape_causes}
    paths = ", ".join(f"`{c.path}`" for c in shape_causes[:3])
    if len(axes) == 1 and None not in axes:
        (axis,) = axes
        c = shape_causes[0]
        before, after = c.before[axis], c.after[axis]
        sizes = history.axis_sizes.get((c.path, axis), set()) if history else set()
        if len(sizes) > 3:
            return (f"{paths} changes size on axis {axis} ({len(sizes)} sizes so far): pad to a few "
                    "bucket sizes (e.g. the next power of two) and mask, so that only a handful "
                    "of programs compile.")
        before_site = history.last_site if history else None
        if site is not None and before_site is not None and \
                (site.file, site.line) != (before_site.file, before_site.line):
            return (f"{paths} has {after} on axis {axis} here ({site}) and had {before} at the "
                    f"compiled call ({before_site}): two call sites (or data sets) of different "
                    "sizes compile one program each. That is fine for a few sizes; to share one "
                    f"program, pad the inputs to one size (and mask the padding).")
        in_loop = site is not None and objects.line_in_loop(site.file, site.line)
        if after < before and in_loop:
            return (f"Ragged last batch: {paths} shrank on axis {axis} from {before} to {after}. "
                    f"Pad the last batch to {before} (and mask the padded rows), or drop the "
                    f"remainder (drop_last=True / use only len(data) // {before} * {before} items).")
        grew = "grew" if after > before else "shrank"
        return (f"{paths} {grew} on axis {axis} from {before} to {after}: each new size compiles a "
                "new program. Pad to a fixed size if it keeps changing.")
    return (f"{paths} changed shape: each new shape compiles a new program. Pad to fixed shapes "
            "if they keep changing.")


# ====================================================================== history
class _Object:
    """What jaxviz knows of one jit object (one JAX cache): its compiled signatures."""

    __slots__ = ("identity", "spec", "number", "signatures", "last_error", "static_values",
                 "axis_sizes", "last_site")

    def __init__(self, fun: Any, spec: Any, number: int) -> None:
        self.identity = objects.Identity(fun)
        self.spec = spec  # (static_argnums, static_argnames)
        self.number = number
        self.signatures: deque[Signature] = deque(maxlen=16)
        self.last_error: tuple[Signature, str] | None = None
        self.static_values: dict[str, set[str]] = {}
        self.axis_sizes: dict[tuple[str, int], set[int]] = {}
        self.last_site: Site | None = None  # where the latest compile was called from

    def is_(self, fun: Any, spec: Any) -> bool:
        # jax.jit(f) made again with the same f and options shares JAX's cache with the
        # first one: the same object for us too.
        return self.identity.is_(fun) and self.spec == spec

    def note(self, causes: list[Cause]) -> None:
        for c in causes:
            if c.kind == "static_value":
                vals = self.static_values.setdefault(c.path, set())
                if len(vals) < 1000:
                    vals.update((short_repr(c.before), short_repr(c.after)))
            elif c.kind == "shape" and c.axis is not None:
                sizes = self.axis_sizes.setdefault((c.path, c.axis), set())
                if len(sizes) < 1000:
                    sizes.update((c.before[c.axis], c.after[c.axis]))


class _Function:
    """All jit objects with the same code (e.g. a ``jit(lambda)`` re-created in a loop)."""

    __slots__ = ("info", "objects", "count", "numbers")

    def __init__(self, info: FunctionInfo) -> None:
        self.info = info
        self.objects: deque[_Object] = deque(maxlen=8)
        self.count = 0
        self.numbers = itertools.count(1)

    def object_for(self, fun: Any, spec: Any) -> tuple[_Object, _Object | None]:
        """(the object's history, the previously used object if this one is new)."""
        for obj in self.objects:
            if obj.is_(fun, spec):
                return obj, None
        previous = self.objects[-1] if self.objects else None
        obj = _Object(fun, spec, next(self.numbers))
        self.objects.append(obj)
        return obj, previous


_FUNCTIONS: OrderedDict[Any, _Function] = OrderedDict()  # by code identity, LRU
_MAX_FUNCTIONS = 4096


def _function_history(key: Any, info: FunctionInfo) -> _Function:
    fh = _FUNCTIONS.get(key)
    if fh is None:
        fh = _FUNCTIONS[key] = _Function(info)
        while len(_FUNCTIONS) > _MAX_FUNCTIONS:
            _FUNCTIONS.popitem(last=False)
    else:
        _FUNCTIONS.move_to_end(key)
    return fh


def _explain(fh: _Function, obj: _Object, previous: _Object | None, sig: Signature,
             call: internals.JitCall | None = None) -> list[Cause]:
    """Why ``sig`` missed: the diff with the previous compile of the same function. When
    an older cached signature explains the miss with strictly fewer changes (the other
    changes went back to a compiled value), that one is used."""
    name = fh.info.name
    if not obj.signatures:
        if previous is not None and (previous.signatures or previous.last_error):
            return [_new_object_cause(name, previous, obj, call)]
        if obj.last_error is None:
            return [Cause("first_call", name, None, str(sig))]
    last = obj.signatures[-1] if obj.signatures else None
    if obj.last_error is not None and (last is None or _same_key(obj.last_error[0], sig)):
        if _same_key(obj.last_error[0], sig):
            return [Cause("previous_error", name, obj.last_error[1], None)]
        last = obj.last_error[0]
    assert last is not None
    causes = diff(last, sig)
    if not causes:
        return [Cause("unknown", name)]
    keys = {(c.kind, c.path) for c in causes}
    best: list[Cause] | None = None
    for old in list(obj.signatures)[:-1]:
        alt = diff(old, sig)
        alt_keys = {(c.kind, c.path) for c in alt}
        if alt and alt_keys < keys and (best is None or len(alt) < len(best)):
            best = alt
    return best or causes


def _new_object_cause(name: str, previous: _Object, obj: _Object,
                      call: internals.JitCall | None) -> Cause:
    """Which object is new, what kind it is, and the line that made it."""
    if call is None:
        return Cause("new_function_object", name, previous.number, obj.number)
    try:
        new = objects.describe_new(call.fun, previous.identity.layers, call.caller, _ipython_cell)
    except Exception:  # never break the user's compile over a description
        return Cause("new_function_object", name, previous.number, obj.number)
    created = _site(*new.created) if new.created else None
    where = f"{created}{', inside a loop' if new.in_loop else ''}" if created else None
    return Cause("new_function_object", new.name, previous.number, obj.number,
                 detail=new.kind, owner=where, note=new.note)


def _same_key(a: Signature, b: Signature) -> bool:
    try:
        return a == b
    except Exception:
        return repr(a) == repr(b)


# ====================================================================== stale globals
@dataclass(frozen=True)
class StaleGlobal:
    """A global/closure value baked into a compiled function that has changed since."""

    function: str
    name: str
    source: str  # "global" | "closure"
    baked: str
    current: str
    message: str

    def __str__(self) -> str:
        return self.message

    def to_json(self) -> dict[str, Any]:
        return {"function": self.function, "name": self.name, "source": self.source,
                "baked": self.baked, "current": self.current, "message": self.message}


_SMALL = 10_000  # arrays up to this many elements are compared by value


class _Baked:
    """One value baked in at one trace, and where to read the name's current value."""

    __slots__ = ("name", "source", "where", "value", "ref", "copy", "tree", "text",
                 "last_obj", "last_stale", "last_leaves", "version", "reported", "message",
                 "message_for", "message_version")

    def __init__(self, name: str, source: str, where: Any, value: Any,
                 tree: Any = None) -> None:
        self.name, self.source, self.where = name, source, where
        self.text = short_repr(value)
        self.tree = tree  # for a container of numbers: its snapshot (_snapshot)
        self.value = value if is_python_scalar(value) else None
        self.ref = None
        self.copy = None
        if self.value is None and tree is None:
            try:
                self.ref = weakref.ref(value)
            except TypeError:
                self.value = value  # keep it: we cannot tell later otherwise
            if getattr(value, "size", _SMALL + 1) <= _SMALL:
                try:
                    self.copy = np.array(value)
                except Exception:
                    self.copy = None
        self.last_obj = value
        self.last_stale = False
        # A container's (structure, leaves, leaf snapshot) when it was last compared: while
        # the container and its leaves are the same objects, nothing is copied again.
        self.last_leaves: tuple[Any, tuple[Any, ...], _Leaves] | None = None
        if tree is not None:
            flat = _small_leaves(value)
            if flat is not None and flat[1] == tree[0] and len(flat[0]) == len(tree[1]):
                self.last_leaves = (tree[0], tuple(flat[0]), tree[1])
        self.version = 0  # counts the comparisons of a container that found it changed
        self.reported: str | None = None
        self.message: StaleGlobal | None = None  # for message_for, the current value
        self.message_for: Any = None
        self.message_version = 0

    def current(self) -> Any:
        if self.source == "closure":
            try:
                return self.where.cell_contents
            except ValueError:
                return _MISSING
        return self.where.get(self.name, _MISSING)

    def is_baked(self, value: Any) -> bool:
        if self.tree is not None:
            return _snapshot(value) == self.tree
        if self.value is not None or is_python_scalar(value):
            return self.value is not None and _same_scalar(self.value, value)
        if self.ref is not None and self.ref() is value:
            if self.copy is not None and isinstance(value, np.ndarray):  # mutated in place?
                return bool(np.array_equal(self.copy, value))
            return True
        if self.copy is not None and getattr(value, "shape", None) == self.copy.shape \
                and str(getattr(value, "dtype", "")) == str(self.copy.dtype):
            try:
                return bool(np.array_equal(np.asarray(value), self.copy))
            except Exception:
                return False
        return False

    def stale(self) -> tuple[bool, Any]:
        value = self.current()
        if value is _MISSING:
            return False, value
        if self.tree is not None:
            return self._tree_stale(value), value
        if value is self.last_obj and not isinstance(value, (np.ndarray, dict, list)):
            return self.last_stale, value  # the same immutable object as last time
        result = not self.is_baked(value)
        self.last_obj, self.last_stale = value, result
        return result, value

    def _tree_stale(self, value: Any) -> bool:
        """A tracked container: compared by identity first (the container and each leaf,
        numpy leaves also by value as they change in place); only when something changed is
        it snapshotted again (a device-to-host copy of each array) and compared by value."""
        if value is self.last_obj and self._same_leaves(value):
            return self.last_stale
        parts = _snapshot_parts(value)
        if parts is None:
            result, self.last_leaves = True, None
        else:
            treedef, leaves, copies = parts
            result = not ((treedef, copies) == self.tree)
            self.last_leaves = (treedef, tuple(leaves), copies)
        self.last_obj, self.last_stale = value, result
        self.version += 1
        return result

    def _same_leaves(self, value: Any) -> bool:
        if self.last_leaves is None:
            return False
        treedef, leaves, copies = self.last_leaves
        flat = _small_leaves(value)
        if flat is None or flat[1] != treedef or len(flat[0]) != len(leaves):
            return False
        for now, before, copy in zip(flat[0], leaves, copies):
            if now is not before:
                return False
            if isinstance(now, np.ndarray) and not (  # numpy arrays change in place
                    now.shape == copy.shape and now.dtype == copy.dtype
                    and np.array_equal(now, copy)):
                return False
        return True


_TREE_LEAVES = 64  # containers of numbers up to this many leaves are tracked


class _Leaves(tuple):
    """A snapshot's leaves; equal when every leaf is (arrays by value)."""

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, tuple) or len(self) != len(other):
            return False
        for a, b in zip(self, other):
            if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
                if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)
                        and a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b)):
                    return False
            elif not _same_scalar(a, b):
                return False
        return True

    __hash__ = tuple.__hash__


def _small_leaves(value: Any) -> tuple[list[Any], Any] | None:
    """(leaves, structure) of a small, non-empty dict/list/tuple, or None."""
    if not isinstance(value, (dict, list, tuple)) or not value:
        return None
    try:
        leaves, treedef = jax.tree_util.tree_flatten(value)
    except Exception:
        return None
    if not 0 < len(leaves) <= _TREE_LEAVES:
        return None
    return leaves, treedef


def _snapshot_parts(value: Any) -> tuple[Any, list[Any], _Leaves] | None:
    """(structure, leaves, their copies) of a small dict/list/tuple of numbers and small
    arrays, or None when ``value`` is not one."""
    flat = _small_leaves(value)
    if flat is None:
        return None
    leaves, treedef = flat
    out = []
    size = 0
    for leaf in leaves:
        if is_python_scalar(leaf):
            out.append(leaf)
        elif isinstance(leaf, (np.ndarray, np.generic, jax.Array)) and not isinstance(leaf, jax.core.Tracer):
            size += int(np.size(leaf))
            if size > _SMALL:
                return None
            out.append(np.array(leaf))
        else:
            return None
    return treedef, leaves, _Leaves(out)


def _snapshot(value: Any) -> Any:
    """(structure, leaves) of a small dict/list/tuple of numbers and small arrays, or None
    when ``value`` is not one (then it is not tracked: it is code or too big)."""
    parts = _snapshot_parts(value)
    return None if parts is None else (parts[0], parts[2])


def _same_scalar(a: Any, b: Any) -> bool:
    if not (is_python_scalar(a) and is_python_scalar(b)):
        return False
    try:
        return bool(a == b) and type(a) is type(b)
    except Exception:
        return False


class _Tracked:
    """Baked values of one live Python function object."""

    __slots__ = ("ref", "name", "baked")

    def __init__(self, fun: Any, name: str) -> None:
        self.ref = weakref.ref(fun)
        self.name = name
        self.baked: dict[str, list[_Baked]] = {}

    def add(self, fun: Any) -> None:
        try:
            found = captured_values(fun)
        except Exception:
            return
        closure = {}
        if getattr(fun, "__closure__", None):
            closure = dict(zip(fun.__code__.co_freevars, fun.__closure__))
        g = getattr(fun, "__globals__", {})
        for info, value in found:
            if info.source == "closure":
                where = closure.get(info.name)
                if where is None:
                    continue
            else:
                if g.get(info.name, _MISSING) is not value:
                    continue  # read by a called function of another module: not tracked
                where = g
            self._remember(info.name, info.source, where, value, None)
        self._add_containers(fun, closure, g)

    def _remember(self, name: str, source: str, where: Any, value: Any, tree: Any) -> None:
        entries = self.baked.setdefault(name, [])
        if any(e.is_baked(value) for e in entries):
            return
        entries.append(_Baked(name, source, where, value, tree))
        del entries[:-4]

    def _add_containers(self, fun: Any, closure: dict[str, Any], g: dict[str, Any]) -> None:
        """Dicts/lists/tuples of numbers the function reads (``cfg["lr"]``): baked in too,
        and often changed in place."""
        try:
            cv = inspect.getclosurevars(fun)
        except (TypeError, ValueError):
            return
        for source, mapping in (("closure", cv.nonlocals), ("global", cv.globals)):
            for name, value in mapping.items():
                tree = _snapshot(value)
                if tree is None:
                    continue
                where = closure.get(name) if source == "closure" else g
                if where is not None:
                    self._remember(name, source, where, value, tree)

    def check(self) -> Iterator[tuple[_Baked, Any]]:
        for entries in self.baked.values():
            for e in entries:
                stale, value = e.stale()
                if stale:
                    yield e, value


_TRACKED: dict[int, _Tracked] = {}


def _track(fun: Any, name: str) -> int | None:
    inner = None
    for f in _unwrap_chain(fun):
        if inspect.isfunction(f) and is_user_file(f.__code__.co_filename):
            inner = f
            break
    if inner is None:
        return None
    key = id(inner)
    tracked = _TRACKED.get(key)
    if tracked is None or tracked.ref() is not inner:
        tracked = _TRACKED[key] = _Tracked(inner, name)
        weakref.finalize(inner, _TRACKED.pop, key, None)
    tracked.add(inner)
    return key if tracked.baked else None


def _stale_message(t: _Tracked, b: _Baked, current: Any) -> StaleGlobal:
    what = "global" if b.source == "global" else "closure variable"
    cur = short_repr(current)
    msg = (f"`{t.name}` was compiled with {what} `{b.name} = {b.text}`; `{b.name}` is now {cur}, "
           f"and calls of `{t.name}` still use {b.text}. Pass `{b.name}` as an argument, or "
           f"re-create/clear the jitted function after changing it.")
    return StaleGlobal(t.name, b.name, b.source, b.text, cur, msg)


# ====================================================================== the log
@dataclass
class FunctionStats:
    """One row of ``Watch.summary()``."""

    function: str
    defined: str | None
    traces: int = 0
    compiles: int = 0
    trace_s: float = 0.0
    lower_s: float = 0.0
    compile_s: float = 0.0
    signatures: int = 0
    errors: int = 0
    causes: Counter = field(default_factory=Counter)  # (kind, path) → count

    @property
    def total_s(self) -> float:
        return self.trace_s + self.lower_s + self.compile_s

    def top_cause(self) -> str | None:
        for (kind, path), _ in self.causes.most_common():
            if kind != "first_call":
                return f"{kind} of `{path}`" if kind not in ("unknown",) else kind
        return None

    def to_json(self) -> dict[str, Any]:
        return {"function": self.function, "defined": self.defined, "traces": self.traces,
                "compiles": self.compiles, "trace_s": self.trace_s, "lower_s": self.lower_s,
                "compile_s": self.compile_s, "signatures": self.signatures,
                "errors": self.errors, "top_cause": self.top_cause()}


@dataclass
class Summary:
    """Per-function totals. ``summary["f"]`` → the row of function ``f``."""

    rows: list[FunctionStats]

    def __getitem__(self, key: int | str) -> FunctionStats:
        if isinstance(key, int):
            return self.rows[key]
        for r in self.rows:
            if r.function == key:
                return r
        raise KeyError(f"{key!r} was not compiled; compiled: {[r.function for r in self.rows]}")

    def __contains__(self, key: str) -> bool:
        return any(r.function == key for r in self.rows)

    def __iter__(self) -> Iterator[FunctionStats]:
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    def __str__(self) -> str:
        if not self.rows:
            return "no compiles"
        lines = [f"{'function':24} {'traces':>6} {'compiles':>8} {'trace':>9} {'lower':>9} "
                 f"{'compile':>9} {'signatures':>10}  top cause"]
        for r in self.rows:
            lines.append(f"{r.function[:24]:24} {r.traces:>6} {r.compiles:>8} {fmt_seconds(r.trace_s):>9} "
                         f"{fmt_seconds(r.lower_s):>9} {fmt_seconds(r.compile_s):>9} {r.signatures:>10}  "
                         f"{r.top_cause() or ''}")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        return _summary_html(self.rows)

    def __rich_console__(self, console: Any, options: Any) -> Iterator[Any]:
        yield _summary_rich(self.rows)

    def to_json(self) -> list[dict[str, Any]]:
        return [r.to_json() for r in self.rows]


class Watch:
    """A log of compiles while active. ``with watch() as log:`` or ``start()``/``stop()``.

    Several watches may be active at once (nested, or the notebook session's and yours):
    each sees every compile while it is active. ``storm``: after this many compiles of one
    function, a ``RecompileWarning`` names the argument that keeps changing.
    """

    def __init__(self, *, storm: int = 10, max_events: int = 2000, include_jax: bool = False,
                 name: str = "watch") -> None:
        self.storm = storm
        self.include_jax = include_jax
        self.name = name
        self._events: deque[CompileEvent] = deque(maxlen=max_events)
        self._stats: dict[Any, FunctionStats] = {}
        self._signatures: dict[Any, set[Any]] = {}
        self._tracked: set[int] = set()
        self._subscribers: list[Callable[[CompileEvent | None], None]] = []
        self.warnings: list[str] = []
        self._stormed: set[Any] = set()
        self._active = False
        self._lock = threading.RLock()
        self.dropped = 0  # events that fell off the front of the bounded log
        self.added = 0  # events ever added: what a cell compiled is the difference

    # ------------------------------------------------------------ lifecycle
    def start(self) -> Watch:
        if not self._active:
            self._active = True
            _DISPATCHER.attach(self)
        return self

    def stop(self) -> None:
        if self._active:
            self._active = False
            _DISPATCHER.detach(self)

    @property
    def active(self) -> bool:
        return self._active

    def __enter__(self) -> Watch:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def clear(self) -> None:
        with self._lock:
            self._events.clear()
            self._stats.clear()
            self._signatures.clear()
            self.warnings.clear()
            self._stormed.clear()
            self.dropped = 0

    # ------------------------------------------------------------ reading
    @property
    def events(self) -> list[CompileEvent]:
        with self._lock:
            return list(self._events)

    def __len__(self) -> int:
        return len(self._events)

    def summary(self) -> Summary:
        with self._lock:
            rows = [dataclasses.replace(s, causes=Counter(s.causes)) for s in self._stats.values()]
        return Summary(rows)

    def check(self, *, report: bool = False) -> list[StaleGlobal]:
        """Globals/closure values baked into compiled functions that have changed since.
        ``report``: also print each new finding once and publish it (the post-cell hook)."""
        found = []
        for key in list(self._tracked):
            tracked = _TRACKED.get(key)
            if tracked is None or tracked.ref() is None:
                self._tracked.discard(key)
                continue
            for baked, current in tracked.check():
                stale = baked.message
                if (stale is None or baked.message_for is not current  # reprs cost: once
                        or baked.message_version != baked.version  # a container changed
                        or (baked.tree is None and isinstance(current, (dict, list, np.ndarray)))):
                    stale = baked.message = _stale_message(tracked, baked, current)
                    baked.message_for, baked.message_version = current, baked.version
                found.append(stale)
                if report and baked.reported != stale.current:
                    baked.reported = stale.current
                    show_message(stale.message)
                    _publish("stale", {k: v for k, v in stale.to_json().items() if k != "source"})
        new = False
        if found:
            with self._lock:
                for s in found:
                    if s.message not in self.warnings:
                        self._warn(s.message)
                        new = True
        if new:
            self._notify(None)  # e.g. the live monitor shows it in red
        return found

    def _warn(self, text: str) -> None:
        self.warnings.append(text)
        del self.warnings[:-MAX_WARNINGS]

    def subscribe(self, callback: Callable[[CompileEvent | None], None]) -> None:
        """``callback(event)`` on every new or updated event (from the compiling thread)."""
        self._subscribers.append(callback)

    def unsubscribe(self, callback: Callable[[CompileEvent | None], None]) -> None:
        if callback in self._subscribers:
            self._subscribers.remove(callback)

    def since(self, added: int) -> list[CompileEvent]:
        """The events added after ``self.added`` was ``added`` (those still kept)."""
        with self._lock:
            n = min(self.added - added, len(self._events))
            return list(self._events)[len(self._events) - n:] if n > 0 else []

    def view(self, function: str | None = None) -> CompileLog:
        """A snapshot of the log (optionally of one function) that renders itself."""
        events = self.events
        if function is not None:
            events = [e for e in events if e.function.name == function
                      or e.function.qualname == function]
        summary = self.summary()
        if function is not None:
            summary = Summary([r for r in summary.rows if r.function == function])
        return CompileLog(events, summary, list(self.warnings), self.dropped)

    def monitor(self, **kwargs: Any) -> Any:
        """A live ipywidgets monitor of this log."""
        from .widgets import LiveMonitor

        return LiveMonitor(self, **kwargs)

    def to_json(self) -> dict[str, Any]:
        return self.view().to_json()

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        return self.view()._repr_mimebundle_(include, exclude)

    def __rich_console__(self, console: Any, options: Any) -> Iterator[Any]:
        yield from self.view().__rich_console__(console, options)

    def __repr__(self) -> str:
        state = "active" if self._active else "stopped"
        return f"<jaxviz.Watch {self.name} ({state}): {len(self._events)} compiles>"

    def __str__(self) -> str:
        return str(self.view())

    # ------------------------------------------------------------ fed by the dispatcher
    def _add(self, event: CompileEvent, tracked: int | None) -> None:
        with self._lock:
            if len(self._events) == self._events.maxlen:
                self.dropped += 1
            self._events.append(event)
            self.added += 1
            if tracked is not None:
                self._tracked.add(tracked)
            key = self._stat_key(event)
            stats = self._stats.get(key)
            if stats is None:
                stats = self._stats[key] = FunctionStats(event.function.name, str(event.function.defined)
                                                  if event.function.defined else None)
            stats.causes.update((c.kind, c.path) for c in event.causes)
            if event.signature is not None:
                sigs = self._signatures.setdefault(key, set())
                if len(sigs) < 10_000:
                    sigs.add(event.signature.key)
                stats.signatures = len(sigs)

    def _stat_key(self, event: CompileEvent) -> Any:
        return event.function.name, event.function.defined

    def _stage_done(self, event: CompileEvent, stage: str, seconds: float) -> None:
        with self._lock:
            stats = self._stats.get(self._stat_key(event))
            if stats is None:
                return
            if stage == "trace":
                stats.traces += 1
                stats.trace_s += seconds
            elif stage == "lower":
                stats.lower_s += seconds
            elif stage == "compile":
                stats.compiles += 1
                stats.compile_s += seconds
            elif stage == "error":
                stats.errors += 1
        if stage == "compile" or stage == "error":
            self._maybe_storm(event)

    def _maybe_storm(self, event: CompileEvent) -> None:
        key = self._stat_key(event)
        stats = self._stats.get(key)
        if stats is None or stats.compiles <= self.storm or key in self._stormed:
            return
        self._stormed.add(key)
        top = stats.causes.most_common()
        changing = next(((k, p, n) for (k, p), n in top if k != "first_call"), None)
        what = (f"`{changing[1]}` keeps changing ({changing[0]}, {changing[2]} times)"
                if changing else "the cause varies")
        advice = event.suggestion if changing is None else self._advice(event, changing[:2])
        text = (f"recompile storm: `{stats.function}` compiled {stats.compiles} times while "
                f"watching; {what}. {advice or ''}").strip()
        self._warn(text)
        site = event.call_site
        try:
            if site is not None:
                warnings.warn_explicit(text, RecompileWarning, site.file, site.line)
            else:
                warnings.warn(text, RecompileWarning, stacklevel=2)
        except Exception:
            pass

    def _advice(self, event: CompileEvent, changing: tuple[str, str]) -> str | None:
        """The suggestion for the cause that keeps changing (from the latest event that
        had it), not for whatever the latest compile's own first cause was."""
        key = self._stat_key(event)
        with self._lock:
            recent = [event] + [e for e in reversed(self._events) if e is not event]
        for e in recent:
            same = [c for c in e.causes if (c.kind, c.path) == changing]
            if same and self._stat_key(e) == key:
                return _suggest(dataclasses.replace(e, causes=same), getattr(event, "_object", None))
        return None

    def _notify(self, event: CompileEvent | None) -> None:
        for cb in list(self._subscribers):
            try:
                cb(event)
            except Exception:
                pass


def watch(*, storm: int = 10, max_events: int = 2000, include_jax: bool = False) -> Watch:
    """A new (not yet started) watch: ``with jaxviz.watch() as log: ...``."""
    return Watch(storm=storm, max_events=max_events, include_jax=include_jax)


# ====================================================================== rendering
@dataclass
class CompileLog:
    """A snapshot of a watch's log, rendered as HTML, JSON for the JupyterLab panel, rich
    and plain text."""

    events: list[CompileEvent]
    summary: Summary
    warnings: list[str]
    dropped: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"schema": SCHEMA, "version": SCHEMA_VERSION,
                "events": [e.to_json() for e in self.events],
                "summary": self.summary.to_json(), "warnings": list(self.warnings),
                "dropped": self.dropped}

    def __str__(self) -> str:
        if not self.events:
            return "jaxviz: no compiles recorded."
        lines = [f"{i}. {e.message()}" + (f"\n   → {e.suggestion}" if e.suggestion and e.causes
                                          and e.causes[0].kind != "first_call" else "")
                 + (f"\n   what it changed in the program: {diff_command(e)}" if diff_command(e) else "")
                 for i, e in enumerate(self.events, 1)]
        lines += ["", str(self.summary)]
        lines += [f"warning: {w}" for w in self.warnings]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        return _log_html(self)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        # HTML and text only: any JupyterLab (or nbviewer, or GitHub) renders them. The
        # JSON payload goes to the jaxviz panel through the bridge, event by event.
        return {"text/plain": str(self), "text/html": _log_html(self)}

    def __rich_console__(self, console: Any, options: Any) -> Iterator[Any]:
        from rich.table import Table
        from rich.text import Text

        table = Table(title="jaxviz: compiles", show_lines=False)
        for col in ("#", "function", "called from", "cause", "trace", "lower", "compile"):
            table.add_column(col, overflow="fold")
        for i, e in enumerate(self.events, 1):
            cause = Text(e.error or e.reason(), style="red" if e.error else
                         ("" if e.count == 1 else "yellow"))
            table.add_row(str(i), e.function.name, str(e.call_site or ""), cause,
                          *(fmt_seconds(e.durations[k]) for k in ("trace", "lower", "compile")))
        yield table
        yield _summary_rich(self.summary.rows)
        for w in self.warnings:
            yield Text("warning: " + w, style="bold red")


# Selectors two classes deep: JupyterLab's rendered-HTML table style (right-aligned cells)
# must not win over ours.
_CSS = ("<style>table.jv-rc{border-collapse:collapse;font:12px/1.4 var(--jp-ui-font-family,sans-serif);"
        "word-break:normal;overflow-wrap:break-word}"
        "table.jv-rc td.jv,table.jv-rc th.jv{border-bottom:1px solid #ddd;padding:2px 8px;"
        "text-align:left;vertical-align:top}table.jv-rc td.num,table.jv-rc th.num{text-align:right;"
        "font-variant-numeric:tabular-nums;white-space:nowrap}.jv-rc .first{color:#777}"
        ".jv-rc .site,.jv-rc small{white-space:nowrap}"
        ".jv-rc code,.jv-warn code{font-family:var(--jp-code-font-family,monospace);font-size:95%;"
        "background:rgba(127,127,127,.12);padding:0 2px;border-radius:2px}"
        ".jv-rc .sug{color:#555}.jv-warn{color:#c00;font-weight:600}</style>")
_CODE = re.compile(r"`([^`\n]+)`")


def text_html(text: str) -> str:
    """A message with Markdown code spans (`x`) as HTML: escaped, spans in <code>."""
    return _CODE.sub(r"<code>\1</code>", html.escape(text))


def text_plain(text: str) -> str:
    """A message with its Markdown code spans' backticks dropped (for stderr, widgets)."""
    return _CODE.sub(r"\1", text)


def is_first_compile(event: CompileEvent) -> bool:
    return not event.causes or event.causes[0].kind == "first_call"


def _td(content: Any, numeric: bool = False, extra: str = "") -> str:
    return f"<td class='jv{' num' if numeric else ''}{extra}'>{content}</td>"


def _head(*names: str, numeric: tuple[str, ...] = ()) -> str:
    return "<tr>" + "".join(f"<th class='jv{' num' if n in numeric else ''}'>{n}</th>"
                            for n in names) + "</tr>"


_TIMES = ("trace", "lower", "compile")


def diff_command(e: CompileEvent) -> str | None:
    """``%jaxviz diff f 3``: the trace diff of a recompile against the compile before it
    (``jaxviz.diff``); None for a first compile or one that failed."""
    if e.error or is_first_compile(e) or e.count < 2:
        return None
    return f"%jaxviz diff {e.function.name} {e.count}"


def _log_html(log: CompileLog) -> str:
    esc = html.escape
    rows = []
    for i, e in enumerate(log.events, 1):
        if e.error:
            cause = esc(e.error)
        elif is_first_compile(e) and e.kind != "compile":
            cause = "<span class='first'>first compile</span>"
        else:
            cause = "<br>".join(text_html(str(c)) for c in e.causes) or text_html(e.reason())
        if e.suggestion and not is_first_compile(e):
            cause += f"<div class='sug'>→ {text_html(e.suggestion)}</div>"
        if diff_command(e):
            cause += f"<div class='sug'>what it changed in the program: <code>{esc(diff_command(e))}</code></div>"
        site = esc(str(e.call_site)) if e.call_site else ""
        if e.call_site and e.call_site.text:
            site = f"<span title='{esc(e.call_site.text)}'>{site}</span>"
        function = f"<b>{esc(e.function.name)}</b><br><small>{esc(str(e.function.defined or ''))}</small>"
        rows.append("<tr>" + _td(i, True) + _td(function) + _td(f"<span class='site'>{site}</span>")
                    + _td(cause, extra=" jv-warn" if e.error else "")
                    + "".join(_td(fmt_seconds(e.durations[k]), True) for k in _TIMES) + "</tr>")
    head = _head("#", "function", "called from", "cause", *_TIMES, numeric=("#", *_TIMES))
    dropped = f"<p><small>{log.dropped} older events not kept.</small></p>" if log.dropped else ""
    table = (f"<table class='jv-rc'>{head}{''.join(rows)}</table>" if rows
             else "<p>jaxviz: no compiles recorded.</p>")
    warns = "".join(f"<p class='jv-warn'>⚠ {text_html(w)}</p>" for w in log.warnings)
    return f"{_CSS}<div class='jaxviz-compiles'>{table}{dropped}{_summary_html(log.summary.rows)}{warns}</div>"


def _summary_html(rows: list[FunctionStats]) -> str:
    if not rows:
        return ""
    esc = html.escape
    body = "".join(
        "<tr>" + _td(f"<b>{esc(r.function)}</b>") + _td(r.traces, True) + _td(r.compiles, True)
        + _td(fmt_seconds(r.trace_s), True) + _td(fmt_seconds(r.lower_s), True)
        + _td(fmt_seconds(r.compile_s), True) + _td(r.signatures, True)
        + _td(text_html(r.top_cause() or "")) + "</tr>" for r in rows)
    numeric = ("traces", "compiles", *_TIMES, "signatures")
    head = _head("function", "traces", "compiles", *_TIMES, "signatures", "top cause",
                 numeric=numeric)
    return f"{_CSS}<table class='jv-rc'>{head}{body}</table>"


def _summary_rich(rows: list[FunctionStats]) -> Any:
    from rich.table import Table

    table = Table(title="per function")
    for col in ("function", "traces", "compiles", "trace", "lower", "compile", "signatures",
                "top cause"):
        table.add_column(col)
    for r in rows:
        table.add_row(r.function, str(r.traces), str(r.compiles), fmt_seconds(r.trace_s),
                      fmt_seconds(r.lower_s), fmt_seconds(r.compile_s), str(r.signatures),
                      r.top_cause() or "")
    return table


# ====================================================================== bridge
_bridge: Any = None


def _publish(kind: str, payload: dict[str, Any]) -> None:
    """Send to the JupyterLab panel through ``jaxviz.bridge`` when it is there."""
    global _bridge
    if _bridge is None:
        try:
            from . import bridge as _b
        except ImportError:
            _b = False
        _bridge = _b
    if _bridge:
        try:
            _bridge.publish(kind, payload)
        except Exception:
            pass


# ====================================================================== the dispatcher
class _Pending:
    """An event being traced/lowered/compiled on one thread (``event`` None: ignored, e.g.
    JAX's own eager operations)."""

    __slots__ = ("event", "name", "module", "stage", "t0", "deferred")

    def __init__(self, event: CompileEvent | None, name: str, stage: str = "trace",
                 t0: float = 0.0) -> None:
        self.event = event
        self.name = name  # fun_name of the trace event
        self.module = f"jit({name})"  # fun_name of its lowering/compile events
        self.stage = stage
        self.t0 = t0  # wall clock at the start
        self.deferred = False  # a trace whose event is made when it ends


_NEXT = {"trace": ("lower", "compile"), "lower": ("compile",), "compile": ()}


class _Dispatcher:
    """Owns the ``jax.monitoring`` listeners (registered while any watch is active) and
    fans each event out to every active watch."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.watches: list[Watch] = []
        self.registered = False
        self.pending: dict[int, list[_Pending]] = {}  # per thread, most recent last
        self.internal_errors = 0

    # ------------------------------------------------------------ watches
    def attach(self, w: Watch) -> None:
        with self.lock:
            if w not in self.watches:
                self.watches.append(w)
            if not self.registered:
                jax.monitoring.register_scalar_listener(_on_scalar)
                jax.monitoring.register_event_duration_secs_listener(_on_duration)
                self.registered = True

    def detach(self, w: Watch) -> None:
        with self.lock:
            if w in self.watches:
                self.watches.remove(w)
            if not self.watches and self.registered:
                _unregister(internals.unregister_scalar_listener, _on_scalar)
                _unregister(internals.unregister_event_duration_listener, _on_duration)
                self.registered = False
                for stack in self.pending.values():
                    for p in stack:
                        if p.event is not None:
                            self._finish(p.event)
                self.pending.clear()

    # ------------------------------------------------------------ stages
    def start(self, stage: str, jax_name: str, t0: float) -> None:
        stack = self.pending.setdefault(threading.get_ident(), [])
        if stage != "trace":  # part of a pending trace, or a compile with no new trace
            for p in reversed(stack):
                if p.module == jax_name and stage in _NEXT[p.stage]:
                    p.stage = stage
                    return
            name = jax_name[4:-1] if jax_name.startswith("jit(") and jax_name.endswith(")") else jax_name
            p = self._new(name, internals.current_jit_call(), stage, t0)
            p.module = jax_name
        else:
            # JAX's trace timer is already running: do the work when it stops, so that our
            # cost is not counted as tracing (JAX's frames are still there then).
            p = _Pending(None, jax_name, stage, t0)
            p.deferred = True
        stack.append(p)
        while len(stack) > 4:  # e.g. AOT .trace() never lowered
            old = stack.pop(0)
            if old.event is not None:
                self._finish(old.event)

    def end(self, stage: str, jax_name: str, seconds: float, exc: BaseException | None) -> None:
        stack = self.pending.get(threading.get_ident())
        if not stack:
            return
        for i in range(len(stack) - 1, -1, -1):
            p = stack[i]
            if p.stage == stage and (p.name if stage == "trace" else p.module) == jax_name:
                break
        else:
            return
        if p.deferred:
            p.deferred = False
            p.event = self._new(p.name, internals.current_jit_call(), stage, p.t0).event
        # A trace we ignore inside another trace (jnp's own jitted helpers, which JAX 0.6
        # traces inside the user's) is done with: left pending, it would push the user's
        # trace out. One that is not nested (jaxviz's own) stays, to ignore its compile too.
        nested = any(q.stage == "trace" for q in stack[:i])
        finished = (stage == "compile" or exc is not None
                    or (stage == "trace" and p.event is None and nested))
        if finished:
            del stack[i]
            if not stack:
                self.pending.pop(threading.get_ident(), None)
        event = p.event
        if event is None:
            return
        event.durations[stage] = seconds
        watches = self._watches_of(event)
        for w in watches:
            w._stage_done(event, stage, seconds)
        if exc is not None:
            text = str(exc).strip().splitlines()
            event.error = f"{type(exc).__name__}: {text[0] if text else ''}"[:300]
            obj = getattr(event, "_object", None)
            if obj is not None and event.signature is not None:
                obj.last_error = (event.signature, type(exc).__name__)
                if obj.signatures and obj.signatures[-1] is event.signature:
                    obj.signatures.pop()
            for w in watches:
                w._stage_done(event, "error", 0.0)
        if finished:
            self._finish(event)
        else:
            for w in watches:
                w._notify(event)

    # ------------------------------------------------------------ events
    def _new(self, jax_name: str, call: internals.JitCall | None, stage: str,
             t0: float) -> _Pending:
        watches = list(self.watches)
        include_jax = any(w.include_jax for w in watches)
        if call is not None:
            caller_file = call.caller.f_code.co_filename if call.caller is not None else ""
            if caller_file.startswith(_PACKAGE_DIR):  # jaxviz's own tracing (%%jaxpr)
                return _Pending(None, jax_name, stage)
            if not include_jax and _is_internal(call.fun):  # jnp.sin, eager primitives
                return _Pending(None, jax_name, stage)
            site = _site_of_frame(call.caller)
        else:
            site = _site_of_frame(sys._getframe(2))
            if site is None and not include_jax:
                return _Pending(None, jax_name, stage)
        if not watches:
            return _Pending(None, jax_name, stage)
        thread = threading.current_thread().name

        def untraced(fh: _Function, info: FunctionInfo, note: str) -> _Pending:
            """A compile without a call we can read (no signature, no causes)."""
            fh.count += 1
            event = CompileEvent(info, site, None, [], fh.count, t0, kind="compile",
                                 thread=thread, jax_name=jax_name, note=note)
            return self._publish_new(event, jax_name, stage, watches, None)

        if call is None:
            info = FunctionInfo(jax_name, jax_name, None)
            return untraced(_function_history(("<compile>", jax_name), info), info, _NO_TRACE)
        call, is_static_leaf = _through_wrapper(call)
        key, info, _ = _describe_function(call.fun)
        fh = _function_history(key, info)
        if _has_tracers(call):  # jitted function called under grad/vmap outside jit
            return untraced(fh, info, _UNDER_TRANSFORM)
        obj, previous = fh.object_for(call.fun, (call.static_argnums, call.static_argnames))
        try:
            sig: Signature | None = signature_of(call, is_static_leaf)
        except Exception as exc:
            self.internal_errors += 1
            sig, unreadable = None, f"{type(exc).__name__}: {exc}"[:120]
        causes = (_explain(fh, obj, previous, sig, call) if sig is not None
                  else [Cause("unknown", info.name, unreadable, detail="unreadable")])
        more = max(0, len(causes) - MAX_CAUSES)
        causes = causes[:MAX_CAUSES]
        fh.count += 1
        kind = "aot" if call.aot else ("call" if stage == "trace" else "compile")
        event = CompileEvent(info, site, sig, causes, fh.count, t0, kind=kind,
                             thread=thread, more_causes=more, jax_name=jax_name)
        if sig is not None:
            obj.note(causes)
            obj.signatures.append(sig)
            if obj.last_error is not None and _same_key(obj.last_error[0], sig):
                obj.last_error = None
        event.suggestion = _suggest(event, obj)
        obj.last_site = site
        event._object = obj  # type: ignore[attr-defined]
        tracked = _track(call.fun, info.name) if stage == "trace" else None
        _call_compile_listeners(event, call)
        return self._publish_new(event, jax_name, stage, watches, tracked)

    def _publish_new(self, event: CompileEvent, jax_name: str, stage: str,
                     watches: list[Watch], tracked: int | None) -> _Pending:
        event._watches = watches  # type: ignore[attr-defined]
        for w in watches:
            w._add(event, tracked)
            w._notify(event)
        return _Pending(event, jax_name, stage)

    def _watches_of(self, event: CompileEvent) -> list[Watch]:
        return getattr(event, "_watches", [])

    def _finish(self, event: CompileEvent) -> None:
        if event.done:
            return
        event.done = True
        if hasattr(event, "_object"):
            del event._object  # type: ignore[attr-defined]
        for w in self._watches_of(event):
            w._notify(event)
        _publish("compile", event.to_json())


# ====================================================================== compile listeners
# Other modules keep what they need of each compile (jaxviz.diff: the function and its
# abstract arguments, to re-trace it later). ``listener(event, call)`` runs on the compiling
# thread, on a cache miss only, for every compile of a user function the tracker reads
# while a watch is active; ``call`` (the arguments, a frame) is valid only during the call.
COMPILE_LISTENERS: list[Callable[[CompileEvent, internals.JitCall], None]] = []


def _call_compile_listeners(event: CompileEvent, call: internals.JitCall) -> None:
    for listener in list(COMPILE_LISTENERS):
        try:
            listener(event, call)
        except Exception:  # never break the user's compile
            _DISPATCHER.internal_errors += 1


_NO_TRACE = ("without a new trace (a transformation such as grad of a jitted function "
             "outside jit, or an ahead-of-time compile)")
_UNDER_TRANSFORM = ("without a new trace: it was called under a transformation (grad, vmap, "
                    "...) outside jit, so JAX compiles the transformed programs separately; "
                    "jit the whole transformed function to compile once")


def _is_user_frame(frame: Any) -> bool:
    return is_user_file(frame.f_code.co_filename)


def _through_wrapper(call: internals.JitCall
                     ) -> tuple[internals.JitCall, Callable[[Any], bool] | None]:
    """A call made through a jit-like wrapper (``eqx.filter_jit``, ``nnx.jit``) as the
    user made it: their function and arguments (and the leaves the wrapper holds static),
    so that causes name ``model.step_count``, not ``static`` or ``dynamic_nodonate``."""
    try:
        user = wrappers.user_call(call.caller, _is_user_frame)
    except Exception:  # an unexpected wrapper: explain the call JAX sees
        return call, None
    if user is None:
        return call, None
    is_static_leaf = equinox.is_static_leaf if equinox.is_filter_jit(user.wrapper) else None
    # A wrapper that passes the arguments through one for one (nnx.jit) keeps jax.jit's
    # static and donated ones; one that regroups them (filter_jit) says what it holds static.
    one_for_one = is_static_leaf is None and len(user.args) == len(call.args) \
        and set(user.kwargs) == set(call.kwargs)
    kept = {f: getattr(call, f) for f in ("static_argnums", "static_argnames", "donate_argnums",
                                           "donate_argnames")} if one_for_one else \
        dict.fromkeys(("static_argnums", "static_argnames", "donate_argnums", "donate_argnames"), ())
    return dataclasses.replace(call, fun=user.fun, args=user.args, kwargs=user.kwargs,
                               signature=user.signature, caller=user.caller,
                               **kept), is_static_leaf


def _has_tracers(call: internals.JitCall) -> bool:
    try:
        leaves = jax.tree_util.tree_leaves((call.args, call.kwargs))
    except Exception:
        return False
    return any(isinstance(v, jax.core.Tracer) for v in leaves)


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_DISPATCHER = _Dispatcher()
_STAGES = {internals.TRACE_EVENT: "trace", internals.LOWER_EVENT: "lower",
           internals.COMPILE_EVENT: "compile"}


def _unregister(fn: Callable[[Any], None], callback: Any) -> None:
    try:
        fn(callback)
    except (AssertionError, ValueError):
        pass


def _on_scalar(event: str, value: float, **kwargs: Any) -> None:
    stage = _STAGES.get(event)
    if stage is None:
        return
    try:
        with _DISPATCHER.lock:
            _DISPATCHER.start(stage, str(kwargs.get("fun_name", "?")), float(value))
    except Exception:  # never break the user's compile
        _DISPATCHER.internal_errors += 1


def _on_duration(event: str, duration: float, **kwargs: Any) -> None:
    stage = _STAGES.get(event)
    if stage is None:
        return
    exc = sys.exc_info()[1]  # set while JAX's timer exits because the stage raised
    try:
        with _DISPATCHER.lock:
            _DISPATCHER.end(stage, str(kwargs.get("fun_name", "?")), duration, exc)
    except Exception:
        _DISPATCHER.internal_errors += 1


def active_watches() -> list[Watch]:
    return list(_DISPATCHER.watches)


# ====================================================================== IPython
_SESSION: Watch | None = None
_MONITORS: list[Any] = []
_HOOKS: dict[int, tuple[Callable[..., None], Callable[..., None]]] = {}


@dataclass
class NoticeSettings:
    """The one-line notice under a cell that recompiled a function: on by default, for
    a function compiled at least ``min_compiles`` times in the cell (one of them a
    recompile). ``%jaxviz watch --notice off`` (or ``on``) switches it."""

    enabled: bool = True
    min_compiles: int = 2


NOTICE = NoticeSettings()
_NOTICE_STYLE = ("font:12px/1.5 var(--jp-ui-font-family,sans-serif);color:#7a4d00;"
                 "background:rgba(255,170,0,.10);border-left:3px solid #e8a317;padding:2px 8px;"
                 "margin:2px 0;word-break:normal;overflow-wrap:break-word")


def show_message(text: str, *, style: str = _NOTICE_STYLE) -> None:
    """A one-line message under the running cell (HTML with code spans, plain text for
    terminals); outside IPython, on stderr."""
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:
        get_ipython = None
    if get_ipython is None or get_ipython() is None:
        print(f"jaxviz: {text_plain(text)}", file=sys.stderr)
        return
    display({"text/plain": f"jaxviz: {text_plain(text)}",
             "text/html": f"<div class='jaxviz-notice' style='{style}'>jaxviz: {text_html(text)}</div>"},
            raw=True)


def _is_rerun(event: CompileEvent) -> bool:
    """A re-run cell defined the function again: expected, not worth a notice."""
    return all(c.kind == "new_function_object" and c.detail == "cell" for c in event.causes)


def _values_text(values: list[Any], limit: int = 3) -> str:
    seen = list(dict.fromkeys(short_repr(v) if not isinstance(v, (int, str)) else str(v)
                              for v in values))
    return ", ".join(seen[:limit]) + (", …" if len(seen) > limit else "")


def _dominant_cause(recompiles: list[CompileEvent]) -> tuple[str, str]:
    """The cause that changed most often, in a few words, and the others."""
    counts = Counter((c.kind, c.path) for e in recompiles for c in e.causes)
    (kind, path), _ = counts.most_common(1)[0]
    others = [p for k, p in counts if (k, p) != (kind, path)]
    if others and all(k == kind for k, _ in counts):  # x and y of a batch, both resized
        names = ", ".join(f"`{p}`" for p in others[:3]) + (", …" if len(others) > 3 else "")
        more = f" ({names} too)"
    else:
        more = f" (and {len(others)} other cause{'s' if len(others) > 1 else ''})" if others else ""
    same = [c for e in recompiles for c in e.causes if (c.kind, c.path) == (kind, path)]
    last = same[-1]
    if kind == "shape" and last.axis is not None and all(c.axis == last.axis for c in same):
        sizes = [same[0].before[last.axis]] + [c.after[last.axis] for c in same]
        what = f"`{path}` changed size on axis {last.axis} ({_values_text(sizes)})"
    elif kind == "static_value" and not last.detail:
        what = f"static `{path}` changed ({_values_text([same[0].before] + [c.after for c in same])})"
    else:
        what = str(last)
    return what, more


def cell_notices(events: list[CompileEvent], min_compiles: int = 2) -> list[str]:
    """One line per function that a cell compiled ``min_compiles`` times or more, one of
    them a recompile: how many times, what kept changing, and the command to see more."""
    by_function: dict[str, list[CompileEvent]] = {}
    for e in events:
        by_function.setdefault(e.function.name, []).append(e)
    lines = []
    for name, evs in by_function.items():
        recompiles = [e for e in evs if e.causes and not is_first_compile(e) and not _is_rerun(e)]
        if len(evs) < min_compiles or not recompiles:
            continue
        what, more = _dominant_cause(recompiles)
        lines.append(f"`{name}` compiled {len(evs)} times in this cell: {what}{more} → "
                     f"`%jaxviz recompiles {name}`")
    return lines


def session() -> Watch | None:
    """The notebook session's watch (started by ``%load_ext jaxviz``)."""
    return _SESSION


def register(shell: Any) -> None:
    """``%load_ext jaxviz``: watch compiles for the session, check stale globals after
    every cell."""
    global _SESSION
    if _SESSION is None:
        _SESSION = Watch(name="session")
    _SESSION.start()
    if id(shell) not in _HOOKS:
        start = [0]  # the session's event count when the cell started

        def pre_run_cell(info: Any = None) -> None:
            if _SESSION is not None:
                start[0] = _SESSION.added

        def post_run_cell(result: Any = None) -> None:
            if _SESSION is None or not _SESSION.active:
                return
            if NOTICE.enabled and _SESSION.added != start[0]:  # free when nothing compiled
                for line in cell_notices(_SESSION.since(start[0]), NOTICE.min_compiles):
                    show_message(line)
            _SESSION.check(report=True)

        _HOOKS[id(shell)] = (pre_run_cell, post_run_cell)
        shell.events.register("pre_run_cell", pre_run_cell)
        shell.events.register("post_run_cell", post_run_cell)


def unregister(shell: Any) -> None:
    """Unload: remove the hook and every JAX listener, close live monitors."""
    global _SESSION
    hooks = _HOOKS.pop(id(shell), None)
    for event, hook in zip(("pre_run_cell", "post_run_cell"), hooks or ()):
        try:
            shell.events.unregister(event, hook)
        except ValueError:
            pass
    _close_monitors()
    if _SESSION is not None:
        _SESSION.stop()
        _SESSION = None


def _close_monitors() -> None:
    while _MONITORS:
        try:
            _MONITORS.pop().close()
        except Exception:
            pass


def _parser(prog: str) -> argparse.ArgumentParser:
    return argparse.ArgumentParser(prog=prog, add_help=False, exit_on_error=False)


def watch_command(shell: Any, argv: list[str]) -> Any:
    """``%jaxviz watch [--storm N] [--quiet] [--notice on|off]`` · ``%jaxviz watch off``"""
    global _SESSION
    parser = _parser("%jaxviz watch")
    parser.add_argument("state", nargs="?", choices=("on", "off"), default="on")
    parser.add_argument("--storm", type=int, default=None)
    parser.add_argument("--quiet", action="store_true")
    parser.add_argument("--notice", choices=("on", "off"), default=None)
    try:
        args = parser.parse_args(argv)
    except (argparse.ArgumentError, SystemExit) as exc:
        raise ValueError("usage: %jaxviz watch [on|off] [--storm N] [--quiet] [--notice on|off] "
                         f"({exc})") from None
    if args.notice is not None:
        NOTICE.enabled = args.notice == "on"
        if args.state == "on" and _SESSION is not None and _SESSION.active and not args.quiet:
            print(f"jaxviz: recompile notices under cells {args.notice}.")
            return None
    if args.state == "off":
        _close_monitors()
        if _SESSION is not None:
            _SESSION.stop()
        print("jaxviz: not watching compiles.")
        return None
    if _SESSION is None:
        _SESSION = Watch(name="session")
    if args.storm is not None:
        _SESSION.storm = args.storm
    _SESSION.start()
    if args.quiet:
        print("jaxviz: watching compiles (%jaxviz recompiles shows them).")
        return None
    try:
        monitor = _SESSION.monitor()
    except ImportError:
        print("jaxviz: watching compiles (install ipywidgets for the live monitor).")
        return None
    _close_monitors()
    _MONITORS.append(monitor)
    from IPython.display import display

    display(monitor)
    return None


def recompiles_command(shell: Any, argv: list[str]) -> Any:
    """``%jaxviz recompiles [fn]``: the session's compile log (of one function)."""
    if _SESSION is None:
        print("jaxviz: not watching compiles; start with %jaxviz watch.")
        return None
    name = argv[0] if argv else None
    view = _SESSION.view(name)
    from IPython.display import display

    display(view)
    return None
