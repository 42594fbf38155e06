"""Equinox: ``eqx.filter_jit`` functions and Modules called directly.

Traced as ``filter_jit`` traces: the arguments are split leaf by leaf with
``eqx.partition(..., eqx.is_array)``, arrays traced and everything else (activation
functions, int fields) held static, and only the arrays of the result are outputs.
Recognised by ``isinstance(fn, eqx.Module)`` once the user has imported Equinox."""

from __future__ import annotations

import dataclasses
import functools
import inspect
import sys
from typing import Any

import jax

from .base import (
    Plan,
    UnsplittableArgument,
    function_name,
    is_hashable,
    leaf_names,
    path_text,
    positional_names,
)
from .wrappers import is_jit_like


def adapt(fn: Any, args: tuple, kwargs: dict) -> Plan | None:
    eqx = sys.modules.get("equinox")
    if eqx is None or not isinstance(fn, eqx.Module):
        return None
    if is_filter_jit(fn):  # filter_jit: what it wraps, split as it splits
        target = fn.__wrapped__
        user_function = getattr(target, "__func__", target)
        arg_names = positional_names(target, len(args))
        name = function_name(target)
    elif hasattr(fn, "__wrapped__"):  # filter_pmap, filter_vmap: traced by their own rules
        target, user_function = fn, inspect.unwrap(fn)
        arg_names = positional_names(user_function, len(args))
        name = function_name(user_function)
    else:  # a Module called directly: its __call__, the Module its first argument
        target = user_function = type(fn).__call__
        arg_names = [type(fn).__name__, *positional_names(fn, len(args))]
        args = (fn, *args)
        name = type(fn).__name__
    kwarg_names = sorted(kwargs)
    dynamic, static = eqx.partition((args, kwargs), eqx.is_array)
    static_parts = _static_parts(static, arg_names, kwarg_names)
    for leaf, value in static_parts:
        if not is_hashable(value):
            raise UnsplittableArgument(
                f"{leaf} ({type(value).__name__}) is neither an array nor hashable: "
                f"eqx.filter_jit cannot hold it static. Make it hashable (a tuple, a frozen "
                f"dataclass) or mark the field static with eqx.field(static=True).")
    dyn_args, dyn_kwargs = dynamic

    def filtered(*call_args: Any, **call_kwargs: Any) -> Any:
        a, k = eqx.combine((call_args, call_kwargs), static)
        return eqx.filter(target(*a, **k), eqx.is_array)

    names = [n for name, value in zip(arg_names, dyn_args) for n in leaf_names(name, value)]
    names += [n for key in kwarg_names for n in leaf_names(key, dyn_kwargs[key])]
    notes = []
    if static_parts:
        shown = ", ".join(n for n, _ in static_parts[:4]) + (", …" if len(static_parts) > 4 else "")
        notes.append(f"{len(static_parts)} non-array leaves held static, as eqx.filter_jit does: {shown}")
    return Plan(filtered, tuple(dyn_args), dict(dyn_kwargs), user_function=user_function,
                name=name, input_names=names, static=static_parts, notes=notes,
                roots=[target, *args, *kwargs.values()])


def _static_parts(static: Any, arg_names: list[str], kwarg_names: list[str]) -> list[tuple[str, Any]]:
    """(user name, value) of every leaf held static (``model.activation``, ``model.depth``)."""
    static_args, static_kwargs = static
    parts = []
    for name, value in [*zip(arg_names, static_args), *((k, static_kwargs[k]) for k in kwarg_names)]:
        for path, leaf in jax.tree_util.tree_flatten_with_path(value)[0]:
            parts.append((name + path_text(path), leaf))
    return parts


# ---------------------------------------------------------------------- recompiles
def is_filter_jit(wrapper: Any) -> bool:
    """An ``eqx.filter_jit`` function (or method), once the user has imported Equinox
    (not an ``eqx.filter_pmap``: a wrapper of the same make, with rules of its own)."""
    eqx = sys.modules.get("equinox")
    return eqx is not None and isinstance(wrapper, _filter_jit_type(eqx)) and is_jit_like(wrapper)


@functools.cache
def _filter_jit_type(eqx: Any) -> type:
    """The class of what ``eqx.filter_jit`` returns (Equinox does not export it)."""
    return type(eqx.filter_jit(_identity))


def _identity(x: Any) -> Any:
    return x


def is_static_leaf(value: Any) -> bool:
    """What ``filter_jit`` holds static: everything but arrays (``eqx.is_array``)."""
    eqx = sys.modules.get("equinox")
    return eqx is not None and not eqx.is_array(value)


def static_fields(node_type: Any, aux: Any) -> list[tuple[str, Any]] | None:
    """[(field, value)] of an Equinox Module's static fields (``eqx.field(static=True)``)
    from its node's auxiliary data ``(wrapper data, *static values)``, or None when
    ``node_type`` is not an Equinox Module or the data has another layout."""
    eqx = sys.modules.get("equinox")
    if eqx is None or not (isinstance(node_type, type) and issubclass(node_type, eqx.Module)):
        return None
    names = [f.name for f in dataclasses.fields(node_type) if f.metadata.get("static", False)]
    if not isinstance(aux, tuple) or len(aux) != len(names) + 1:
        return None
    return list(zip(names, aux[1:]))
