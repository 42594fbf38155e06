"""Wrappers around a user function: ``functools.partial`` and ``jax.tree_util.Partial``
(their bound arguments become named inputs), jit-like wrappers that expose the function
they wrap (``jax.jit``, or any object with ``__wrapped__`` and ``lower``: tracing is what
jaxviz does, so the wrapper adds nothing but its static arguments), and decorators built
with ``functools.wraps`` (traced as they run, named after the function they wrap).

A transformation with tracing rules of its own is never unwrapped, even when it looks
jit-like: ``jax.pmap`` has ``__wrapped__`` and ``lower`` too, but it binds its axis name
(``lax.psum(x, 'batch')`` needs it) and maps over devices, so it is traced as itself."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .. import _jax_internals as internals
from ..call_scopes import is_user_file
from ..jaxprs import is_python_scalar
from .base import Plan, function_name

Adapt = Callable[[Any, tuple, dict], "Plan | None"]


def is_jit_like(fn: Any) -> bool:
    """A jit-like wrapper: exposes what it wraps and can be lowered (``jax.jit``,
    ``eqx.filter_jit``, ``nnx.jit``, a user's own), and adds no tracing rule of its own."""
    return callable(fn) and hasattr(fn, "__wrapped__") and hasattr(fn, "lower") and not has_own_rules(fn)


def has_own_rules(fn: Any) -> bool:
    """A transformation that looks jit-like but traces by rules of its own (``jax.pmap``)."""
    return internals.is_pmap(fn)


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
    plan = Plan(fn, args, kwargs, user_function=inner if inspect.isfunction(inner) else fn,
                name=function_name(fn), transparent=transparent)
    if has_own_rules(fn):  # it gets the Python numbers the user passed (pmap's static_broadcasted_argnums)
        plan.static_argnums = tuple(i for i, a in enumerate(args) if is_python_scalar(a))
        plan.static_argnames = tuple(k for k, v in kwargs.items() if is_python_scalar(v))
    return plan


# ---------------------------------------------------------------------- recompiles
@dataclass(frozen=True)
class UserCall:
    """What the user called through a jit-like wrapper (``eqx.filter_jit``, ``nnx.jit``),
    for the recompilation tracker: so that causes are in the user's terms
    (``model.step_count``, ``xs``), not the wrapper's (``static``, ``dynamic_nodonate``).
    ``wrapper`` is the wrapper object."""

    fun: Callable[..., Any]
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    signature: inspect.Signature | None
    caller: Any  # the user's frame that called the wrapper
    wrapper: Any


def user_call(caller: Any, is_user_frame: Callable[[Any], bool]) -> UserCall | None:
    """The user's call above ``caller`` (the first frame outside JAX of a jit call), or
    None when JAX was called directly or the wrapper is not recognised.

    Between the user's frame and JAX's, the wrapper's entry is the first frame the user's
    code called. When it is ``__call__(self, *args, **kwargs)`` of a jit-like object
    (``is_jit_like``) and the arguments bind to the function it wraps, that function and
    those arguments are what the user called."""
    between, frame = [], caller
    for _ in range(40):
        if frame is None:
            return None
        if is_user_frame(frame):
            break
        between.append(frame)
        frame = frame.f_back
    else:
        return None
    # the first jit-like __call__ below the user's frame (a method's wrapper binds the
    # instance first: eqx's filter_jit method is called through a Partial)
    entry = next((f for f in reversed(between) if f.f_code.co_name == "__call__"
                  and is_jit_like(f.f_locals.get("self"))), None)
    if entry is None:
        return None
    local = entry.f_locals
    owner, args, kwargs = local.get("self"), local.get("args"), local.get("kwargs", {})
    if not isinstance(args, tuple) or not isinstance(kwargs, dict):
        return None
    try:
        if not is_jit_like(owner):
            return None
        fun = owner.__wrapped__
        signature = inspect.signature(fun)
        signature.bind(*args, **kwargs)
    except Exception:  # an object with odd attributes, or arguments that do not bind
        return None
    return UserCall(fun, args, kwargs, signature, frame, owner)
