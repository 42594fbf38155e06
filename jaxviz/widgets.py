"""A live ipywidgets monitor of a ``jaxviz.watch()`` log.

It updates while a training loop runs in the same cell: widget updates are comm
messages, sent from the compiling thread (or a timer thread), not from the cell's end.
The loop is not slowed down: the monitor hears only about compiles (never about cache
hits), and redraws at most once per ``interval`` seconds, coalescing what happened in
between into one cheap HTML update.

Its output also holds its state as plain HTML, kept up to date at the end of every cell
and left alone once it stops (the widget is then gone): a static export (nbconvert, a
saved notebook on GitHub) shows that, not a blank box.
"""

from __future__ import annotations

import html
import threading
import time
from typing import Any

from IPython import get_ipython
from IPython.display import DisplayHandle, display

from .recompiles import CompileEvent, Watch, is_first_compile
from .render.recompiles import text_html
from .text import fmt_seconds
from .visual import HTML_COLOR, STAGE_COLORS

_CELL = "padding:1px 10px 1px 0;vertical-align:top"
_NUM = _CELL + ";text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap"


class LiveMonitor:
    """``LiveMonitor(log)``: counts per function, a timeline of compiles with their
    durations, the causes of the latest, warnings in red."""

    def __init__(self, log: Watch, *, interval: float = 0.5, timeline: int = 24,
                 functions: int = 12) -> None:
        import ipywidgets as widgets

        self.log = log
        self.interval = interval
        self.timeline = timeline
        self.functions = functions
        self.updates = 0  # redraws so far (tests and curiosity)
        self._lock = threading.Lock()
        self._last = 0.0
        self._timer: threading.Timer | None = None
        self._closed = False
        self._handle: DisplayHandle | None = None  # the output it is shown in
        self._saved = ""  # the HTML last stored in that output
        self._html = widgets.HTML(value=self.render())
        self.widget = widgets.VBox([self._html])
        log.subscribe(self._on_event)

    # ------------------------------------------------------------ throttling
    def _on_event(self, event: CompileEvent | None) -> None:
        now = time.monotonic()
        with self._lock:
            if self._closed or self._timer is not None:
                return  # a redraw is already scheduled; it will include this event
            wait = self._last + self.interval - now
            if wait > 0:
                self._timer = threading.Timer(wait, self.refresh)
                self._timer.daemon = True
                self._timer.start()
                return
            self._last = now
        self._draw()

    def refresh(self) -> None:
        """Redraw now."""
        with self._lock:
            self._timer = None
            self._last = time.monotonic()
            if self._closed:
                return
        self._draw()

    def _draw(self) -> None:
        try:
            self._html.value = self.render()
            self.updates += 1
        except Exception:
            pass

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` ran: it no longer follows the log, and its output keeps
        the final state."""
        return self._closed

    def close(self) -> None:
        with self._lock:
            self._closed = True
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
        self.log.unsubscribe(self._on_event)
        self._unhook()
        if self._handle is not None:  # the output keeps the final state, as plain HTML
            final = self.render(stopped=True)
            self._handle.update({"text/plain": "jaxviz monitor (stopped)", "text/html": final}, raw=True)
        self.widget.close()

    # ------------------------------------------------------------ display
    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self._bundle()

    def _bundle(self) -> dict[str, Any]:
        """The widget, and its state as HTML for where widgets do not render."""
        self._saved = self.render()
        return {**(self.widget._repr_mimebundle_() or {}), "text/html": self._saved}

    def _ipython_display_(self) -> None:
        """Shown with a display id, so that its output's HTML can follow the state."""
        self._handle = display(self._bundle(), raw=True, display_id=True)
        shell = get_ipython()
        if shell is not None and not self._closed:
            shell.events.register("post_run_cell", self._store_state)

    def _store_state(self, *_: Any) -> None:
        """After each cell: the output's HTML copy of the state, when it changed."""
        if self._handle is not None and not self._closed and self.render() != self._saved:
            self._handle.update(self._bundle(), raw=True)

    def _unhook(self) -> None:
        shell = get_ipython()
        if shell is not None:
            try:
                shell.events.unregister("post_run_cell", self._store_state)
            except ValueError:
                pass  # never registered

    def render(self, stopped: bool = False) -> str:
        """The monitor's HTML (one string: one comm message per redraw)."""
        esc = html.escape
        events = self.log.events
        rows = sorted(self.log.summary(), key=lambda r: -r.compiles - r.traces)
        total = sum(e.total_seconds for e in events)
        state = "watching" if self.log.active and not stopped else "stopped"
        recompiles: dict[str, int] = {}
        for e in events:
            if not is_first_compile(e):
                recompiles[e.function.name] = recompiles.get(e.function.name, 0) + 1
        head = (f"<div style='font-weight:600'>jaxviz · {state} · {len(events)} compiles of "
                f"{len(rows)} functions ({sum(recompiles.values())} recompiles) · "
                f"{fmt_seconds(total)} spent compiling</div>")
        counts = "".join(
            f"<tr><td style='{_CELL}'><b>{esc(r.function)}</b></td>"
            f"<td style='{_NUM}'>{r.compiles or r.traces}</td>"
            f"<td style='{_NUM}'>{recompiles.get(r.function, 0)}</td>"
            f"<td style='{_NUM}'>{fmt_seconds(r.total_s)}</td>"
            f"<td style='{_CELL}'>{text_html(r.top_cause() or '')}</td></tr>"
            for r in rows[: self.functions])
        th = "style='padding:1px 10px 1px 0;text-align:{}'"
        counts_html = (f"<table style='border-collapse:collapse;margin:4px 0'><tr>"
                       f"<th {th.format('left')}>function</th><th {th.format('right')}>compiles</th>"
                       f"<th {th.format('right')}>recompiles</th><th {th.format('right')}>time</th>"
                       f"<th {th.format('left')}>what changes</th></tr>{counts}</table>"
                       ) if rows else "<div>no compiles yet</div>"
        recent = events[-self.timeline:]
        longest = max((e.total_seconds for e in recent), default=0.0) or 1.0
        bars = []
        for e in recent:
            segs = "".join(
                f"<span title='{k} {fmt_seconds(v)}' style='display:inline-block;height:10px;"
                f"width:{max(1, int(200 * v / longest))}px;background:{STAGE_COLORS[k]}'></span>"
                for k, v in e.durations.items() if v)
            color = HTML_COLOR["error"] if e.error else HTML_COLOR["label" if e.count == 1 else "text"]
            bars.append(f"<div style='white-space:nowrap;color:{color}'>"
                        f"<code>{esc(e.function.name)[:24]:<24}</code> {segs} "
                        f"<small>{fmt_seconds(e.total_seconds)} · {esc(str(e.call_site or ''))}</small></div>")
        legend = " ".join(f"<span style='color:{c}'>■</span> {k}" for k, c in STAGE_COLORS.items())
        timeline = (f"<div style='margin:4px 0'><small>timeline (latest last) {legend}</small>"
                    f"{''.join(bars)}</div>") if bars else ""
        latest = ""
        if events:
            e = events[-1]
            first = is_first_compile(e)
            causes = "" if first else "".join(f"<li>{text_html(str(c))}</li>" for c in e.causes)
            sug = (f"<details><summary>how to fix</summary>{text_html(e.suggestion)}</details>"
                   if e.suggestion and not first else "")
            latest = (f"<div style='margin:4px 0'><b>latest:</b> {text_html(e.message())}"
                      f"<ul style='margin:2px 0'>{causes}</ul>{sug}</div>")
        warns = "".join(f"<div style='color:{HTML_COLOR['error']};font-weight:600'>⚠ {text_html(w)}</div>"
                        for w in self.log.warnings[-5:])
        return (f"<div class='jaxviz-monitor' style='font:12px/1.4 var(--jp-ui-font-family,sans-serif);"
                f"word-break:normal;overflow-wrap:break-word'>"
                f"{head}{counts_html}{timeline}{latest}{warns}</div>")
