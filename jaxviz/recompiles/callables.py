"""What a jitted callable is (a function, a ``functools.partial``, a bound method, a
closure, a ``jax.tree_util.Partial``) and where the user's code made it: for the
recompilation tracker's "new function object" cause.

JAX's compile cache belongs to the callable object. When a compile is explained by a new
object, the user needs to know which object is new, what kind it is, and the line that
made it (often inside a loop). Nothing here runs on a cache hit.
"""

from __future__ import annotations

import ast
import functools
import inspect
import linecache
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax

from .. import _jax_internals as internals
from ..call_scopes import is_user_file


def _ref(value: Any) -> Callable[[], Any]:
    """A weak reference when the object takes one; otherwise a strong one."""
    try:
        return weakref.ref(value)
    except TypeError:
        return lambda: value


class Identity:
    """What makes a jitted callable the same object for JAX's cache (the object itself:
    JAX's trace cache holds it weakly, so even ``obj.method``, a new bound method object
    at every attribute access, traces again), held weakly, and its wrapper layers."""

    __slots__ = ("ref", "layers")

    def __init__(self, fun: Any) -> None:
        self.ref = _ref(fun)
        self.layers = layers(fun)

    def is_(self, fun: Any) -> bool:
        return self.ref() is fun


class Held:
    """One wrapper layer's object, held weakly. Two are equal only while the first is
    alive and is the second: an ``id`` alone is reused once its object is freed, so a
    new instance made in a loop could pass for the one before."""

    __slots__ = ("ref", "key")

    def __init__(self, value: Any) -> None:
        self.ref = _ref(value)
        self.key = id(value)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Held):
            return NotImplemented
        mine = self.ref()
        return mine is not None and mine is other.ref()

    def __hash__(self) -> int:
        return self.key


def layers(fun: Any) -> tuple[tuple[str, Held], ...]:
    """(kind, object) of each wrapper layer down to the function: tells which layer is new."""
    out = []
    seen: set[int] = set()
    while fun is not None and id(fun) not in seen and len(out) < 16:
        seen.add(id(fun))
        if isinstance(fun, jax.tree_util.Partial):
            out.append(("tree_partial", Held(fun)))
            fun = fun.func
        elif isinstance(fun, functools.partial):
            out.append(("partial", Held(fun)))
            fun = fun.func
        elif inspect.ismethod(fun):
            out.append(("method", Held(fun.__self__)))
            fun = fun.__func__
        else:
            out.append(("function", Held(fun)))
            fun = getattr(fun, "__wrapped__", None)
    return tuple(out)


@dataclass(frozen=True)
class NewObject:
    """A callable that is not the one compiled before: ``kind`` (partial, tree_partial,
    method, closure, lambda, cell, function), ``name`` the user's name for it (a variable
    of the calling code, else the function's name), ``note`` what it is in words,
    ``created`` (file, line) of the code that made it, ``in_loop`` whether that line is
    inside a loop."""

    kind: str
    name: str
    note: str
    created: tuple[str, int] | None
    in_loop: bool = False


def _function_name(fun: Any) -> str:
    return getattr(fun, "__name__", None) or type(fun).__name__


def _innermost(fun: Any) -> Any:
    for _ in range(16):
        if isinstance(fun, functools.partial):
            fun = fun.func
        elif inspect.ismethod(fun):
            fun = fun.__func__
        elif getattr(fun, "__wrapped__", None) is not None:
            fun = fun.__wrapped__
        else:
            break
    return fun


def describe_new(fun: Any, previous: tuple[tuple[str, Held], ...] | None, caller: Any,
                 cell_of: Callable[[str], int | None]) -> NewObject:
    """What is new about ``fun`` compared with the object compiled before (its
    ``layers``), and where ``caller`` (the frame that called the jitted function) made
    it. ``cell_of(filename)`` is the notebook cell a file name belongs to, or None."""
    now = layers(fun)
    outer = now[0][0] if now else "function"
    inner = _innermost(fun)
    base = _function_name(inner)
    if outer == "method":
        cls, method = type(fun.__self__).__name__, fun.__func__.__name__
        before = list(previous or ())
        was_method = len(before) > 1 and before[0][0] == "method"
        if was_method and before[0] == now[0]:
            kind = "method_object"
            note = (f"a new bound method object `{cls}.{method}` of the same {cls} instance "
                    f"(each `obj.{method}` access makes one)")
        elif was_method and before[1] != now[1]:
            kind, note = "method", f"the method `{cls}.{method}` of a class defined again"
        else:
            kind, note = "method", f"the bound method `{cls}.{method}` of a new {cls} instance"
    elif outer in ("partial", "tree_partial"):
        what = "jax.tree_util.Partial" if outer == "tree_partial" else "functools.partial"
        same_func = previous is not None and len(previous) > 1 and previous[1:] == now[1:]
        note = (f"a new {what} of `{base}` (`{base}` itself is the same function)" if same_func
                else f"a new {what} of `{base}`")
        kind = outer
    elif (wrapper := _new_wrapper(now, previous)) is not None:
        kind, (base, note) = "transform", wrapper
    else:
        code = getattr(inner, "__code__", None)
        qualname = getattr(inner, "__qualname__", base)
        if code is not None and cell_of(code.co_filename) is not None:
            kind, note = "cell", f"`{base}` defined again by re-running cell [{cell_of(code.co_filename)}]"
        elif base == "<lambda>":
            kind, note = "lambda", "a new lambda (the same code, another object)"
        elif "<locals>" in qualname:
            parent = qualname.split(".<locals>.")[-2].split(".")[-1]
            kind = "closure"
            note = f"a nested function made again by a new call of `{parent}`"
        else:
            kind, note = "function", f"`{base}` defined again (the same code, another object)"
    name, created, in_loop = base, None, False
    if caller is not None:
        found = _name_in_frame(caller, [fun])
        name = found or base
        anchor = found
        if kind == "method":  # the new instance: where was it made?
            anchor = _name_in_frame(caller, [fun.__self__]) or found
            if anchor and anchor != found:
                note += f" `{anchor}`"
        code = getattr(inner, "__code__", None) if kind == "closure" else None
        if code is not None and is_user_file(code.co_filename):
            created = (code.co_filename, code.co_firstlineno)
            in_loop = False
        else:  # made by a call: the line that assigned it (``tx = optax.sgd(lr)``)
            site = _assignment(caller, anchor.split(".")[0]) if anchor else None
            created = site[:2] if site else (caller.f_code.co_filename, caller.f_lineno)
            in_loop = site[2] if site else _in_loop(caller, caller.f_lineno)
    if kind == "transform" and name == base:  # no variable holds it: named as written
        note = note.replace(f"a new `{base}` ", "a new function ", 1)
    return NewObject(kind, name, note, created, in_loop)


def _new_wrapper(now: tuple[tuple[str, Held], ...],
                 previous: tuple[tuple[str, Held], ...] | None) -> tuple[str, str] | None:
    """When the innermost function is the one compiled before and only a layer wrapping
    it is new (``jax.jit(jax.grad(loss))`` in a loop: ``jax.grad`` returns a new function
    each time), that layer: its name as written (``jax.grad(loss)``) and in words."""
    if not previous or len(previous) != len(now) or len(now) < 2 or now[-1] != previous[-1]:
        return None
    new = [i for i, (a, b) in enumerate(zip(now, previous)) if a != b]
    if not new:
        return None
    layer = now[new[-1]][1].ref()
    inner = _function_name(now[new[-1] + 1][1].ref())
    transform = internals.transform_name(layer)
    if transform is not None:
        made = f"jax.{transform}({inner})"
        by = f"`jax.{transform}` returns a new function at each call"
        words = f"`{made}`"
    else:
        made, by = _function_name(layer), "its wrapper was made again"
        words = f"`{made}` wrapping `{inner}`"
    return made, f"a new {words} ({by}; `{inner}` itself is the same function)"


def _name_in_frame(frame: Any, targets: list[Any]) -> str | None:
    """The calling code's variable that holds one of ``targets`` (or a jitted wrapper of
    one): the name the user knows the new object by."""
    scopes = [frame.f_locals]
    if frame.f_globals is not frame.f_locals:
        scopes.append(frame.f_globals)
    for scope in scopes:
        for key, value in list(scope.items()):
            if key.startswith("_"):
                continue  # IPython's _, _5, __ … and private names
            if any(value is t for t in targets):
                return key
            try:
                wrapped = getattr(value, "__wrapped__", None) if callable(value) else None
            except Exception:  # an object with an odd __getattr__
                continue
            if wrapped is not None and any(wrapped is t for t in targets):
                return key
    for scope in scopes:  # an attribute of a variable: `tx.update`
        for key, value in list(scope.items()):
            if key.startswith("_") or isinstance(value, type):
                continue
            attr = _attribute_holding(value, targets)
            if attr is not None:
                return f"{key}.{attr}"
    return None


def _attribute_holding(value: Any, targets: list[Any]) -> str | None:
    """The field of a namedtuple, or public attribute of an object, that is a target."""
    try:
        fields = getattr(value, "_fields", None) if isinstance(value, tuple) else None
        items = zip(fields, value) if fields is not None else \
            (getattr(value, "__dict__", None) or {}).items()
        return next((k for k, v in items if not k.startswith("_")
                     and any(v is t for t in targets)), None)
    except Exception:  # an object with an odd __getattr__
        return None


def _tree(file: str) -> ast.AST | None:
    source = "".join(linecache.getlines(file))
    if not source:
        return None
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError):
        return None


def _scope(tree: ast.AST, frame: Any) -> ast.AST:
    """The def the frame runs in (by its first line), or the whole module."""
    first = frame.f_code.co_firstlineno
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and (
                node.lineno == first or any(d.lineno == first for d in node.decorator_list)):
            return node
    return tree


def _targets(node: ast.AST) -> list[ast.AST]:
    if isinstance(node, ast.Assign):
        return list(node.targets)
    if isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.NamedExpr, ast.For)):
        return [node.target]
    if isinstance(node, ast.withitem) and node.optional_vars is not None:
        return [node.optional_vars]
    return []


def _assigns(node: ast.AST, name: str) -> bool:
    for target in _targets(node):
        if any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(target)):
            return True
    return False


def _loops_around(scope: ast.AST, line: int) -> bool:
    for node in ast.walk(scope):
        if isinstance(node, (ast.For, ast.While, ast.AsyncFor)) and node.body:
            end = getattr(node, "end_lineno", None) or node.lineno
            if node.body[0].lineno <= line <= end:
                return True
    return False


def line_in_loop(file: str, line: int) -> bool:
    """Whether ``line`` of ``file`` (a notebook cell too) is inside a for/while loop."""
    tree = _tree(file)
    return tree is not None and _loops_around(tree, line)


def _in_loop(frame: Any, line: int) -> bool:
    tree = _tree(frame.f_code.co_filename)
    return tree is not None and _loops_around(_scope(tree, frame), line)


def _assignment(frame: Any, name: str) -> tuple[str, int, bool] | None:
    """(file, line, inside a loop) of the last assignment of ``name`` at or above the
    frame's current line, in the function (or cell) the frame runs."""
    file = frame.f_code.co_filename
    tree = _tree(file)
    if tree is None:
        return None
    scope = _scope(tree, frame)
    nodes: list[Any] = list(ast.walk(scope))
    lines = [n.lineno for n in nodes if hasattr(n, "lineno") and _assigns(n, name)]
    lines += [item.context_expr.lineno for n in ast.walk(scope) if isinstance(n, ast.With)
              for item in n.items if _assigns(item, name)]
    before = [n for n in lines if n <= frame.f_lineno]
    if not (before or lines):
        return None
    line = max(before) if before else min(lines)
    return file, line, _loops_around(scope, line)


# ---------------------------------------------------------------------- built where
def _holds(value: Any, target: Any, depth: int) -> bool:
    """Whether ``value`` is ``target`` or holds it (an attribute, an item), ``depth``
    levels down."""
    if value is target:
        return True
    if depth <= 0 or isinstance(value, (str, bytes, int, float, type)) or callable(value) \
            and not hasattr(value, "__dict__"):
        return False
    try:
        if isinstance(value, (tuple, list)):
            inner = list(value)[:32]
        elif isinstance(value, dict):
            inner = list(value.values())[:32]
        else:
            state = getattr(value, "__dict__", None)
            inner = list(state.values())[:32] if isinstance(state, dict) else []
    except Exception:  # an object with an odd __getattr__
        return False
    return any(_holds(v, target, depth - 1) for v in inner)


def built_at(target: Any, frame: Any, is_user_frame: Callable[[Any], bool]
             ) -> tuple[str, int, bool] | None:
    """(file, line, inside a loop) of the assignment, in the user's code at or above
    ``frame``, of the variable that holds ``target`` (itself, or an object holding it):
    where the user built a new object that JAX compares by identity."""
    first = None
    for _ in range(6):
        while frame is not None and not is_user_frame(frame):
            frame = frame.f_back
        if frame is None:
            break
        for depth in (0, 1, 2):
            name = next((k for k, v in list(frame.f_locals.items())
                         if not k.startswith("_") and _holds(v, target, depth)), None)
            if name is not None:
                return _assignment(frame, name)
        if first is None:
            first = frame
        frame = frame.f_back
    if first is None:
        return None
    # held by no variable: built in the expression of the call itself
    return first.f_code.co_filename, first.f_lineno, _in_loop(first, first.f_lineno)
