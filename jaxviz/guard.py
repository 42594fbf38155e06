"""Recompile guards: fail a test, a script or CI when a function compiles more than it
should, and say why.

    with jaxviz.expect_compiles(train_step=1, eval_step=2):   # at most, per function
        ...
    with jaxviz.no_recompiles():          # a function may compile once, never again
        ...
    @jaxviz.expect_compiles(train_step=1)  # the decorator form
    def test_training(): ...

    budget = jaxviz.expect_compiles(max_compiles=3).start()   # every function, a whole run
    ...
    budget.stop(); budget.check()

A limit exceeded raises ``RecompileError`` when the block ends (never inside JAX's own
compile), with jaxviz's causes of every extra compile, its call site and the suggested
fix. A guard is a ``jaxviz.watch()``: it costs nothing on cache hits, sees compiles on
every thread, and guards nest (each sees what happens while it is active).
"""

from __future__ import annotations

import functools
import sys
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from .recompiles import CompileEvent, Watch, watch

F = TypeVar("F", bound=Callable[..., Any])


class RecompileError(AssertionError):
    """A function compiled more often than a guard allowed. ``violations`` says which,
    and each holds the extra compile events (with their causes and suggestions)."""

    def __init__(self, violations: list[Violation]) -> None:
        self.violations = violations
        super().__init__(report(violations))


@dataclass(frozen=True)
class Violation:
    function: str
    compiles: int  # compiles of the function seen by the guard
    limit: int  # compiles allowed (for no_recompiles: the first)
    rule: str  # "expect_compiles(train_step=1)", "max_compiles=3", "no_recompiles()"
    extra: tuple[CompileEvent, ...]  # the compiles past the limit

    def text(self) -> str:
        if self.rule == "no_recompiles()":
            n = len(self.extra)
            head = f"`{self.function}` recompiled {n} time{'s' * (n != 1)} under no_recompiles():"
        else:
            head = (f"`{self.function}` compiled {self.compiles} time{'s' * (self.compiles != 1)}, "
                    f"{self.limit} allowed by {self.rule}:")
        lines = [head]
        for event in self.extra:
            lines += ["  " + line for line in describe(event)]
        return "\n".join(lines)


def describe(event: CompileEvent) -> list[str]:
    """One compile in full: the tracker's message (call site, thread), every cause and the
    suggestion."""
    lines = [event.message()]
    if event.thread and event.thread != "MainThread":
        lines[0] += f" (thread {event.thread})"
    real = [c for c in event.causes if c.kind != "first_call"]
    if real:
        lines.append("  cause: " + str(real[0]))
        lines += ["         " + str(c) for c in real[1:]]
        if event.more_causes:
            lines.append(f"         … {event.more_causes} more")
    if event.suggestion:
        lines.append(f"  suggestion: {event.suggestion}")
    return lines


def report(violations: list[Violation]) -> str:
    head = "jaxviz: more compiles than expected"
    return "\n".join([head] + [v.text() for v in violations])


def _check_limit(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise TypeError(f"a compile limit is a whole number >= 0: got {name}={value!r}")
    return value


class expect_compiles:  # noqa: N801  (used as a context manager, like contextlib's)
    """At most ``limits[name]`` compiles of the function ``name`` (its ``__name__``, or
    qualified name, as the compile log shows it) and at most ``max_compiles`` of any other
    (None: no limit), while active; ``recompiles=False``: none but a function's first.

    Use as ``with``, as a decorator, or ``start()`` / ``stop()`` / ``check()``."""

    def __init__(self, limits: dict[str, int] | None = None, /, *, max_compiles: int | None = None,
                 recompiles: bool = True, **named: int) -> None:
        self.limits = {k: _check_limit(k, v) for k, v in {**(limits or {}), **named}.items()}
        self.max_compiles = None if max_compiles is None else _check_limit("max_compiles", max_compiles)
        self.recompiles = recompiles
        self._watch: Watch | None = None
        self._lock = threading.Lock()
        self._reported: set[int] = set()  # id() of extra events already raised for

    # ------------------------------------------------------------ lifecycle
    def start(self) -> expect_compiles:
        with self._lock:
            if self._watch is not None:
                raise RuntimeError(f"{self.rule()} is already active: use a new guard for "
                                   "another block (the decorator makes one per call)")
            self._watch = watch(storm=sys.maxsize, max_events=100_000).start()
        return self

    def stop(self) -> None:
        if self._watch is not None:
            self._watch.stop()

    def __enter__(self) -> expect_compiles:
        return self.start()

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        __tracebackhide__ = True  # pytest: the error points at the user's block
        self.stop()
        if exc_type is None:
            self.check()

    def __call__(self, fn: F) -> F:
        """The decorator form: a fresh guard around every call of ``fn``."""
        @functools.wraps(fn)
        def guarded(*args: Any, **kwargs: Any) -> Any:
            __tracebackhide__ = True
            with self.copy():
                return fn(*args, **kwargs)

        return guarded  # type: ignore[return-value]

    def limit(self, limits: dict[str, int] | None = None, /, **named: int) -> None:
        """Add or change limits (checked by ``check()``, at the end of a ``with``)."""
        self.limits.update({k: _check_limit(k, v) for k, v in {**(limits or {}), **named}.items()})

    def copy(self) -> expect_compiles:
        return expect_compiles(dict(self.limits), max_compiles=self.max_compiles,
                               recompiles=self.recompiles)

    # ------------------------------------------------------------ reading
    @property
    def events(self) -> list[CompileEvent]:
        """Every compile seen while active (failed traces included, not counted)."""
        return self._watch.events if self._watch is not None else []

    def counts(self) -> Counter[str]:
        """Compiles per function name."""
        return Counter(e.name for e in self.events if e.error is None)

    def rule(self, name: str | None = None) -> str:
        if name is not None and name in self.limits:
            return f"expect_compiles({name}={self.limits[name]})"
        if not self.recompiles:
            return "no_recompiles()"
        if name is not None and self.max_compiles is not None:
            return f"max_compiles={self.max_compiles}"
        named = ", ".join(f"{k}={v}" for k, v in self.limits.items())
        budget = f"max_compiles={self.max_compiles}" if self.max_compiles is not None else ""
        return f"expect_compiles({', '.join(p for p in (named, budget) if p)})"

    def violations(self) -> list[Violation]:
        """What exceeds the limits so far."""
        by_function: dict[Any, list[CompileEvent]] = {}  # two functions may share a name
        for e in self.events:
            if e.error is None:
                by_function.setdefault((e.name, e.function.defined), []).append(e)
        found = []
        for (name, _), events in by_function.items():
            limit = self._limit_of(events[0])
            if limit is not None and len(events) > limit:
                found.append(Violation(name, len(events), limit, self.rule(self._limit_key(events[0]) or name),
                                       tuple(events[limit:])))
            elif limit is None and not self.recompiles:
                extra = tuple(e for e in events if _is_recompile(e))
                if extra:
                    found.append(Violation(name, len(events), len(events) - len(extra),
                                           "no_recompiles()", extra))
        return found

    def check(self) -> None:
        """Raise ``RecompileError`` if a limit is exceeded."""
        __tracebackhide__ = True
        found = self.violations()
        if found:
            raise RecompileError(found)

    def new_violations(self) -> list[Violation]:
        """Violations with extra compiles not returned before (thread-safe): for a budget
        over many tests, the test in which a function went past it."""
        fresh = []
        with self._lock:
            for v in self.violations():
                extra = tuple(e for e in v.extra if id(e) not in self._reported)
                if extra:
                    self._reported.update(id(e) for e in extra)
                    fresh.append(Violation(v.function, v.compiles, v.limit, v.rule, extra))
        return fresh

    def _limit_key(self, event: CompileEvent) -> str | None:
        for key in (event.function.name, event.function.qualname):
            if key in self.limits:
                return key
        return None

    def _limit_of(self, event: CompileEvent) -> int | None:
        key = self._limit_key(event)
        if key is not None:
            return self.limits[key]
        return self.max_compiles if self.recompiles else None

    def __repr__(self) -> str:
        state = "active" if self._watch is not None and self._watch.active else "inactive"
        return f"<jaxviz.{self.rule()} ({state}): {dict(self.counts())}>"


def _is_recompile(event: CompileEvent) -> bool:
    """Not the first compile of its function (``count`` includes the compiles jaxviz
    learnt of from JAX's cache)."""
    return event.count > 1 or any(c.kind != "first_call" for c in event.causes)


def no_recompiles() -> expect_compiles:
    """While active, a function may compile once (its first compile), never again: a
    compile of a function that has compiled before raises, with its cause (a new shape, a
    static value, ...). Compiles made before the guard count, however jaxviz learns of
    them: its tracker's history, or JAX's own tracing cache for compiles made while no
    watch was listening (a warm-up before the guard)."""
    return expect_compiles(recompiles=False)
