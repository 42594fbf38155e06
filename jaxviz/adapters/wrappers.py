"""jit-like wrappers (``eqx.filter_jit``, ``nnx.jit``, any callable object that wraps the
user's function and calls ``jax.jit`` on a reshaped version of the arguments): the call
the user made, for the recompilation tracker, so that causes are in the user's terms
(``model.step_count``, ``xs``) rather than the wrapper's (``static``,
``dynamic_nodonate['rest'][9]``).

How the user's call is found: between the user's frame and JAX's, the wrapper's entry
frame is the first one the user's code called. When it is ``__call__(self, *args,
**kwargs)`` of an object with ``__wrapped__`` (the ``functools.wraps`` convention every
such wrapper follows), and the arguments bind to that function's signature, then
``self.__wrapped__`` and those arguments are what the user called.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from . import equinox


@dataclass(frozen=True)
class UserCall:
    """What the user called through a jit-like wrapper. ``is_static_leaf``: which leaves
    the wrapper holds static (compared by value), None: arrays and Python scalars are
    traced as ``jax.jit`` would. ``wrapper`` names the wrapper (``eqx.filter_jit``)."""

    fun: Callable[..., Any]
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    signature: inspect.Signature | None
    caller: Any  # the user's frame that called the wrapper
    wrapper: str
    is_static_leaf: Callable[[Any], bool] | None = None


def user_call(caller: Any, is_user_frame: Callable[[Any], bool]) -> UserCall | None:
    """The user's call above ``caller`` (the first frame outside JAX), or None when JAX
    was called directly (``jax.jit``) or the wrapper is not recognised."""
    entry, frame = None, caller
    for _ in range(40):
        if frame is None:
            return None
        if is_user_frame(frame):
            break
        entry, frame = frame, frame.f_back
    else:
        return None
    if entry is None or frame is None or entry.f_code.co_name != "__call__":
        return None
    local = entry.f_locals
    owner, args, kwargs = local.get("self"), local.get("args"), local.get("kwargs", {})
    if not isinstance(args, tuple) or not isinstance(kwargs, dict):
        return None
    try:
        fun = getattr(owner, "__wrapped__", None)
    except Exception:
        return None
    if fun is None or not callable(fun):
        return None
    try:
        signature = inspect.signature(fun)
        signature.bind(*args, **kwargs)
    except (TypeError, ValueError):
        return None
    if equinox.is_filter_jit(owner):
        return UserCall(fun, args, kwargs, signature, frame, "eqx.filter_jit",
                        equinox.is_static_leaf)
    module = type(owner).__module__.split(".")[0]
    return UserCall(fun, args, kwargs, signature, frame, f"{module}.{type(owner).__name__}")
