"""What a compile is keyed on, in the user's words: the function (``FunctionInfo``), where
it was called from (``Site``), each argument's leaves (``ArgSig``, ``Leaf``: shape,
dtype, weak type, placement, static value) and the config in effect (``Signature``)."""

from __future__ import annotations

import dataclasses
import functools
import inspect
import linecache
import os
import re
import reprlib
import sys
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeGuard

import jax
import numpy as np

from .. import _jax_internals as internals
from ..adapters import haiku, numpyro
from ..call_scopes import ipython_cell_name, is_user_file, original_code
from ..graph import Aval
from ..jaxprs import make_aval
from . import clears

SCHEMA = "jaxviz.compiles"
SCHEMA_VERSION = 1
CAUSE_KINDS = (
    "first_call", "shape", "dtype", "weak_type", "static_value", "pytree_structure",
    "new_function_object", "arg_count", "sharding", "device", "commitment", "donation",
    "context", "previous_error", "cache_cleared", "evicted", "unknown",
)


MAX_CAUSES = 24  # per event; a pytree of 1000 leaves that all changed dtype says so once
MAX_WARNINGS = 100  # kept per watch (storms, stale globals); the oldest go first
MISSING = object()


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


def plain_static(value: Any) -> Any:
    """Keep small plain values as they are (tests compare them); others by their repr."""
    if value is None or isinstance(value, (bool, int, float, complex, str)):
        return value
    if isinstance(value, tuple) and len(value) <= 16 and all(
            v is None or isinstance(v, (bool, int, float, str)) for v in value):
        return value
    return short_repr(value)


def json_safe(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if np.isfinite(value) else str(value)
    if isinstance(value, (tuple, list)):
        return [json_safe(v) for v in value]
    return short_repr(value)


def same_value(a: Any, b: Any) -> bool:
    """Equality that never raises (static arguments may define odd ``__eq__``)."""
    if a is b:
        return True
    try:
        return bool(type(a) is type(b) and a == b)
    except Exception:
        return False


def ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def ipython_cell(filename: str) -> int | None:
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


def site_at(file: str, line: int) -> Site:
    text = linecache.getline(file, line).strip() or None
    return Site(file, line, ipython_cell(file), text)


def site_of_frame(frame: Any, fun: Any = None) -> Site | None:
    """The first user frame (not JAX, not a library, not jaxviz) at or above ``frame``;
    with the jitted ``fun``, above the user's own decorators that only pass their
    arguments on to it (``functools.wraps`` wrappers): the line that called the
    decorated function, not the wrapper's ``return fn(*args, **kwargs)``."""
    frame = _user_frame(frame)
    while frame is not None and fun is not None and _forwards_to(frame, fun):
        above = _user_frame(frame.f_back)
        if above is None:
            break
        frame = above
    if frame is None:
        return None
    return site_at(frame.f_code.co_filename, frame.f_lineno)


def _user_frame(frame: Any) -> Any:
    while frame is not None and not is_user_file(frame.f_code.co_filename):
        frame = frame.f_back
    return frame


_PASSES_ARGUMENTS = inspect.CO_VARARGS | inspect.CO_VARKEYWORDS


def _forwards_to(frame: Any, fun: Any) -> bool:
    """Whether ``frame`` runs a ``(*args, **kwargs)`` wrapper holding ``fun`` (or a
    callable that wraps it) in its closure."""
    code = frame.f_code
    if code.co_flags & _PASSES_ARGUMENTS != _PASSES_ARGUMENTS or not code.co_freevars:
        return False
    held = [frame.f_locals.get(name) for name in code.co_freevars]
    return any(v is fun or (callable(v) and any(f is fun for f in unwrap_chain(v))) for v in held)


# ====================================================================== functions
def unwrap_chain(fun: Any) -> list[Any]:
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


def describe_function(fun: Any, transform: str = "jit") -> tuple[Any, FunctionInfo, Any]:
    """(identity key, FunctionInfo, the innermost Python function or None) of ``fun``
    compiled by ``transform`` (``jit``, or ``pmap``: named ``pmap(f)``)."""
    chain = unwrap_chain(fun)
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
        made_by = internals.transform_name(f)
        if made_by is not None:
            transforms.append(made_by)
        cell = ipython_cell(code.co_filename)
        # Re-running a notebook cell makes a new file name for the same source: key cells
        # by code, so that "same code, new function object" is recognised.
        key.append((code.co_qualname if hasattr(code, "co_qualname") else code.co_name,
                    code.co_firstlineno, code.co_code,
                    "<cell>" if cell is not None else code.co_filename))
    if inner is not None:
        code = inner.__code__
        qualname = getattr(inner, "__qualname__", code.co_name)
        base = getattr(inner, "__name__", code.co_name)
        defined = site_at(code.co_filename, code.co_firstlineno)
    else:
        qualname = base = getattr(fun, "__name__", None) or type(fun).__name__
        defined = None
    name = base + suffix
    for t in transforms:
        name = f"{t}({name})"
    if transform != "jit":
        name = f"{transform}({name})"
        key.append(transform)
    return tuple(key), FunctionInfo(name, qualname, defined), inner


def is_internal(fun: Any) -> bool:
    """JAX's own jitted functions (``jnp.sin``, eager primitives): not the user's."""
    for f in unwrap_chain(fun):
        code = getattr(f, "__code__", None)
        if code is not None and not internals.is_jax_file(code.co_filename):
            return False
    return True


# ====================================================================== signatures
@dataclass(frozen=True, slots=True, weakref_slot=True)
class Leaf:
    """One array leaf of an argument: its aval and, for committed arrays, its placement."""

    aval: Aval
    # "device cpu:1" or a sharding's text when committed; "numpy" for a host array; None
    # for an uncommitted jax.Array (numpy arrays are uncommitted too: same executable)
    placement: str | None = None
    # the sharding in the value's type (``jax.typeof(x).sharding``) when it is over a
    # mesh: part of the aval JAX traces for, unlike the placement
    typed_sharding: str | None = None

    @property
    def text(self) -> str:
        return self.aval.text


# Interned: consecutive signatures share their leaves; a leaf no signature holds is gone.
_LEAVES: weakref.WeakValueDictionary[Leaf, Leaf] = weakref.WeakValueDictionary()


def _intern(leaf: Leaf) -> Leaf:
    return _LEAVES.setdefault(leaf, leaf)


NUMPY = "numpy"


def _placement(value: Any) -> str | None:
    if isinstance(value, (np.ndarray, np.generic)):
        return NUMPY
    if not isinstance(value, jax.Array) or internals.is_tracer(value):
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


def is_committed(placement: str | None) -> TypeGuard[str]:
    return placement not in (None, NUMPY)


def placement_words(placement: str | None) -> str:
    """How an argument was placed, as the cause's before/after."""
    if placement is None:
        return "uncommitted"
    if placement == NUMPY:
        return "a numpy array (uncommitted)"
    return "committed to " + placement.removeprefix("device ")


def _leaf_of(value: Any) -> Leaf:
    if internals.is_tracer(value):  # under eager vmap/grad: what the compiled program gets
        under = internals.eager_transform(value)
        value = under[1] if under is not None else value
    try:
        typed = jax.typeof(value)
        out = make_aval(typed)
    except Exception:
        typed, out = None, make_aval(value)
    return _intern(Leaf(out, _placement(value), _typed_sharding(typed)))


def _typed_sharding(aval: Any) -> str | None:
    sharding = getattr(aval, "sharding", None)
    mesh = getattr(sharding, "mesh", None)
    if sharding is None or mesh is None or getattr(mesh, "empty", True):
        return None
    try:
        return f"{sharding.spec} over mesh {dict(mesh.shape)}"
    except Exception:
        return None


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
    # how many times jax.clear_caches() had run when this call compiled: not part of
    # JAX's key, it tells why an equal key compiled again
    cleared: int = field(default=0, compare=False)
    # for a function jitted inside a library: the user's call into the library (its name
    # and the arguments, named as the user's variables), the part of the key the user set
    entry: tuple[str, Signature] | None = field(default=None, compare=False)

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
    nums = set(call.static_argnums)
    n = len(call.args)
    out = []
    # a library method that passes its *args on to a model (numpyro's svi.update): the
    # model's names for them
    data_names = numpyro.model_data_names(getattr(call.fun, "__self__", None),
                                          call.args[len(positional):], call.kwargs) \
        if var_pos is not None and len(call.args) >= len(positional) else None
    for i, value in enumerate(call.args):
        if i < len(positional):
            name = positional[i].name
        elif data_names is not None:
            name = data_names[i - len(positional)]
        elif var_pos is not None:
            name = f"{var_pos}[{i - len(positional)}]"
        else:
            name = f"arg{i}"
        out.append((name, value, i in nums or (i - n) in nums, "positional"))
    for key, value in call.kwargs.items():
        name = key  # as the user wrote it, whether a parameter or gathered by **kwargs
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
            whole = None if is_static_leaf is None else functools.partial(_all_static, is_static_leaf)
            flat, treedef = jax.tree_util.tree_flatten_with_path(value, is_leaf=whole)
            if is_static_leaf is not None:
                statics = tuple((sys.intern(jax.tree_util.keystr(p)), v) for p, v in flat
                                if _all_static(is_static_leaf, v))
                flat = [(p, v) for p, v in flat if not _all_static(is_static_leaf, v)]
            leaves = tuple((sys.intern(jax.tree_util.keystr(p)), _leaf_of(v)) for p, v in flat)
        except Exception:  # an odd object JAX will reject anyway
            treedef, leaves = None, (("", _leaf_of(value)),)
        args.append(ArgSig(name, False, passed, None, treedef, leaves,
                           _donated(call, index, name, passed), statics))
    return Signature(tuple(args), context_snapshot() + transforms_of(call), clears.generation(),
                     library_entry(call) if is_static_leaf is None else None)


def library_entry(call: internals.JitCall) -> tuple[str, Signature] | None:
    """When the jitted function is called from inside a library (numpyro's MCMC runs
    its own jitted loop), the user's call into that library: the library function's name
    and its arguments as a signature, named by the user's variables that hold them
    (``x``, ``y`` of ``mcmc.run(key, x, y)``). Only arrays and structure are kept."""
    frame, entry = call.caller, None
    while frame is not None and not is_user_file(frame.f_code.co_filename):
        entry, frame = frame, frame.f_back
    if entry is None or frame is None:
        return None
    named = _entry_arguments(entry, frame)
    if not named:
        return None
    inner = internals.JitCall(None, None, (), dict(named), (), (), None, False, None)  # type: ignore[arg-type]
    sig = signature_of(inner, lambda v: not isinstance(v, (jax.Array, np.ndarray, np.generic)))
    args = tuple(dataclasses.replace(a, statics=()) for a in sig.args)
    return entry.f_code.co_qualname, Signature(args, ())


def _entry_arguments(entry: Any, user: Any) -> list[tuple[str, Any]]:
    """(name, value) of the arguments a library function was called with, each named
    by the user's variable holding it where one does."""
    info = inspect.getargvalues(entry)
    values = [(n, info.locals[n]) for n in info.args if n != "self" and n in info.locals]
    if info.varargs and isinstance(info.locals.get(info.varargs), tuple):
        values += [(f"{info.varargs}[{i}]", v) for i, v in enumerate(info.locals[info.varargs])]
    if info.keywords and isinstance(info.locals.get(info.keywords), dict):
        values += list(info.locals[info.keywords].items())
    mine = [(k, v) for k, v in user.f_locals.items() if not k.startswith("_")]
    library = numpyro.model_argument_names(entry) or {}
    out = []
    for name, value in values:
        name = library.get(name, name)
        if value is None or isinstance(value, (bool, int, float, str)):
            out.append((name, value))  # not told apart by identity
            continue
        out.append((next((k for k, v in mine if v is value), name), value))
    return out


def transforms_of(call: internals.JitCall) -> tuple[tuple[str, Any], ...]:
    """The eager transformations the call is made under (``vmap``, ``jvp``: each compiles
    its own program), as a part of the key's trace context; () for a plain call."""
    try:
        leaves = jax.tree_util.tree_leaves((call.args, call.kwargs))
    except Exception:
        return ()
    kinds: set[tuple[str, ...]] = set()
    for leaf in leaves:
        if internals.is_tracer(leaf):
            under = internals.eager_transform(leaf)
            if under is not None:
                kinds.add(under[0])
    if not kinds:
        return ()
    return (("transform", " of ".join(max(kinds, key=len))),)


def is_eager_transform(call: internals.JitCall) -> bool:
    """Whether every tracer among the call's arguments is an eager transformation's
    (vmap, grad outside jit): JAX compiles the transformed program for this call."""
    try:
        leaves = jax.tree_util.tree_leaves((call.args, call.kwargs))
    except Exception:
        return False
    tracers = [v for v in leaves if internals.is_tracer(v)]
    return bool(tracers) and all(internals.eager_transform(v) is not None for v in tracers)


def _all_static(is_static_leaf: Callable[[Any], bool], node: Any) -> bool:
    """A subtree that holds leaves and only static ones (an optimizer, a dropout layer,
    under ``eqx.filter_jit``): compared as one value, so that a new optimizer reads as one
    new object, not one cause per function inside it."""
    try:
        leaves = jax.tree_util.tree_leaves(node)
    except Exception:
        return False
    return bool(leaves) and all(is_static_leaf(v) for v in leaves)


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
