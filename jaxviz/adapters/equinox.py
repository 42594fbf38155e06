"""Equinox, for the recompilation tracker: ``eqx.filter_jit`` holds every non-array leaf
of its arguments static (compared by value), and traces the arrays."""

from __future__ import annotations

import dataclasses
import sys
from typing import Any


def is_filter_jit(wrapper: Any) -> bool:
    """An ``eqx.filter_jit`` function (or method), once the user has imported Equinox."""
    eqx = sys.modules.get("equinox")
    return eqx is not None and isinstance(wrapper, eqx.Module) and \
        type(wrapper).__module__.startswith("equinox") and hasattr(wrapper, "__wrapped__")


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
