"""Every use of a private JAX API lives here, behind small functions.

JAX gives no public access to an equation's source location or name stack. Each helper
below is covered by ``tests/test_jax_internals.py``, which fails loudly (naming this
module) when a JAX release changes what we rely on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from jax._src import source_info_util as _siu


@dataclass(frozen=True, slots=True)
class UserFrame:
    """One frame of user code in an equation's traceback."""

    file: str
    function: str
    line: int
    column: int
    end_line: int
    end_column: int


@dataclass(frozen=True, slots=True)
class ScopeElement:
    """One element of an equation's name stack: a named scope or a transformation."""

    kind: str  # "scope" | "transform"
    name: str


def user_frames(eqn: Any) -> list[UserFrame]:
    """User-code frames of the equation's traceback, innermost first."""
    traceback = getattr(eqn.source_info, "traceback", None)
    if traceback is None:
        return []
    return [
        UserFrame(
            f.file_name,
            f.function_name,
            f.start_line,
            f.start_column,
            f.end_line,
            f.end_column,
        )
        for f in _siu.user_frames(traceback)
    ]


def name_stack(eqn: Any) -> tuple[ScopeElement, ...]:
    """The equation's name stack, outermost first (scopes and transforms such as jvp)."""
    stack = eqn.source_info.name_stack.stack
    return tuple(
        ScopeElement("transform" if type(el).__name__ == "Transform" else "scope", el.name)
        for el in stack
    )


def register_library_path(path: str) -> None:
    """Treat files under ``path`` as library code (hidden from user frames)."""
    # jax filters tracebacks by path prefix; our own package must not look like user code.
    _siu.register_exclusion(path)


def jit_static_args(jitted: Any) -> tuple[tuple[int, ...], tuple[str, ...]] | None:
    """``(static_argnums, static_argnames)`` a ``jax.jit``-ed function was created with,
    or None when ``jitted`` is not one (jax.stages exposes no public accessor)."""
    info = getattr(jitted, "_jit_info", None)
    if info is None:
        return None
    return tuple(info.static_argnums), tuple(info.static_argnames)
