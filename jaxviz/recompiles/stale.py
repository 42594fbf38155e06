"""Stale globals: values a function read at trace time (baked into its compiled program)
that have changed since."""

from __future__ import annotations

import inspect
import weakref
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np

from .. import _jax_internals as internals
from ..call_scopes import is_user_file
from ..jaxprs import is_python_scalar
from ..tracing import captured_values
from .signature import MISSING, short_repr, unwrap_chain


@dataclass(frozen=True)
class StaleGlobal:
    """A global/closure value baked into a compiled function that has changed since."""

    function: str
    name: str
    source: str  # "global" | "closure"
    baked: str
    current: str
    message: str

    def __str__(self) -> str:
        return self.message

    def to_json(self) -> dict[str, Any]:
        return {"function": self.function, "name": self.name, "source": self.source,
                "baked": self.baked, "current": self.current, "message": self.message}


_SMALL = 10_000  # arrays up to this many elements are compared by value


class _Baked:
    """One value baked in at one trace, and where to read the name's current value."""

    __slots__ = ("name", "source", "where", "value", "ref", "copy", "tree", "text",
                 "last_obj", "last_stale", "last_leaves", "version", "reported", "message",
                 "message_for", "message_version")

    def __init__(self, name: str, source: str, where: Any, value: Any,
                 tree: Any = None) -> None:
        self.name, self.source, self.where = name, source, where
        self.text = short_repr(value)
        self.tree = tree  # for a container of numbers: its snapshot (_snapshot)
        self.value = value if is_python_scalar(value) else None
        self.ref = None
        self.copy = None
        if self.value is None and tree is None:
            try:
                self.ref = weakref.ref(value)
            except TypeError:
                self.value = value  # keep it: we cannot tell later otherwise
            if getattr(value, "size", _SMALL + 1) <= _SMALL:
                try:
                    self.copy = np.array(value)
                except Exception:
                    self.copy = None
        self.last_obj = value
        self.last_stale = False
        # A container's (structure, leaves, leaf snapshot) when it was last compared: while
        # the container and its leaves are the same objects, nothing is copied again.
        self.last_leaves: tuple[Any, tuple[Any, ...], _Leaves] | None = None
        if tree is not None:
            flat = _small_leaves(value)
            if flat is not None and flat[1] == tree[0] and len(flat[0]) == len(tree[1]):
                self.last_leaves = (tree[0], tuple(flat[0]), tree[1])
        self.version = 0  # counts the comparisons of a container that found it changed
        self.reported: str | None = None
        self.message: StaleGlobal | None = None  # for message_for, the current value
        self.message_for: Any = None
        self.message_version = 0

    def current(self) -> Any:
        if self.source == "closure":
            try:
                return self.where.cell_contents
            except ValueError:
                return MISSING
        return self.where.get(self.name, MISSING)

    def is_baked(self, value: Any) -> bool:
        if self.tree is not None:
            return _snapshot(value) == self.tree
        if self.value is not None or is_python_scalar(value):
            return self.value is not None and _same_scalar(self.value, value)
        if self.ref is not None and self.ref() is value:
            if self.copy is not None and isinstance(value, np.ndarray):  # mutated in place?
                return bool(np.array_equal(self.copy, value))
            return True
        if self.copy is not None and getattr(value, "shape", None) == self.copy.shape \
                and str(getattr(value, "dtype", "")) == str(self.copy.dtype):
            try:
                return bool(np.array_equal(np.asarray(value), self.copy))
            except Exception:
                return False
        return False

    def stale(self) -> tuple[bool, Any]:
        value = self.current()
        if value is MISSING:
            return False, value
        if self.tree is not None:
            return self._tree_stale(value), value
        if value is self.last_obj and not isinstance(value, (np.ndarray, dict, list)):
            return self.last_stale, value  # the same immutable object as last time
        result = not self.is_baked(value)
        self.last_obj, self.last_stale = value, result
        return result, value

    def _tree_stale(self, value: Any) -> bool:
        """A tracked container: compared by identity first (the container and each leaf,
        numpy leaves also by value as they change in place); only when something changed is
        it snapshotted again (a device-to-host copy of each array) and compared by value."""
        if value is self.last_obj and self._same_leaves(value):
            return self.last_stale
        parts = _snapshot_parts(value)
        if parts is None:
            result, self.last_leaves = True, None
        else:
            treedef, leaves, copies = parts
            result = not ((treedef, copies) == self.tree)
            self.last_leaves = (treedef, tuple(leaves), copies)
        self.last_obj, self.last_stale = value, result
        self.version += 1
        return result

    def _same_leaves(self, value: Any) -> bool:
        if self.last_leaves is None:
            return False
        treedef, leaves, copies = self.last_leaves
        flat = _small_leaves(value)
        if flat is None or flat[1] != treedef or len(flat[0]) != len(leaves):
            return False
        for now, before, copy in zip(flat[0], leaves, copies):
            if now is not before:
                return False
            if isinstance(now, np.ndarray) and not (  # numpy arrays change in place
                    now.shape == copy.shape and now.dtype == copy.dtype
                    and np.array_equal(now, copy)):
                return False
        return True


_TREE_LEAVES = 64  # containers of numbers up to this many leaves are tracked


class _Leaves(tuple):
    """A snapshot's leaves; equal when every leaf is (arrays by value)."""

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, tuple) or len(self) != len(other):
            return False
        for a, b in zip(self, other):
            if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
                if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)
                        and a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b)):
                    return False
            elif not _same_scalar(a, b):
                return False
        return True

    __hash__ = tuple.__hash__


def _small_leaves(value: Any) -> tuple[list[Any], Any] | None:
    """(leaves, structure) of a small, non-empty dict/list/tuple, or None."""
    if not isinstance(value, (dict, list, tuple)) or not value:
        return None
    try:
        leaves, treedef = jax.tree_util.tree_flatten(value)
    except Exception:
        return None
    if not 0 < len(leaves) <= _TREE_LEAVES:
        return None
    return leaves, treedef


def _snapshot_parts(value: Any) -> tuple[Any, list[Any], _Leaves] | None:
    """(structure, leaves, their copies) of a small dict/list/tuple of numbers and small
    arrays, or None when ``value`` is not one."""
    flat = _small_leaves(value)
    if flat is None:
        return None
    leaves, treedef = flat
    out = []
    size = 0
    for leaf in leaves:
        if is_python_scalar(leaf):
            out.append(leaf)
        elif isinstance(leaf, (np.ndarray, np.generic, jax.Array)) and not internals.is_tracer(leaf):
            size += int(np.size(leaf))
            if size > _SMALL:
                return None
            out.append(np.array(leaf))
        else:
            return None
    return treedef, leaves, _Leaves(out)


def _snapshot(value: Any) -> Any:
    """(structure, leaves) of a small dict/list/tuple of numbers and small arrays, or None
    when ``value`` is not one (then it is not tracked: it is code or too big)."""
    parts = _snapshot_parts(value)
    return None if parts is None else (parts[0], parts[2])


def _same_scalar(a: Any, b: Any) -> bool:
    if not (is_python_scalar(a) and is_python_scalar(b)):
        return False
    try:
        return bool(a == b) and type(a) is type(b)
    except Exception:
        return False


class _Tracked:
    """Baked values of one live Python function object."""

    __slots__ = ("ref", "name", "baked")

    def __init__(self, fun: Any, name: str) -> None:
        self.ref = weakref.ref(fun)
        self.name = name
        self.baked: dict[str, list[_Baked]] = {}

    def add(self, fun: Any) -> None:
        try:
            found = captured_values(fun)
        except Exception:
            return
        closure = {}
        if getattr(fun, "__closure__", None):
            closure = dict(zip(fun.__code__.co_freevars, fun.__closure__))
        g = getattr(fun, "__globals__", {})
        for info, value in found:
            if info.source == "closure":
                where = closure.get(info.name)
                if where is None:
                    continue
            else:
                if g.get(info.name, MISSING) is not value:
                    continue  # read by a called function of another module: not tracked
                where = g
            self._remember(info.name, info.source or "global", where, value, None)  # captured: always set
        self._add_containers(fun, closure, g)

    def _remember(self, name: str, source: str, where: Any, value: Any, tree: Any) -> None:
        entries = self.baked.setdefault(name, [])
        if any(e.is_baked(value) for e in entries):
            return
        entries.append(_Baked(name, source, where, value, tree))
        del entries[:-4]

    def _add_containers(self, fun: Any, closure: dict[str, Any], g: dict[str, Any]) -> None:
        """Dicts/lists/tuples of numbers the function reads (``cfg["lr"]``): baked in too,
        and often changed in place."""
        try:
            cv = inspect.getclosurevars(fun)
        except (TypeError, ValueError):
            return
        for source, mapping in (("closure", cv.nonlocals), ("global", cv.globals)):
            for name, value in mapping.items():
                tree = _snapshot(value)
                if tree is None:
                    continue
                where = closure.get(name) if source == "closure" else g
                if where is not None:
                    self._remember(name, source, where, value, tree)

    def check(self) -> Iterator[tuple[_Baked, Any]]:
        for entries in self.baked.values():
            for e in entries:
                stale, value = e.stale()
                if stale:
                    yield e, value


TRACKED: dict[int, _Tracked] = {}


def track_globals(fun: Any, name: str) -> int | None:
    inner = None
    for f in unwrap_chain(fun):
        if inspect.isfunction(f) and is_user_file(f.__code__.co_filename):
            inner = f
            break
    if inner is None:
        return None
    key = id(inner)
    tracked = TRACKED.get(key)
    if tracked is None or tracked.ref() is not inner:
        tracked = TRACKED[key] = _Tracked(inner, name)
        weakref.finalize(inner, TRACKED.pop, key, None)
    tracked.add(inner)
    return key if tracked.baked else None


def stale_message(t: _Tracked, b: _Baked, current: Any) -> StaleGlobal:
    what = "global" if b.source == "global" else "closure variable"
    cur = short_repr(current)
    msg = (f"`{t.name}` was compiled with {what} `{b.name} = {b.text}`; `{b.name}` is now {cur}, "
           f"and calls of `{t.name}` still use {b.text}. Pass `{b.name}` as an argument, or "
           f"re-create/clear the jitted function after changing it.")
    return StaleGlobal(t.name, b.name, b.source, b.text, cur, msg)
