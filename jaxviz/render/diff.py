"""A trace diff drawn: the union graph coloured by status (DOT, SVG), and the notebook
bundle that shows it as a graph output (the payload with the statuses under ``"diff"``)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from rich.text import Text

from ..diff import ProgramDiff
from ..graph import MIME_TYPE
from ..text import esc
from .dot import DotUnavailable, dot_available, render_svg, view_to_dot
from .embed import graph_output_html
from .html import program_html
from .payload import program_payload


def diff_dot(d: ProgramDiff, expand: int | str | Iterable[int] | None = None, legend: bool = True) -> str:
    view = d.graph.view(d.expand if expand is None else expand)
    return view_to_dot(view, legend=legend, marks=d.marks).source


def diff_svg(d: ProgramDiff) -> str | None:
    """The kernel's drawing, coloured by status; None without Graphviz."""
    if not dot_available():
        return None
    try:
        return render_svg(diff_dot(d))
    except DotUnavailable:
        return None


def diff_mimebundle(d: ProgramDiff) -> dict[str, Any]:
    """The same view as a graph output: the graph payload for the JupyterLab renderer
    (with the diff's statuses under ``"diff"``), and HTML that shows the coloured
    drawing (or, without Graphviz, the listing) and turns into the interactive viewer
    where scripts run."""
    bundle: dict[str, Any] = {"text/plain": d.text()}
    if d.empty:
        return bundle
    program = d.as_program()
    svg = diff_svg(d)
    note = None if svg is not None else "Graphviz 'dot' not found: showing the listing."
    payload = program_payload(program)
    payload["diff"] = d.statuses()
    if svg is not None:
        bundle["image/svg+xml"] = svg
    head = f'<div class="jaxviz-diff-summary" style="font-family:monospace;font-size:12px">{esc(d.summary())}</div>'
    bundle["text/html"] = graph_output_html(head + program_html(program, svg=svg, note=note), payload)
    bundle[MIME_TYPE] = payload
    return bundle


def diff_rich(d: ProgramDiff) -> Iterator[Any]:
    """A terminal shows the summary and the changes, as ``str(diff)`` does."""
    yield Text(d.text())
