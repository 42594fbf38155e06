"""Adapters: what the user calls → what jaxviz traces (a ``Plan``).

One module per library; each recognises its objects by what they expose, looking only at
libraries the user has already imported (``sys.modules``), never importing one. The chain
is tried in order; the first adapter that recognises the callable wins, and wrappers
(``functools.partial``, jit-like wrappers) hand what they wrap back to the chain. Adding a
library is a new module and one line in ``CHAIN``.
"""

from __future__ import annotations

from typing import Any

from . import equinox, flax_linen, flax_nnx, haiku, wrappers
from .base import Plan, UnsplittableArgument

__all__ = ["CHAIN", "Plan", "UnsplittableArgument", "adapt"]

# Library objects first (an eqx filter_jit is also jit-like; nnx.jit is too), then wrappers.
CHAIN = (equinox.adapt, flax_nnx.adapt, flax_linen.adapt, haiku.adapt)


def adapt(fn: Any, args: tuple, kwargs: dict) -> Plan:
    """The plan to trace ``fn(*args, **kwargs)`` the way its library would."""
    for adapter in CHAIN:
        plan = adapter(fn, args, kwargs)
        if plan is not None:
            return plan
    for wrapper in (wrappers.adapt_partial, wrappers.adapt_jit_like):
        plan = wrapper(fn, args, kwargs, adapt)
        if plan is not None:
            return plan
    return wrappers.adapt_function(fn, args, kwargs)
