"""``Watch`` (``jaxviz.watch()``): a log of every trace and compile while active, its
per-function ``Summary`` and the stale-global check; ``CompileLog``, a snapshot of it."""

from __future__ import annotations

import dataclasses
import threading
import warnings
from collections import Counter, deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..display import Displayed
from ..text import fmt_seconds, text_plain
from .events import CompileEvent, diff_command
from .listeners import DISPATCHER, publish
from .processes import current_process
from .signature import MAX_WARNINGS, SCHEMA, SCHEMA_VERSION, RecompileWarning
from .stale import TRACKED, StaleGlobal, stale_message
from .suggestions import suggest_fix


@dataclass
class FunctionStats:
    """One row of ``Watch.summary()``."""

    function: str
    defined: str | None
    traces: int = 0
    compiles: int = 0
    trace_s: float = 0.0
    lower_s: float = 0.0
    compile_s: float = 0.0
    signatures: int = 0
    errors: int = 0
    causes: Counter = field(default_factory=Counter)  # (kind, path) → count

    @property
    def total_s(self) -> float:
        return self.trace_s + self.lower_s + self.compile_s

    def top_cause(self) -> str | None:
        for (kind, path), _ in self.causes.most_common():
            if kind != "first_call":
                return f"{kind} of `{path}`" if kind not in ("unknown",) else kind
        return None

    def to_json(self) -> dict[str, Any]:
        return {"function": self.function, "defined": self.defined, "traces": self.traces,
                "compiles": self.compiles, "trace_s": self.trace_s, "lower_s": self.lower_s,
                "compile_s": self.compile_s, "signatures": self.signatures,
                "errors": self.errors, "top_cause": self.top_cause()}


@dataclass
class Summary(Displayed):
    """Per-function totals. ``summary["f"]`` → the row of function ``f``."""

    rows: list[FunctionStats]

    def __getitem__(self, key: int | str) -> FunctionStats:
        if isinstance(key, int):
            return self.rows[key]
        for r in self.rows:
            if r.function == key:
                return r
        raise KeyError(f"{key!r} was not compiled; compiled: {[r.function for r in self.rows]}")

    def __contains__(self, key: str) -> bool:
        return any(r.function == key for r in self.rows)

    def __iter__(self) -> Iterator[FunctionStats]:
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    def __str__(self) -> str:
        if not self.rows:
            return "no compiles"
        lines = [f"{'function':24} {'traces':>6} {'compiles':>8} {'trace':>9} {'lower':>9} "
                 f"{'compile':>9} {'signatures':>10}  top cause"]
        for r in self.rows:
            lines.append(f"{r.function[:24]:24} {r.traces:>6} {r.compiles:>8} {fmt_seconds(r.trace_s):>9} "
                         f"{fmt_seconds(r.lower_s):>9} {fmt_seconds(r.compile_s):>9} {r.signatures:>10}  "
                         f"{r.top_cause() or ''}")
        return "\n".join(lines)

    def to_json(self) -> list[dict[str, Any]]:
        return [r.to_json() for r in self.rows]


class Watch(Displayed):
    """A log of compiles while active. ``with watch() as log:`` or ``start()``/``stop()``.

    Several watches may be active at once (nested, or the notebook session's and yours):
    each sees every compile while it is active. ``storm``: after this many compiles of one
    function, a ``RecompileWarning`` names the argument that keeps changing.
    """

    def __init__(self, *, storm: int = 10, max_events: int = 2000, include_jax: bool = False,
                 name: str = "watch") -> None:
        self.storm = storm
        self.include_jax = include_jax
        self.name = name
        self._events: deque[CompileEvent] = deque(maxlen=max_events)
        self._stats: dict[Any, FunctionStats] = {}
        self._signatures: dict[Any, set[Any]] = {}
        self._tracked: set[int] = set()
        self._subscribers: list[Callable[[CompileEvent | None], None]] = []
        self.warnings: list[str] = []
        self._stormed: set[Any] = set()
        self._active = False
        self._lock = threading.RLock()
        self.dropped = 0  # events that fell off the front of the bounded log
        self.added = 0  # events ever added: what a cell compiled is the difference

    # ------------------------------------------------------------ lifecycle
    def start(self) -> Watch:
        if not self._active:
            self._active = True
            DISPATCHER.attach(self)
        return self

    def stop(self) -> None:
        if self._active:
            self._active = False
            DISPATCHER.detach(self)

    @property
    def active(self) -> bool:
        return self._active

    def __enter__(self) -> Watch:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def clear(self) -> None:
        with self._lock:
            self._events.clear()
            self._stats.clear()
            self._signatures.clear()
            self.warnings.clear()
            self._stormed.clear()
            self.dropped = 0

    # ------------------------------------------------------------ reading
    @property
    def events(self) -> list[CompileEvent]:
        with self._lock:
            return list(self._events)

    def __len__(self) -> int:
        return len(self._events)

    def summary(self) -> Summary:
        with self._lock:
            rows = [dataclasses.replace(s, causes=Counter(s.causes)) for s in self._stats.values()]
        return Summary(rows)

    def check(self, *, report: bool = False) -> list[StaleGlobal]:
        """Globals/closure values baked into compiled functions that have changed since.
        ``report``: also publish each new finding once (a "stale" event to
        ``SUBSCRIBERS``: the notebook shows it under the cell, the panel lists it)."""
        found = []
        for key in list(self._tracked):
            tracked = TRACKED.get(key)
            if tracked is None or tracked.ref() is None:
                self._tracked.discard(key)
                continue
            for baked, current in tracked.check():
                stale = baked.message
                if (stale is None or baked.message_for is not current  # reprs cost: once
                        or baked.message_version != baked.version  # a container changed
                        or (baked.tree is None and isinstance(current, (dict, list, np.ndarray)))):
                    stale = baked.message = stale_message(tracked, baked, current)
                    baked.message_for, baked.message_version = current, baked.version
                found.append(stale)
                if report and baked.reported != stale.current:
                    baked.reported = stale.current
                    publish("stale", {k: v for k, v in stale.to_json().items() if k != "source"})
        new = False
        if found:
            with self._lock:
                for s in found:
                    if s.message not in self.warnings:
                        self._warn(s.message)
                        new = True
        if new:
            self.notify(None)  # e.g. the live monitor shows it in red
        return found

    def warn_once(self, text: str) -> None:
        """Add a warning to the log (once) and tell the subscribers."""
        with self._lock:
            if text in self.warnings:
                return
            self._warn(text)
        self.notify(None)

    def _warn(self, text: str) -> None:
        self.warnings.append(text)
        del self.warnings[:-MAX_WARNINGS]

    def subscribe(self, callback: Callable[[CompileEvent | None], None]) -> None:
        """``callback(event)`` on every new or updated event (from the compiling thread)."""
        self._subscribers.append(callback)

    def unsubscribe(self, callback: Callable[[CompileEvent | None], None]) -> None:
        if callback in self._subscribers:
            self._subscribers.remove(callback)

    def since(self, added: int) -> list[CompileEvent]:
        """The events added after ``self.added`` was ``added`` (those still kept)."""
        with self._lock:
            n = min(self.added - added, len(self._events))
            return list(self._events)[len(self._events) - n:] if n > 0 else []

    def view(self, function: str | None = None) -> CompileLog:
        """A snapshot of the log (optionally of one function) that renders itself."""
        events = self.events
        if function is not None:
            events = [e for e in events if e.function.name == function
                      or e.function.qualname == function]
        summary = self.summary()
        if function is not None:
            summary = Summary([r for r in summary.rows if r.function == function])
        return CompileLog(events, summary, list(self.warnings), self.dropped, current_process())

    def to_json(self) -> dict[str, Any]:
        return self.view().to_json()

    def __repr__(self) -> str:
        state = "active" if self._active else "stopped"
        return f"<jaxviz.Watch {self.name} ({state}): {len(self._events)} compiles>"

    def __str__(self) -> str:
        return str(self.view())

    # ------------------------------------------------------------ fed by the dispatcher
    def record(self, event: CompileEvent, tracked: int | None) -> None:
        """A new event (``tracked``: the globals its trace read, for ``check``)."""
        with self._lock:
            if len(self._events) == self._events.maxlen:
                self.dropped += 1
            self._events.append(event)
            self.added += 1
            if tracked is not None:
                self._tracked.add(tracked)
            key = self._stat_key(event)
            stats = self._stats.get(key)
            if stats is None:
                stats = self._stats[key] = FunctionStats(event.function.name, str(event.function.defined)
                                                  if event.function.defined else None)
            stats.causes.update((c.kind, c.path) for c in event.causes)
            if event.signature is not None:
                sigs = self._signatures.setdefault(key, set())
                if len(sigs) < 10_000:
                    sigs.add(event.signature.key)
                stats.signatures = len(sigs)

    def _stat_key(self, event: CompileEvent) -> Any:
        return event.function.name, event.function.defined

    def stage_done(self, event: CompileEvent, stage: str, seconds: float) -> None:
        """A stage of an event ended (trace, lower, compile; "error": it failed)."""
        with self._lock:
            stats = self._stats.get(self._stat_key(event))
            if stats is None:
                return
            if stage == "trace":
                stats.traces += 1
                stats.trace_s += seconds
            elif stage == "lower":
                stats.lower_s += seconds
            elif stage == "compile":
                stats.compiles += 1
                stats.compile_s += seconds
            elif stage == "error":
                stats.errors += 1
        if stage == "compile" or stage == "error":
            self._maybe_storm(event)

    def _maybe_storm(self, event: CompileEvent) -> None:
        key = self._stat_key(event)
        stats = self._stats.get(key)
        if stats is None or stats.compiles <= self.storm or key in self._stormed:
            return
        self._stormed.add(key)
        top = stats.causes.most_common()
        changing = next(((k, p, n) for (k, p), n in top if k != "first_call"), None)
        what = (f"`{changing[1]}` keeps changing ({changing[0]}, {changing[2]} times)"
                if changing else "the cause varies")
        advice = event.suggestion if changing is None else self._advice(event, changing[:2])
        text = (f"recompile storm: `{stats.function}` compiled {stats.compiles} times while "
                f"watching; {what}. {advice or ''}").strip()
        self._warn(text)
        site = event.call_site
        plain = text_plain(text)  # a warning is printed as is: no Markdown backticks
        try:
            if site is not None:
                warnings.warn_explicit(plain, RecompileWarning, site.file, site.line)
            else:
                warnings.warn(plain, RecompileWarning, stacklevel=2)
        except Exception:
            pass

    def _advice(self, event: CompileEvent, changing: tuple[str, str]) -> str | None:
        """The suggestion for the cause that keeps changing (from the latest event that
        had it), not for whatever the latest compile's own first cause was."""
        key = self._stat_key(event)
        with self._lock:
            recent = [event] + [e for e in reversed(self._events) if e is not event]
        for e in recent:
            same = [c for c in e.causes if (c.kind, c.path) == changing]
            if same and self._stat_key(e) == key:
                return suggest_fix(dataclasses.replace(e, causes=same), DISPATCHER.object_of(event))
        return None

    def notify(self, event: CompileEvent | None) -> None:
        """Tell the subscribers of a new or updated event (None: new warnings)."""
        for cb in list(self._subscribers):
            try:
                cb(event)
            except Exception:
                pass


def watch(*, storm: int = 10, max_events: int = 2000, include_jax: bool = False) -> Watch:
    """A new (not yet started) watch: ``with jaxviz.watch() as log: ...``."""
    return Watch(storm=storm, max_events=max_events, include_jax=include_jax)


# ====================================================================== snapshots
@dataclass
class CompileLog(Displayed):
    """A snapshot of a watch's log, rendered as HTML, JSON for the JupyterLab panel, rich
    and plain text."""

    events: list[CompileEvent]
    summary: Summary
    warnings: list[str]
    dropped: int = 0
    process: tuple[int, int] | None = None  # (this process, how many) under jax.distributed

    def to_json(self) -> dict[str, Any]:
        return {"schema": SCHEMA, "version": SCHEMA_VERSION,
                "events": [e.to_json() for e in self.events],
                "summary": self.summary.to_json(), "warnings": list(self.warnings),
                "dropped": self.dropped,
                "process": list(self.process) if self.process else None}

    def __str__(self) -> str:
        where = f" on process {self.process[0]} of {self.process[1]}" if self.process else ""
        if not self.events:
            return f"jaxviz: no compiles recorded{where}." + "".join(f"\nwarning: {w}" for w in self.warnings)
        lines = [f"jaxviz: compiles{where}"] if where else []
        lines += [f"{i}. {e.message()}" + (f"\n   → {e.suggestion}" if e.suggestion and e.causes
                                          and e.causes[0].kind != "first_call" else "")
                 + (f"\n   what it changed in the program: {diff_command(e)}" if diff_command(e) else "")
                 for i, e in enumerate(self.events, 1)]
        lines += ["", str(self.summary)]
        lines += [f"warning: {w}" for w in self.warnings]
        return "\n".join(lines)
