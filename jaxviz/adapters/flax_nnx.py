"""Flax NNX, for the recompilation tracker: an ``nnx.Module`` is a pytree whose static
attributes (``self.step_count = 0``, an activation function) are its node's auxiliary
data; this names them."""

from __future__ import annotations

import sys
from typing import Any


def static_fields(node_type: Any, aux: Any) -> list[tuple[str, Any]] | None:
    """[(attribute, value)] of the static attributes in an NNX node's auxiliary data
    ``(data names, static names, static values)``, or None when ``node_type`` is not an
    NNX pytree node or its data has another layout."""
    nnx = sys.modules.get("flax.nnx")
    pytree = getattr(nnx, "Pytree", None) if nnx is not None else None
    if pytree is None or not (isinstance(node_type, type) and issubclass(node_type, pytree)):
        return None
    if not (isinstance(aux, tuple) and len(aux) == 3):
        return None
    names, values = aux[1], aux[2]
    if not (isinstance(names, tuple) and isinstance(values, tuple) and len(names) == len(values)
            and all(isinstance(n, str) for n in names)):
        return None
    return [(n, v) for n, v in zip(names, values) if not n.startswith("_")]
