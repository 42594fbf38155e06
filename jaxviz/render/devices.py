"""Devices and run reports as HTML (the notebook) and ``rich`` tables (a terminal)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from rich.table import Table

from ..devices import DeviceTable
from ..profiling import RunReport
from ..text import esc
from ..visual import HTML_COLOR, TERMINAL_STYLE


def device_table_mimebundle(devices: DeviceTable) -> dict[str, Any]:
    rows = "".join(
        f"<tr><td><code>{esc(r.label)}</code>{' <b>(default)</b>' if r.default else ''}</td>"
        f"<td>{esc(r.kind)}</td><td>{esc(r.memory_text())}</td></tr>" for r in devices.rows)
    note = f'<div style="color:{HTML_COLOR["note"]}">{esc(devices.note())}</div>' if devices.note() else ""
    html = ('<table class="jaxviz-devices" style="font-size:12px"><tr><th>device</th><th>kind</th>'
            f"<th>memory</th></tr>{rows}</table>{note}")
    return {"text/plain": repr(devices), "text/html": html}


def device_table_rich(devices: DeviceTable) -> Iterator[Any]:
    table = Table(title="devices", box=None, header_style="bold")
    for col in ("device", "kind", "memory"):
        table.add_column(col)
    for r in devices.rows:
        table.add_row(r.label + (" (default)" if r.default else ""), r.kind, r.memory_text())
    yield table
    if devices.note():
        yield devices.note()


def run_report_html(report: RunReport) -> str:
    rows = "".join(f'<tr><td style="text-align:left;color:{HTML_COLOR["label"]}">{esc(k)}</td>'
                   f'<td style="text-align:left">{esc(v)}</td></tr>' for k, v in report.rows())
    return (f'<div class="jaxviz-run"><div style="font-weight:bold;font-size:12px">Run · {esc(report.name)}</div>'
            f'<table class="jaxviz-run-table" style="font-size:12px">{rows}</table></div>')


def run_report_mimebundle(report: RunReport) -> dict[str, Any]:
    return {"text/plain": report.text(), "text/html": run_report_html(report)}


def run_report_table(report: RunReport) -> Table:
    table = Table(title=f"Run · {report.name}", box=None, show_header=False, title_justify="left")
    table.add_column(style="dim")
    table.add_column()
    for k, v in report.rows():
        table.add_row(k, v, style=TERMINAL_STYLE["note"] if k == "note" else None)
    return table


def run_report_rich(report: RunReport) -> Iterator[Any]:
    yield run_report_table(report)
