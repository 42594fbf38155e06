"""Wrappers around a user function: ``functools.partial`` and ``jax.tree_util.Partial``
(their bound arguments become named inputs), jit-like wrappers that expose the function
they wrap (``jax.jit``, or any object with ``__wrapped__`` and ``lower``: tracing is what
jaxviz does, so the wrapper adds nothing but its static arguments), and decorators built
with ``functools.wraps`` (traced as they run, named after the function they wrap)."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

from .. import _jax_internals as internals
from ..calls import is_user_file
from .base import Plan, function_name

Adapt = Callable[[Any, tuple, dict], "Plan | None"]


def is_jit_like(fn: Any) -> bool:
    """A jit-like wrapper: exposes what it wraps and can be lowered (``jax.jit``,
    ``eqx.filter_jit``, ``nnx.jit``, a user's own)."""
    return callable(fn) and hasattr(fn, "__wrapped__") and hasattr(fn, "lower")


def adapt_partial(fn: Any, args: tuple, kwargs: dict, adapt: Adapt) -> Plan | None:
    """``partial(f, a, k=b)(x)`` is ``f(a, x, k=b)``: traced as that, so ``a`` and ``b``
    are named inputs rather than anonymous constants."""
    if not isinstance(fn, functools.partial):
        return None
    return adapt(fn.func, (*fn.args, *args), {**fn.keywords, **kwargs})


def adapt_jit_like(fn: Any, args: tuple, kwargs: dict, adapt: Adapt) -> Plan | None:
    """The wrapped function, traced with the wrapper's static arguments (``jax.jit``'s)."""
    if not is_jit_like(fn):
        return None
    plan = adapt(fn.__wrapped__, args, kwargs)
    if plan is None:
        return None
    static = internals.jit_static_args(fn) if hasattr(fn, "trace") else None
    if static is not None and (static[0] or static[1]) and plan.function is fn.__wrapped__:
        plan.static_argnums, plan.static_argnames = static
    return plan


def adapt_function(fn: Any, args: tuple, kwargs: dict) -> Plan:
    """Any other callable: traced as it is. A ``functools.wraps`` decorator's wrapper runs
    (it may do work of its own) but is named, and its arguments are, after the function it
    wraps; its own code gets no call group."""
    inner = inspect.unwrap(fn) if callable(fn) else fn
    transparent = set()
    layer = fn
    while layer is not inner and not is_jit_like(layer):
        code = getattr(getattr(layer, "__func__", layer), "__code__", None)
        if code is not None and is_user_file(code.co_filename):  # library wrappers get no scope anyway
            transparent.add(code)
        layer = layer.__wrapped__
    return Plan(fn, args, kwargs, user_function=inner if inspect.isfunction(inner) else fn,
                name=function_name(fn), transparent=transparent)
