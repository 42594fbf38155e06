"""The tracker in a notebook (``%load_ext jaxviz``): the session's watch, the checks and
the one-line recompile notice after every cell, ``%jaxviz watch`` and
``%jaxviz recompiles``."""

from __future__ import annotations

import argparse
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from IPython.display import display

from ..recompiles.events import CompileEvent, is_first_compile
from ..recompiles.listeners import SUBSCRIBERS
from ..recompiles.signature import short_repr
from ..recompiles.watch import Watch
from ..render.recompiles import show_message
from ..widgets import LiveMonitor

_SESSION: Watch | None = None
_MONITORS: list[Any] = []
_HOOKS: dict[int, tuple[Callable[..., None], Callable[..., None]]] = {}


@dataclass
class NoticeSettings:
    """The one-line notice under a cell that recompiled a function: on by default, for
    a function compiled at least ``min_compiles`` times in the cell (one of them a
    recompile). ``%jaxviz watch --notice off`` (or ``on``) switches it."""

    enabled: bool = True
    min_compiles: int = 2


NOTICE = NoticeSettings()


def _is_rerun(event: CompileEvent) -> bool:
    """A re-run cell defined the function again: expected, not worth a notice."""
    return all(c.kind == "new_function_object" and c.detail == "cell" for c in event.causes)


def _values_text(values: list[Any], limit: int = 3) -> str:
    seen = list(dict.fromkeys(short_repr(v) if not isinstance(v, (int, str)) else str(v)
                              for v in values))
    return ", ".join(seen[:limit]) + (", …" if len(seen) > limit else "")


def _dominant_cause(recompiles: list[CompileEvent]) -> tuple[str, str]:
    """The cause that changed most often, in a few words, and the others."""
    counts = Counter((c.kind, c.path) for e in recompiles for c in e.causes)
    (kind, path), _ = counts.most_common(1)[0]
    others = [p for k, p in counts if (k, p) != (kind, path)]
    if others and all(k == kind for k, _ in counts):  # x and y of a batch, both resized
        names = ", ".join(f"`{p}`" for p in others[:3]) + (", …" if len(others) > 3 else "")
        more = f" ({names} too)"
    else:
        more = f" (and {len(others)} other cause{'s' if len(others) > 1 else ''})" if others else ""
    same = [c for e in recompiles for c in e.causes if (c.kind, c.path) == (kind, path)]
    last = same[-1]
    if kind == "shape" and last.axis is not None and all(c.axis == last.axis for c in same):
        sizes = [same[0].before[last.axis]] + [c.after[last.axis] for c in same]
        what = f"`{path}` changed size on axis {last.axis} ({_values_text(sizes)})"
    elif kind == "static_value" and not last.detail:
        what = f"static `{path}` changed ({_values_text([same[0].before] + [c.after for c in same])})"
    else:
        what = str(last)
    return what, more


def cell_notices(events: list[CompileEvent], min_compiles: int = 2) -> list[str]:
    """One line per function that a cell compiled ``min_compiles`` times or more, one of
    them a recompile: how many times, what kept changing, and the command to see more."""
    by_function: dict[str, list[CompileEvent]] = {}
    for e in events:
        by_function.setdefault(e.function.name, []).append(e)
    lines = []
    for name, evs in by_function.items():
        recompiles = [e for e in evs if e.causes and not is_first_compile(e) and not _is_rerun(e)]
        if len(evs) < min_compiles or not recompiles:
            continue
        what, more = _dominant_cause(recompiles)
        lines.append(f"`{name}` compiled {len(evs)} times in this cell: {what}{more} → "
                     f"`%jaxviz recompiles {name}`")
    return lines


def session() -> Watch | None:
    """The notebook session's watch (started by ``%load_ext jaxviz``)."""
    return _SESSION


def show_stale(kind: str, payload: dict[str, Any]) -> None:
    """A stale global a check reported (``Watch.check(report=True)``), under the cell."""
    if kind == "stale":
        show_message(payload["message"])


def register(shell: Any) -> None:
    """``%load_ext jaxviz``: watch compiles for the session, check stale globals after
    every cell."""
    global _SESSION
    if _SESSION is None:
        _SESSION = Watch(name="session")
    _SESSION.start()
    if show_stale not in SUBSCRIBERS:
        SUBSCRIBERS.append(show_stale)
    if id(shell) not in _HOOKS:
        start = [0]  # the session's event count when the cell started

        def pre_run_cell(info: Any = None) -> None:
            if _SESSION is not None:
                start[0] = _SESSION.added

        def post_run_cell(result: Any = None) -> None:
            if _SESSION is None or not _SESSION.active:
                return
            if NOTICE.enabled and _SESSION.added != start[0]:  # free when nothing compiled
                for line in cell_notices(_SESSION.since(start[0]), NOTICE.min_compiles):
                    show_message(line)
            _SESSION.check(report=True)

        _HOOKS[id(shell)] = (pre_run_cell, post_run_cell)
        shell.events.register("pre_run_cell", pre_run_cell)
        shell.events.register("post_run_cell", post_run_cell)


def unregister(shell: Any) -> None:
    """Unload: remove the hook and every JAX listener, close live monitors."""
    global _SESSION
    if show_stale in SUBSCRIBERS:
        SUBSCRIBERS.remove(show_stale)
    hooks = _HOOKS.pop(id(shell), None)
    for event, hook in zip(("pre_run_cell", "post_run_cell"), hooks or ()):
        try:
            shell.events.unregister(event, hook)
        except ValueError:
            pass
    _close_monitors()
    if _SESSION is not None:
        _SESSION.stop()
        _SESSION = None


def _close_monitors() -> None:
    while _MONITORS:
        try:
            _MONITORS.pop().close()
        except Exception:
            pass


def _parser(prog: str) -> argparse.ArgumentParser:
    return argparse.ArgumentParser(prog=prog, add_help=False, exit_on_error=False)


def watch_command(shell: Any, argv: list[str]) -> Any:
    """``%jaxviz watch [--storm N] [--quiet] [--notice on|off]`` · ``%jaxviz watch off``"""
    global _SESSION
    parser = _parser("%jaxviz watch")
    parser.add_argument("state", nargs="?", choices=("on", "off"), default="on")
    parser.add_argument("--storm", type=int, default=None)
    parser.add_argument("--quiet", action="store_true")
    parser.add_argument("--notice", choices=("on", "off"), default=None)
    try:
        args = parser.parse_args(argv)
    except (argparse.ArgumentError, SystemExit) as exc:
        raise ValueError("usage: %jaxviz watch [on|off] [--storm N] [--quiet] [--notice on|off] "
                         f"({exc})") from None
    if args.notice is not None:
        NOTICE.enabled = args.notice == "on"
        if args.state == "on" and _SESSION is not None and _SESSION.active and not args.quiet:
            print(f"jaxviz: recompile notices under cells {args.notice}.")
            return None
    if args.state == "off":
        _close_monitors()
        if _SESSION is not None:
            _SESSION.stop()
        print("jaxviz: not watching compiles.")
        return None
    if _SESSION is None:
        _SESSION = Watch(name="session")
    if args.storm is not None:
        _SESSION.storm = args.storm
    _SESSION.start()
    if args.quiet:
        print("jaxviz: watching compiles (%jaxviz recompiles shows them).")
        return None
    try:
        monitor = LiveMonitor(_SESSION)
    except ImportError:
        print("jaxviz: watching compiles (install ipywidgets for the live monitor).")
        return None
    _close_monitors()
    _MONITORS.append(monitor)
    display(monitor)
    return None


def recompiles_command(shell: Any, argv: list[str]) -> Any:
    """``%jaxviz recompiles [fn]``: the session's compile log (of one function)."""
    if _SESSION is None:
        print("jaxviz: not watching compiles; start with %jaxviz watch.")
        return None
    name = argv[0] if argv else None
    view = _SESSION.view(name)
    display(view)
    return None
