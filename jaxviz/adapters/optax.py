"""optax: which gradient transformation an update equation came from.

optax builds every ``GradientTransformation`` from two closures, ``init_fn`` and
``update_fn``, defined inside the function the user called (``scale_by_adam``,
``clip_by_global_norm``, ``add_decayed_weights``…). The innermost such ``update_fn`` on an
equation's stack names its transformation; ``chain`` and ``multi_transform`` only route.
Nothing is imported: the convention is read from code objects (``co_qualname``, Python
3.11+; on 3.10 the update is grouped by parameter subtree only).
"""

from __future__ import annotations

import functools
from typing import Any

from .. import _jax_internals as internals

ROUTERS = frozenset({"chain", "named_chain", "multi_transform", "partition", "inject_hyperparams"})
_LOCALS = ".<locals>."


def transformation_of(eqn: Any) -> str | None:
    """``scale_by_adam`` for an equation emitted inside that transformation's
    ``update_fn``; ``apply_updates`` for ``optax.apply_updates``; else None."""
    found: list[str] = []

    def is_transformation(code: Any) -> bool:
        name = _name_of(code)
        if name is not None:
            found.append(name)
        return name is not None

    internals.innermost_frame(eqn, is_transformation)
    return found[-1] if found else None


@functools.lru_cache(maxsize=4096)
def _name_of(code: Any) -> str | None:
    qualname = getattr(code, "co_qualname", "")
    if code.co_name == "apply_updates" and "optax" in code.co_filename:
        return "apply_updates"
    if code.co_name != "update_fn" or _LOCALS not in qualname:
        return None
    outer = qualname.rsplit(_LOCALS, 1)[0].rsplit(".", 1)[-1]
    return None if outer in ROUTERS else outer
