"""The recompile history: the last ``KEEP`` compiles of each function the tracker saw, as
the function and its abstract arguments, so that ``recompile_diff(name)`` re-traces the
last two and diffs them."""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import jax
import numpy as np

from ..program import Program
from ..recompiles import COMPILE_LISTENERS, CompileEvent
from ..tracing import normalize_static_argnums, trace
from .changes import ProgramDiff
from .match import diff_programs

KEEP = 3  # compiles remembered per function for recompile_diff
MAX_FUNCTIONS = 256  # functions remembered (least recently compiled dropped first)


@dataclass
class CompileRecord:
    """What re-traces one compile: the function and its abstract arguments, and the
    compile's number and names (not its event: an event holds its signature, causes and
    the watches that saw it, which hold every event they saw)."""

    name: str  # the function's name, as the compile log shows it
    qualname: str
    count: int  # the n-th compile of the function, as numbered in the compile log
    fun: Callable[[], Callable[..., Any] | None]  # a weak reference where one can be made
    args: tuple[Any, ...]  # arrays as jax.ShapeDtypeStruct, static values as they were
    kwargs: dict[str, Any]
    static_argnums: tuple[int, ...]
    static_argnames: tuple[str, ...]
    _program: Program | None = field(default=None, repr=False)

    def program(self) -> Program:
        """The trace of this compile, taken again (once) from the abstract arguments."""
        if self._program is None:
            fun = self.fun()
            if fun is None:
                raise LookupError(f"the function of compile {self.count} of "
                                  f"{self.name!r} no longer exists")
            self._program = trace(fun, *self.args, static_argnums=self.static_argnums,
                                  static_argnames=self.static_argnames, **self.kwargs)
            self._program.name = f"{self.name} #{self.count}"
        return self._program


def _abstract(value: Any) -> Any:
    """An array as its ``jax.ShapeDtypeStruct`` (a Python scalar weakly typed, as jit
    traces it); anything else as it is."""
    if isinstance(value, (bool, int, float, complex)):
        dtype = jax.dtypes.canonicalize_dtype(np.asarray(value).dtype)
        return jax.ShapeDtypeStruct((), dtype, weak_type=True)
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        weak = bool(getattr(getattr(value, "aval", None), "weak_type", False))
        return jax.ShapeDtypeStruct(tuple(value.shape), value.dtype, weak_type=weak)
    return value


def _reference(fun: Callable[..., Any]) -> Callable[[], Callable[..., Any] | None]:
    """A weak reference, so that the history never keeps a function (and what its closure
    holds, arrays included) alive; a strong one for what cannot be weakly referenced."""
    try:
        return weakref.ref(fun)
    except TypeError:
        return lambda: fun


class CompileHistory:
    """The last ``keep`` compiles of each function (thread-safe, bounded)."""

    def __init__(self, keep: int = KEEP, max_functions: int = MAX_FUNCTIONS) -> None:
        self.keep = keep
        self.max_functions = max_functions
        self._lock = threading.Lock()
        self._records: OrderedDict[Any, deque[CompileRecord]] = OrderedDict()

    def record(self, event: CompileEvent, call: Any) -> None:
        """The tracker's listener: runs on a cache miss only."""
        if event.error is not None or event.signature is None:
            return
        nums = normalize_static_argnums(call.static_argnums, len(call.args))
        args = tuple(a if i in nums else jax.tree_util.tree_map(_abstract, a)
                     for i, a in enumerate(call.args))
        kwargs = {k: v if k in call.static_argnames else jax.tree_util.tree_map(_abstract, v)
                  for k, v in call.kwargs.items()}
        rec = CompileRecord(event.function.name, event.function.qualname, event.count,
                            _reference(call.fun), args, kwargs, nums, tuple(call.static_argnames))
        key = (event.function.name, event.function.defined)
        with self._lock:
            records = self._records.pop(key, None) or deque(maxlen=self.keep)
            records.append(rec)
            self._records[key] = records
            while len(self._records) > self.max_functions:
                self._records.popitem(last=False)

    def records(self, name: str) -> list[CompileRecord]:
        """The remembered compiles of the function called ``name`` (or qualname)."""
        with self._lock:
            found = [list(rs) for (fname, _), rs in self._records.items()
                     if fname == name or (rs and rs[-1].qualname == name)]
        return found[-1] if found else []

    def names(self) -> list[str]:
        with self._lock:
            return [fname for fname, _ in self._records]

    def clear(self) -> None:
        with self._lock:
            self._records.clear()


HISTORY = CompileHistory()


def install() -> None:
    """Remember every compile the tracker sees (idempotent; ``jaxviz.wiring`` calls it)."""
    if HISTORY.record not in COMPILE_LISTENERS:
        COMPILE_LISTENERS.append(HISTORY.record)


def recompile_diff(name: str, count: int | None = None) -> ProgramDiff:
    """The diff of a function's last recompile against the compile before it (or of its
    ``count``-th compile, as numbered in the compile log, against the one before).

    Compiles are remembered while a watch is active (``jaxviz.watch()``, or the notebook
    session's after ``%load_ext jaxviz``), the last ``KEEP`` of each function."""
    records = HISTORY.records(name)
    if not records:
        known = ", ".join(sorted(set(HISTORY.names()))) or "none yet"
        raise LookupError(f"jaxviz has no compile of {name!r} in its history (functions: {known}); "
                          "compiles are remembered while a watch is active")
    if count is None:
        index = len(records) - 1
    else:
        index = next((i for i, r in enumerate(records) if r.count == count), -1)
        if index < 0:
            kept = ", ".join(str(r.count) for r in records)
            raise LookupError(f"compile {count} of {name!r} is not remembered (kept: {kept}; "
                              f"jaxviz keeps the last {HISTORY.keep} of each function)")
    if index == 0:
        raise LookupError(f"{name!r} has no earlier compile remembered to diff compile "
                          f"{records[0].count} against")
    return diff_programs(records[index - 1].program(), records[index].program())
