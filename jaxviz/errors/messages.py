"""Errors on one screen: the user's line, JAX's message and a hint (or the tracer
explanation), instead of a traceback from inside jaxviz."""

from __future__ import annotations

from collections.abc import Sequence

import jax

from .capture import safe_explain
from .userline import MAX_MESSAGE_LINES, user_line


def hint_for(exc: BaseException, traced_names: Sequence[str] = ()) -> str | None:
    """A one-line fix for the common cases (``explain`` goes further)."""
    errors = jax.errors
    if isinstance(exc, (errors.TracerBoolConversionError, errors.ConcretizationTypeError,
                        errors.TracerIntegerConversionError)):
        names = ", ".join(traced_names) if traced_names else "the value"
        return (f"Python control flow or int()/bool() needs a concrete value, but {names} is traced "
                "here. Mark it static (`%%jaxpr --static NAME`, or `static_argnames=` for jit), "
                "or use jnp.where / lax.cond / lax.fori_loop instead of Python `if`/`for`.")
    if isinstance(exc, errors.TracerArrayConversionError):
        return "np.asarray() needs a concrete value; use jnp instead of np on traced values."
    if isinstance(exc, errors.NonConcreteBooleanIndexError):
        return "x[mask] has a data-dependent shape; use jnp.where(mask, x, 0) or jnp.nonzero(mask, size=N)."
    if isinstance(exc, NameError):
        return "Define the name in an earlier cell (and run it) before this one."
    return None


def format_user_error(exc: BaseException, cell_file: str | None = None,
                      traced_names: Sequence[str] = (), title: str = "jaxviz") -> list[str]:
    """The one-screen message, as lines of plain text."""
    lines = [f"{title}: {type(exc).__name__} while running this cell"]
    explanation = safe_explain(exc)
    where = explanation.line if explanation is not None and explanation.line else user_line(exc, cell_file)
    if where is not None:
        lines.append(f"  at {where.where()}:")
        lines.append(f"    {where.text.strip()}")
        if isinstance(exc, SyntaxError) and exc.offset:
            indent = len(where.text) - len(where.text.lstrip())
            lines.append("    " + " " * max(exc.offset - 1 - indent, 0) + "^")
        elif where.expression and where.col is not None:
            indent = len(where.text) - len(where.text.lstrip())
            lines.append("    " + " " * max(where.col - indent, 0) + "^" * len(where.expression))
    relevant = [w for w in (traced_names or []) if where is not None and w in where.text]
    message = str(exc).strip().splitlines() or [""]
    if isinstance(exc, SyntaxError):
        message = [exc.msg]
    lines += [f"  {type(exc).__name__}: {message[0]}"]
    if explanation is not None:  # the message is JAX's long one: show ours instead
        lines += ["  " + w.replace("`", "") for w in explanation.why_lines()]
        if explanation.fixes:
            fix = explanation.fixes[0]
            lines.append(f"  fix: {fix.title.replace('`', '')}"
                         + (f": {fix.code.splitlines()[0]}" if fix.code else ""))
        lines.append("  (jaxviz.explain(exc) shows the value's provenance graph and every fix)")
    else:
        lines += ["    " + m for m in message[1:MAX_MESSAGE_LINES]]
        if len(message) > MAX_MESSAGE_LINES:
            lines.append(f"    … ({len(message) - MAX_MESSAGE_LINES} more lines)")
        hint = hint_for(exc, relevant)
        if hint:
            lines.append(f"  hint: {hint}")
    lines.append("  (your namespace is unchanged; %tb shows the full traceback)")
    return lines


def attach_rendering(exc: BaseException, lines: list[str]) -> BaseException:
    """Make IPython show ``lines`` instead of the long traceback, keeping the exception
    object itself (type, args, traceback) unchanged for anyone who catches it."""
    try:
        exc._render_traceback_ = lambda: list(lines)  # type: ignore[attr-defined]
    except (AttributeError, TypeError):
        pass
    return exc


class CellSyntaxError(Exception):
    """A syntax error in a ``%%jaxpr`` cell, shown as one screen. (Not a SyntaxError
    subclass: IPython renders those itself, ignoring ``_render_traceback_``.)"""

    def __init__(self, original: SyntaxError, lines: list[str]) -> None:
        super().__init__(f"{original.msg} (cell line {original.lineno})")
        self.original = original
        self.lineno = original.lineno
        self._lines = lines

    def _render_traceback_(self) -> list[str]:
        return list(self._lines)
