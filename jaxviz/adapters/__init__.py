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
from .base import InPlaceState, Plan, UnsplittableArgument

__all__ = ["CHAIN", "IN_PLACE", "InPlaceState", "Plan", "UnsplittableArgument", "adapt",
           "calls_layer_named_by_attribute", "captured_leaf_names", "in_place_state", "named_by_attribute"]

# Library objects first (an eqx filter_jit is also jit-like; nnx.jit is too), then wrappers.
CHAIN = (equinox.adapt, flax_nnx.adapt, flax_linen.adapt, haiku.adapt)
# The libraries whose objects a call updates in place (read and written back by a cell).
IN_PLACE = (flax_nnx.IN_PLACE,)
# The libraries whose layers are named after the attribute that holds them (their calls
# have no name of their own): ``linear1`` for ``self.linear1(x)``. Per library: whether a
# value is such a layer, and whether a code object is such a layer's ``__call__``.
NAMED_BY_ATTRIBUTE = ((flax_nnx.is_module, flax_nnx.is_module_call),)


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


def captured_leaf_names(name: str, value: Any) -> list[str] | None:
    """Names of a captured value's leaves in its library's words (an NNX Module's
    ``model.linear1.kernel``, without the Variable's ``.value``), or None: by key path."""
    state = in_place_state(value)
    return state.leaf_names(name, value) if state is not None else None


def in_place_state(value: Any) -> InPlaceState | None:
    """How to read and write back ``value``'s state, when its library updates it in place."""
    return next((state for state in IN_PLACE if state.recognises(value)), None)


def named_by_attribute(value: Any) -> bool:
    """Whether a layer ``value`` is named after the attribute that holds it."""
    return any(is_layer(value) for is_layer, _ in NAMED_BY_ATTRIBUTE)


def calls_layer_named_by_attribute(code: Any) -> bool:
    """Whether ``code`` is the ``__call__`` of a layer named after the attribute that holds it."""
    return any(is_layer_call(code) for _, is_layer_call in NAMED_BY_ATTRIBUTE)
