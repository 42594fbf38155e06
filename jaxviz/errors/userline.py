"""The user's line: where in the user's code (a cell, a file) an exception was raised,
and the traceback cut down to the user's frames."""

from __future__ import annotations

import linecache
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..call_scopes import ipython_cell_name, is_user_file

MAX_MESSAGE_LINES = 12


# ====================================================================== the user's line
@dataclass(slots=True)
class UserLine:
    file: str
    line: int
    function: str
    text: str
    cell_line: int | None = None
    col: int | None = None  # 0-based span of the failing expression on ``line``
    end_col: int | None = None
    cell: str | None = None  # "In[5]" for an ordinary IPython cell
    span: tuple[int, int, int, int] | None = None  # Python's (line, end_line, col, end_col)

    def where(self) -> str:
        if self.cell is not None:
            return f"cell {self.cell}, line {self.line}"
        if self.cell_line is not None:
            return f"cell line {self.cell_line}"
        return f"{self.file}:{self.line} in {self.function}"

    @property
    def expression(self) -> str | None:
        if self.col is None or self.end_col is None or self.end_col <= self.col:
            return None
        return self.text[self.col:self.end_col]


def code_span(code: Any, lasti: int) -> tuple[int, int, int, int] | None:
    """(line, end_line, col, end_col) of the instruction at ``lasti`` (Python 3.11+)."""
    if lasti < 0 or not hasattr(code, "co_positions"):
        return None
    try:
        pos = list(code.co_positions())[lasti // 2]
    except IndexError:
        return None
    return pos if None not in pos else None


def frame_line(file: str, line: int, function: str, span: tuple | None,
                cell_file: str | None) -> UserLine:
    text = linecache.getline(file, line).rstrip("\n")
    col = end_col = None
    if span is not None and span[0] == line:
        col = span[2]
        end_col = span[3] if span[1] == line else len(text)
    cell = ipython_cell_name(file)
    is_cell = file == cell_file or file.startswith("<jaxviz-cell-") or cell is not None
    return UserLine(file, line, function, text, line if is_cell else None, col, end_col, cell,
                    span if span is not None and span[0] == line else None)


def user_line(exc: BaseException, cell_file: str | None = None) -> UserLine | None:
    """The innermost frame of user code in the exception's traceback (or the syntax
    error's position), with the failing expression's columns when Python knows them."""
    if isinstance(exc, SyntaxError) and exc.lineno:
        file = exc.filename or ""
        text = (exc.text or linecache.getline(file, exc.lineno)).rstrip("\n")
        return UserLine(file, exc.lineno, "<cell>", text, exc.lineno if file == cell_file else None)
    found = None
    tb = exc.__traceback__
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        if is_user_file(name) and not name.startswith("<frozen"):
            found = tb
        tb = tb.tb_next
    if found is None:
        return None
    code = found.tb_frame.f_code
    return frame_line(code.co_filename, found.tb_lineno, code.co_name,
                       code_span(code, found.tb_lasti), cell_file)


def user_frames(tb: Any) -> list[UserLine]:
    """The traceback's frames in the user's code (cells, the user's files), outermost
    first: what a traceback of an explained error keeps."""
    out = []
    while tb is not None:
        code = tb.tb_frame.f_code
        if is_user_file(code.co_filename) and not code.co_filename.startswith("<frozen"):
            out.append(frame_line(code.co_filename, tb.tb_lineno, code.co_name,
                                   code_span(code, tb.tb_lasti), None))
        tb = tb.tb_next
    return out


_RED, _GREEN, _BOLD, _RESET = "\x1b[0;31m", "\x1b[0;32m", "\x1b[1m", "\x1b[0m"


ANSI = re.compile(r"\x1b\[[0-9;]*m")


def short_traceback(exc: BaseException) -> list[str]:
    """An explained error's traceback: the error, then only the user's frames (line and
    caret), then where the rest is. IPython shows these lines instead of the long one."""
    message = (str(exc).strip().splitlines() or [""])[0]
    lines = [f"{_RED}{_BOLD}{type(exc).__name__}{_RESET}: {message}"]
    for frame in user_frames(exc.__traceback__):
        where = frame.where() if frame.cell else f"{frame.file}:{frame.line}"
        function = "" if frame.function == "<module>" else f", in {frame.function}"
        lines.append(f"  {_GREEN}{where}{function}{_RESET}")
        lines.append(f"    {frame.text.strip()}")
        if frame.expression and frame.col is not None and frame.expression.strip() != frame.text.strip():
            indent = len(frame.text) - len(frame.text.lstrip())
            lines.append("    " + " " * max(frame.col - indent, 0) + "^" * len(frame.expression))
    lines.append("(explained above; your frames only: the full traceback is folded above, "
                 "or run %tb)")
    return lines


def walk_tb(tb: Any) -> Iterable[Any]:
    while tb is not None:
        yield tb
        tb = tb.tb_next
