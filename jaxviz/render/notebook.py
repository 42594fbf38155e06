"""The notebook MIME bundle of a Program: JSON for the JupyterLab renderer, SVG when
Graphviz is installed, HTML (the SVG or a listing, made interactive by the standalone
viewer where scripts run: see ``embed``), and the jaxpr text."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from ..graph import MIME_TYPE
from .dot import (
    FIRST_ROOM,
    DotUnavailable,
    dot_available,
    first_view_svg,
    render_svg,
    start_first_view,
    view_to_dot,
)
from .embed import graph_output_html
from .html import program_html
from .payload import program_payload

# A view with more visible items than this is not laid out by dot in the kernel: the
# listing is shown instead, and the browser renderer lays out the (collapsed) JSON.
MAX_DOT_ITEMS = 1500
# Past this many equations the plain-text form is the summary only: printing a 100k-line
# jaxpr into a terminal or a notebook helps no one (``Program.text()`` still has it).
MAX_TEXT_EQNS = 2000


def program_mimebundle(program: Any, use_dot: bool | None = None) -> dict[str, Any]:
    """``use_dot``: lay out with Graphviz (default: when the ``dot`` binary is installed)."""
    *_, bundle = program_mimebundles(program, use_dot)
    return bundle


def program_mimebundles(program: Any, use_dot: bool | None = None) -> Iterator[dict[str, Any]]:
    """The program's MIME bundle as a notebook can show it while ``dot`` works: where dot
    lays the view out, first the bundle a frontend draws without it (the payload, which
    the JupyterLab renderer lays out itself, and the summary), then the whole bundle,
    dot's drawing in it, to update that display with. The payload of both is one object
    where dot's fit keeps the view (``first_view_svg``): a renderer showing it already
    keeps it. One bundle where nothing waits on dot."""
    use_dot = dot_available() if use_dot is None else use_dot
    graph = program.graph
    # dot fits an automatic first view to its own layout (``first_view_svg``), starting
    # from this room: the view chosen here is its first try, the one drawn when it fits
    fitting = use_dot and program.expand in (None, "auto")
    if fitting:
        program.costs()  # the first try drawn as first_view_svg fits it: the boxes with their costs
        start_first_view(graph)
    expanded = graph.expansion(program.expand)  # chosen once for every form below
    view = graph.view(expanded)
    n_nodes, n_groups = view.visible_counts()
    layout: Future[str] | None = None
    note = None
    if n_nodes + n_groups > MAX_DOT_ITEMS:
        note = (f"{n_nodes + n_groups} items are visible at this expansion: too many to lay out; "
                "showing the listing. Collapse groups with --expand.")
    elif use_dot:
        # dot lays out in its own process while this one writes the payload and the text
        layout = _LAYOUT.submit(render_svg, view_to_dot(view).source)
    else:
        note = "Graphviz 'dot' not found: showing the listing (install graphviz for the drawing)."
    payload = program_payload(program, expanded)
    if layout is not None:
        yield {"text/plain": program.summary(), MIME_TYPE: payload}
    bundle: dict[str, Any] = {"text/plain": _plain_text(program)}
    svg = _laid_out(layout)
    if fitting and svg is not None:
        svg = first_view_svg(program, first_try=svg)
        # narrowed to fit, or its folds brought on screen: another view (the expansion is
        # chosen again only then: the room and the groups kept closed are what changed)
        if graph.first_view_room != FIRST_ROOM or graph.first_view_opens is not None:
            fitted = sorted(graph.expansion(program.expand))
            if fitted != payload["expanded"]:
                payload = {**payload, "expanded": fitted}
    if svg is not None:
        bundle["image/svg+xml"] = svg
    # Where the extension is (JupyterLab), the payload's own MIME type wins; elsewhere the
    # HTML shows the static drawing and turns it into the same interactive view.
    bundle["text/html"] = graph_output_html(program_html(program, svg=svg, note=note), payload)
    bundle[MIME_TYPE] = payload
    yield bundle


def _plain_text(program: Any) -> str:
    """The summary and the jaxpr as JAX prints it (for a big program, where to find it)."""
    if program.eqn_count <= MAX_TEXT_EQNS:
        return f"{program.summary()}\n{program.text()}"
    return f"{program.summary()}\n(jaxpr text of {program.eqn_count} equations not shown: program.text() has it)"


# One worker: it only waits for the ``dot`` subprocess (the GIL released meanwhile).
_LAYOUT = ThreadPoolExecutor(max_workers=1, thread_name_prefix="jaxviz-dot")


def _laid_out(layout: Future[str] | None) -> str | None:
    """The SVG ``dot`` made, or None (no layout asked, or Graphviz gone)."""
    if layout is None:
        return None
    try:
        return layout.result()
    except DotUnavailable:
        return None
