"""optax: which gradient transformation an update equation came from.

optax builds every ``GradientTransformation`` from two closures, ``init_fn`` and
``update_fn``, defined inside the function the user called (``scale_by_adam``,
``clip_by_global_norm``, ``add_decayed_weights``…). The innermost such ``update_fn`` on an
equation's stack names its transformation; ``chain`` and ``multi_transform`` only route.
Transformations written elsewhere (other libraries, the user's own) often call the closure
``update``: it names its factory the same way.
Nothing is imported: the convention is read from code objects (``co_qualname``, Python
3.11+; on 3.10 the update is grouped by parameter subtree only).
"""

from __future__ import annotations

import functools
from typing import Any

from .. import _jax_internals as internals

ROUTERS = frozenset({"chain", "named_chain", "multi_transform", "partition", "inject_hyperparams"})
_LOCALS = ".<locals>."
UPDATE_CLOSURES = frozenset({"update_fn", "update"})  # a factory's closure, given to GradientTransformation


def transformation_of(eqn: Any) -> str | None:
    """``scale_by_adam`` for an equation emitted inside that transformation's
    ``update_fn``; ``apply_updates`` for ``optax.apply_updates``; else None. Remembered
    per traceback: the update of every parameter leaf shares one."""
    traceback = internals.traceback_of(eqn)
    if traceback is None:
        return None
    found = _by_traceback.get(traceback, _UNSEEN)
    if found is _UNSEEN:
        found = next(filter(None, (_name_of(code) for code, _ in internals.code_stack(eqn))), None)
        if len(_by_traceback) >= _BY_TRACEBACK_MAX:
            _by_traceback.clear()
        _by_traceback[traceback] = found
    return found


_UNSEEN = object()
_BY_TRACEBACK_MAX = 8192
_by_traceback: dict[Any, Any] = {}


@functools.lru_cache(maxsize=4096)
def _name_of(code: Any) -> str | None:
    qualname = getattr(code, "co_qualname", "")
    if code.co_name == "apply_updates" and "optax" in code.co_filename:
        return "apply_updates"
    if code.co_name not in UPDATE_CLOSURES or _LOCALS not in qualname:
        return None
    # the factory that made the closure, past a wrapper it encloses it in
    # (inject_hyperparams › wrapped_transform › update_fn)
    enclosing = [p for p in qualname.split(_LOCALS)[:-1] if "wrap" not in p]
    outer = enclosing[-1].rsplit(".", 1)[-1] if enclosing else None
    return None if outer is None or outer in ROUTERS else outer
