"""The user's source as Python's ``ast``: parsed once per file, the expression at a
code position."""

from __future__ import annotations

import ast
import linecache
from typing import Any

_AST_CACHE: dict[tuple[str, int], tuple[ast.AST, dict[int, ast.AST]] | None] = {}


def _parsed(file: str) -> tuple[ast.AST, dict[int, ast.AST]] | None:
    """The file's AST and a child → parent map (cached by file and size)."""
    lines = linecache.getlines(file)
    key = (file, sum(len(s) for s in lines))
    if key not in _AST_CACHE:
        try:
            tree = ast.parse("".join(lines))
        except (SyntaxError, ValueError):
            _AST_CACHE[key] = None
        else:
            parents = {id(c): p for p in ast.walk(tree) for c in ast.iter_child_nodes(p)}
            _AST_CACHE[key] = (tree, parents)
    return _AST_CACHE[key]


def node_at(file: str, span: tuple[int, int, int, int] | None, types: tuple[type, ...] = (ast.expr,)
             ) -> tuple[ast.AST | None, dict[int, ast.AST]]:
    """The AST node of ``types`` exactly at ``span`` (else the smallest enclosing one)."""
    parsed = _parsed(file) if span else None
    if parsed is None or span is None:
        return None, {}
    tree, parents = parsed
    line, end_line, col, end_col = span
    best: Any = None
    located: list[Any] = [n for n in ast.walk(tree) if isinstance(n, types) and hasattr(n, "end_lineno")]
    for node in located:
        start, end = (node.lineno, node.col_offset), (node.end_lineno, node.end_col_offset)
        if (start, end) == ((line, col), (end_line, end_col)):
            return node, parents
        if start <= (line, col) and end >= (end_line, end_col):
            if best is None or (start, (-end[0], -end[1])) > (
                    (best.lineno, best.col_offset), (-best.end_lineno, -best.end_col_offset)):
                best = node
    return best, parents


def source_text(node: ast.AST | None) -> str:
    if node is None:
        return ""
    try:
        return ast.unparse(node)
    except Exception:
        return ""


def call_name(call: ast.Call) -> str:
    f = call.func
    if isinstance(f, ast.Attribute):
        return f.attr
    if isinstance(f, ast.Name):
        return f.id
    return ""
