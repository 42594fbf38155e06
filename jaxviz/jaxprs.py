"""Helpers over jaxprs and the values traced into them: avals, the sub-jaxprs an
equation holds, short texts of values, key paths, flat leaves. Shared by tracing, costs,
errors, recompiles, cells and the adapters. A leaf module: of jaxviz it imports only the
graph model's ``Aval`` and the sharding texts' ``dim_axes``."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.extend.core as jcore
import numpy as np

from . import _jax_internals as internals
from .graph import Aval
from .sharding import dim_axes


# ---------------------------------------------------------------------- avals
def make_aval(aval: Any) -> Aval:
    """JAX's abstract value (a ``ShapedArray``, or anything with shape and dtype) as the
    model's ``Aval``; an unknown (symbolic) dimension reads -1."""
    shape = tuple(int(d) if isinstance(d, (int, np.integer)) else -1 for d in getattr(aval, "shape", ()))
    dtype = str(getattr(aval, "dtype", type(aval).__name__))
    return Aval(shape, dtype, bool(getattr(aval, "weak_type", False)), dim_axes(aval))


_AVALS: dict[Any, Aval] = {}


def aval_of_var(var: Any) -> Aval:
    """A jaxpr variable's ``Aval``, cached by JAX's aval (one per distinct type)."""
    aval = var.aval
    try:
        return _AVALS[aval]
    except (KeyError, TypeError):
        pass
    result = make_aval(aval)
    try:
        if len(_AVALS) > 50_000:
            _AVALS.clear()
        _AVALS[aval] = result
    except TypeError:  # unhashable aval
        pass
    return result


def is_array(value: Any) -> bool:
    return isinstance(value, (jax.Array, np.ndarray, np.generic))


def is_python_scalar(value: Any) -> bool:
    return isinstance(value, (bool, int, float, complex)) and not isinstance(value, type)


def aval_of_value(value: Any) -> Aval:
    """The ``Aval`` a concrete value is traced as (a Python number: weakly typed)."""
    weak = is_python_scalar(value) or bool(getattr(getattr(value, "aval", None), "weak_type", False))
    arr = np.asarray(value) if not hasattr(value, "dtype") else value
    dtype = jax.dtypes.canonicalize_dtype(arr.dtype, allow_extended_dtype=True)  # PRNG keys
    return Aval(tuple(int(d) for d in np.shape(arr)), _dtype_name(dtype), weak)


@functools.lru_cache(maxsize=256)
def _dtype_name(dtype: Any) -> str:
    """``str(dtype)``, once per dtype: NumPy writes it anew each time (µs per leaf of a
    model's parameters)."""
    return str(dtype)


def is_traceable_tree(value: Any) -> bool:
    """Arrays, or pytrees whose leaves are arrays (Python numbers allowed beside them)."""
    if is_array(value):
        return True
    if is_python_scalar(value) or callable(value):
        return False
    leaves = jax.tree_util.tree_leaves(value)
    return bool(leaves) and any(is_array(x) for x in leaves) and all(
        is_array(x) or is_python_scalar(x) for x in leaves)


# ---------------------------------------------------------------------- pytrees
def key_text(key: Any) -> str:
    """One step of a key path as the user writes it: ``.weight``, ``['Dense_0']``, ``[2]``."""
    return path_text((key,))


def path_text(path: Sequence[Any]) -> str:
    """A key path as the user writes it: JAX's own text for each step (``keystr``'s), but
    a flattened index's (``[2]``, not ``[<flat index 2>]``); a call per leaf of a model."""
    flattened = jax.tree_util.FlattenedIndexKey
    return "".join([f"[{k.key}]" if type(k) is flattened else str(k) for k in path])


def flat_avals(name: str, value: Any) -> list[tuple[str, Aval]]:
    """Each leaf of ``value`` named by ``name`` and its key path (``params['w']``), with
    the ``Aval`` it is traced as, in ``jax.jit``'s flattening order."""
    leaves = jax.tree_util.tree_flatten_with_path(value)[0]
    return [(name + path_text(path), aval_of_value(leaf)) for path, leaf in leaves]


# ---------------------------------------------------------------------- sub-jaxprs
def sub_jaxprs(params: dict[str, Any]) -> list[tuple[str, Any, Sequence[Any]]]:
    """(label, Jaxpr, consts) for every jaxpr held in an equation's params, found
    generically, in the order of the params (the order the graph builder walks them, and
    the order ``costs.program_costs`` lists their equations in). Runs once per equation:
    a label is written only for what is found (a jit's params hold a tuple per argument)."""
    found = []
    for key, val in params.items():
        if isinstance(val, _JAXPR_TYPES):
            found.append(_sub_jaxpr(key, val))
        elif isinstance(val, (tuple, list)):
            found += [_sub_jaxpr(key if len(val) == 1 else f"{_singular(key)} {i}", v)
                      for i, v in enumerate(val) if isinstance(v, _JAXPR_TYPES)]
    return found


_JAXPR_TYPES = (jcore.ClosedJaxpr, jcore.Jaxpr)


def _sub_jaxpr(label: str, value: Any) -> tuple[str, Any, Sequence[Any]]:
    if isinstance(value, jcore.ClosedJaxpr):
        return label, internals.open_jaxpr(value), value.consts
    return label, value, ()


def holds_jaxpr(params: dict[str, Any]) -> bool:
    """Whether an equation holds a jaxpr under ``jaxpr`` (``jit``, ``custom_jvp_call``)."""
    return isinstance(params.get("jaxpr"), _JAXPR_TYPES)


def _singular(key: str) -> str:
    if key.endswith("hes"):
        return key[:-2]
    return key[:-1] if key.endswith("s") else key


# ---------------------------------------------------------------------- texts
def short(value: Any, limit: int = 60) -> str:
    """A value (or a function, by name) in one line of at most ``limit`` characters."""
    text = str(plain_value(value)) if not callable(value) else getattr(value, "__name__", type(value).__name__)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def plain_value(value: Any) -> Any:
    """JAX's literal objects (``TypedInt(0, dtype=int32)``, 0-d ``TypedNdArray``) as the
    value they hold, printed in their own precision: ``0``, ``1.0``, ``0.1`` (a float32)."""
    if isinstance(value, bool) or type(value) in (int, float, complex):
        return value
    dtype = getattr(value, "dtype", None)
    if dtype is not None and np.ndim(value) == 0 and isinstance(dtype, np.dtype):
        return np.asarray(value, dtype)[()]  # a numpy scalar: str(np.float32(0.1)) == "0.1"
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, complex):
        return complex(value)
    return value


# ---------------------------------------------------------------------- functions
def fresh_function(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A new function object calling ``fn``: JAX caches traces per function, and a cached
    trace would not run the user's code again (nor record its calls)."""
    @functools.wraps(fn)
    def fresh(*args: Any, **kwargs: Any) -> Any:
        return fn(*args, **kwargs)

    return fresh
