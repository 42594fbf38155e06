"""Errors in the user's words: one screen, pointing at the user's line.

``format_user_error`` is what the magics show for any exception raised by a cell or a
traced function: the error, the user's line (cell line numbers for notebook cells) with
a caret, and a hint when we know one. The full traceback stays available with ``%tb``.
"""

from __future__ import annotations

import linecache
import traceback
from dataclasses import dataclass

from .tracing import is_user_file

MAX_MESSAGE_LINES = 12


@dataclass(slots=True)
class UserLine:
    file: str
    line: int
    function: str
    text: str
    cell_line: int | None = None

    def where(self) -> str:
        if self.cell_line is not None:
            return f"cell line {self.cell_line}"
        return f"{self.file}:{self.line} in {self.function}"


def user_line(exc: BaseException, cell_file: str | None = None) -> UserLine | None:
    """The innermost frame of user code in the exception's traceback (or the syntax
    error's position)."""
    if isinstance(exc, SyntaxError) and exc.lineno:
        file = exc.filename or ""
        text = (exc.text or linecache.getline(file, exc.lineno)).rstrip("\n")
        return UserLine(file, exc.lineno, "<cell>", text, exc.lineno if file == cell_file else None)
    found = None
    for frame in traceback.extract_tb(exc.__traceback__):
        if is_user_file(frame.filename) and not frame.filename.startswith("<frozen"):
            found = frame
    if found is None:
        return None
    text = linecache.getline(found.filename, found.lineno).rstrip("\n")
    return UserLine(found.filename, found.lineno, found.name, text,
                    found.lineno if found.filename == cell_file else None)


def hint_for(exc: BaseException, traced_names: list[str] = ()) -> str | None:
    """A one-line fix for the common cases (the error explainer goes further)."""
    import jax

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
                      traced_names: list[str] = (), title: str = "jaxviz") -> list[str]:
    """The one-screen message, as lines of plain text."""
    lines = [f"{title}: {type(exc).__name__} while running this cell"]
    where = user_line(exc, cell_file)
    if where is not None:
        lines.append(f"  at {where.where()}:")
        lines.append(f"    {where.text.strip()}")
        if isinstance(exc, SyntaxError) and exc.offset:
            indent = len(where.text) - len(where.text.lstrip())
            lines.append("    " + " " * max(exc.offset - 1 - indent, 0) + "^")
    relevant = [w for w in (traced_names or []) if where is not None and w in where.text]
    message = str(exc).strip().splitlines() or [""]
    if isinstance(exc, SyntaxError):
        message = [exc.msg]
    lines += [f"  {type(exc).__name__}: {message[0]}"]
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
