"""When ``jax.clear_caches()`` ran, and from which line of the user's code: JAX tells
its registered caches to clear themselves, and one of them is ours (it holds nothing).
A compile whose key equals one compiled before is explained by the clear that came
between them. Nothing runs on a cache hit. ``install()`` registers our cache with JAX."""

from __future__ import annotations

import threading
from typing import Any

from .. import _jax_internals as internals
from ..call_scopes import is_user_file

_LOCK = threading.Lock()
_STATE: dict[str, Any] = {"generation": 0, "where": None}


def _cleared(frame: Any) -> None:
    while frame is not None and not is_user_file(frame.f_code.co_filename):
        frame = frame.f_back
    where = (frame.f_code.co_filename, frame.f_lineno) if frame is not None else None
    with _LOCK:
        _STATE["generation"] += 1
        _STATE["where"] = where


def install() -> None:
    """Hear ``jax.clear_caches()`` from now on (idempotent; ``jaxviz.wiring`` calls it)."""
    with _LOCK:
        if _STATE.get("installed"):
            return
        _STATE["installed"] = True
    internals.on_caches_cleared(_cleared)


def generation() -> int:
    """How many times ``jax.clear_caches()`` has run in this process."""
    return _STATE["generation"]


def last_clear() -> tuple[str, int] | None:
    """(file, line) of the user's code that called ``jax.clear_caches()`` last, if any."""
    return _STATE["where"]
