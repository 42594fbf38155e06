"""The compile log as HTML and as ``rich`` tables, and messages with code spans as HTML
or plain text."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

from rich.table import Table
from rich.text import Text

from ..recompiles.events import diff_command
from ..recompiles.watch import CompileLog, FunctionStats, Summary, Watch
from ..text import CODE_SPAN, esc, fmt_seconds, text_plain
from ..visual import HTML_COLOR, TERMINAL_STYLE

# Selectors two classes deep: JupyterLab's rendered-HTML table style (right-aligned cells)
# must not win over ours.
_CSS = ("<style>table.jv-rc{border-collapse:collapse;font:12px/1.4 var(--jp-ui-font-family,sans-serif);"
        "word-break:normal;overflow-wrap:break-word}"
        f"table.jv-rc td.jv,table.jv-rc th.jv{{border-bottom:1px solid {HTML_COLOR['rule']};padding:2px 8px;"
        "text-align:left;vertical-align:top}table.jv-rc td.num,table.jv-rc th.num{text-align:right;"
        f"font-variant-numeric:tabular-nums;white-space:nowrap}}.jv-rc .first{{color:{HTML_COLOR['first_compile']}}}"
        ".jv-rc .site,.jv-rc small{white-space:nowrap}"
        ".jv-rc code,.jv-warn code{font-family:var(--jp-code-font-family,monospace);font-size:95%;"
        f"background:{HTML_COLOR['code_span']};padding:0 2px;border-radius:2px}}"
        f".jv-rc .sug{{color:{HTML_COLOR['label']}}}.jv-warn{{color:{HTML_COLOR['error']};font-weight:600}}</style>")


def text_html(text: str) -> str:
    """A message with Markdown code spans (`x`) as HTML: escaped, spans in <code>."""
    return CODE_SPAN.sub(r"<code>\1</code>", esc(text))


def _td(content: Any, numeric: bool = False, extra: str = "") -> str:
    return f"<td class='jv{' num' if numeric else ''}{extra}'>{content}</td>"


def _head(*names: str, numeric: tuple[str, ...] = ()) -> str:
    return "<tr>" + "".join(f"<th class='jv{' num' if n in numeric else ''}'>{n}</th>"
                            for n in names) + "</tr>"


_TIMES = ("trace", "lower", "compile")


def log_html(log: CompileLog) -> str:
    rows = []
    for i, e in enumerate(log.events, 1):
        if e.error:
            cause = esc(e.error)
        elif e.first_compile and e.kind != "compile":
            cause = "<span class='first'>first compile</span>"
        else:
            cause = "<br>".join(text_html(str(c)) for c in e.causes) or text_html(e.reason())
        if e.suggestion and not e.first_compile:
            cause += f"<div class='sug'>→ {text_html(e.suggestion)}</div>"
        if diff_command(e):
            cause += f"<div class='sug'>what it changed in the program: <code>{esc(diff_command(e))}</code></div>"
        site = esc(str(e.call_site)) if e.call_site else ""
        if e.call_site and e.call_site.text:
            site = f"<span title='{esc(e.call_site.text)}'>{site}</span>"
        function = f"<b>{esc(e.function.name)}</b><br><small>{esc(str(e.function.defined or ''))}</small>"
        rows.append("<tr>" + _td(i, True) + _td(function) + _td(f"<span class='site'>{site}</span>")
                    + _td(cause, extra=" jv-warn" if e.error else "")
                    + "".join(_td(fmt_seconds(e.durations[k]), True) for k in _TIMES) + "</tr>")
    head = _head("#", "function", "called from", "cause", *_TIMES, numeric=("#", *_TIMES))
    dropped = f"<p><small>{log.dropped} older events not kept.</small></p>" if log.dropped else ""
    table = (f"<table class='jv-rc'>{head}{''.join(rows)}</table>" if rows
             else "<p>jaxviz: no compiles recorded.</p>")
    warns = "".join(f"<p class='jv-warn'>⚠ {text_html(w)}</p>" for w in log.warnings)
    return f"{_CSS}<div class='jaxviz-compiles'>{table}{dropped}{summary_html(log.summary.rows)}{warns}</div>"


def log_mimebundle(log: CompileLog) -> dict[str, Any]:
    # HTML and text only: any JupyterLab (or nbviewer, or GitHub) renders them. The
    # JSON payload goes to the jaxviz panel through the bridge, event by event.
    return {"text/plain": str(log), "text/html": _process_html(log) + log_html(log)}


def _process_html(log: CompileLog) -> str:
    """Under jax.distributed, which process this log is of (every process has its own)."""
    if log.process is None:
        return ""
    return (f'<div class="jaxviz-process" style="font-size:12px">compiles on process '
            f"{log.process[0]} of {log.process[1]}</div>")


def watch_mimebundle(watch: Watch) -> dict[str, Any]:
    return log_mimebundle(watch.view())


def watch_rich(watch: Watch) -> Iterator[Any]:
    yield from log_rich(watch.view())


def summary_mimebundle(summary: Summary) -> dict[str, Any]:
    return {"text/html": summary_html(summary.rows)}  # IPython adds the text/plain repr


def summary_renderables(summary: Summary) -> Iterator[Any]:
    yield summary_rich(summary.rows)


def summary_html(rows: list[FunctionStats]) -> str:
    if not rows:
        return ""
    body = "".join(
        "<tr>" + _td(f"<b>{esc(r.function)}</b>") + _td(r.traces, True) + _td(r.compiles, True)
        + _td(fmt_seconds(r.trace_s), True) + _td(fmt_seconds(r.lower_s), True)
        + _td(fmt_seconds(r.compile_s), True) + _td(r.signatures, True)
        + _td(text_html(r.top_cause() or "")) + "</tr>" for r in rows)
    numeric = ("traces", "compiles", *_TIMES, "signatures")
    head = _head("function", "traces", "compiles", *_TIMES, "signatures", "top cause",
                 numeric=numeric)
    return f"{_CSS}<table class='jv-rc'>{head}{body}</table>"


def log_rich(log: CompileLog) -> Iterator[Any]:
    """The compile log for a terminal: a table of events, the per-function summary, the warnings."""
    table = Table(title="jaxviz: compiles", show_lines=False)
    for col in ("#", "function", "called from", "cause", "trace", "lower", "compile"):
        table.add_column(col, overflow="fold")
    for i, e in enumerate(log.events, 1):
        cause = Text(e.error or e.reason(), style=TERMINAL_STYLE["error"] if e.error else
                     ("" if e.count == 1 else TERMINAL_STYLE["recompile"]))
        table.add_row(str(i), e.function.name, str(e.call_site or ""), cause,
                      *(fmt_seconds(e.durations[k]) for k in ("trace", "lower", "compile")))
    yield table
    yield summary_rich(log.summary.rows)
    for w in log.warnings:
        yield Text("warning: " + w, style=f"bold {TERMINAL_STYLE['error']}")


def summary_rich(rows: list[FunctionStats]) -> Table:
    table = Table(title="per function")
    for col in ("function", "traces", "compiles", "trace", "lower", "compile", "signatures",
                "top cause"):
        table.add_column(col)
    for r in rows:
        table.add_row(r.function, str(r.traces), str(r.compiles), fmt_seconds(r.trace_s),
                      fmt_seconds(r.lower_s), fmt_seconds(r.compile_s), str(r.signatures),
                      r.top_cause() or "")
    return table


_NOTICE_STYLE = (f"font:12px/1.5 var(--jp-ui-font-family,sans-serif);color:{HTML_COLOR['cause_text']};"
                 f"background:{HTML_COLOR['cause_background']};border-left:3px solid {HTML_COLOR['cause_line']};"
                 "padding:2px 8px;"
                 "margin:2px 0;word-break:normal;overflow-wrap:break-word")


def show_message(text: str, *, style: str = _NOTICE_STYLE) -> None:
    """A one-line message under the running cell (HTML with code spans, plain text for
    terminals); outside IPython, on stderr."""
    ipython = sys.modules.get("IPython")  # a shell has imported it; jaxviz never does here
    shell = ipython.get_ipython() if ipython is not None else None
    if shell is None:
        print(f"jaxviz: {text_plain(text)}", file=sys.stderr)
        return
    # What ``IPython.display.display(data, raw=True)`` does with a MIME dict.
    shell.display_pub.publish(data={
        "text/plain": f"jaxviz: {text_plain(text)}",
        "text/html": f"<div class='jaxviz-notice' style='{style}'>jaxviz: {text_html(text)}</div>"},
        metadata={})
