"""The graph output's HTML for pages without the JupyterLab extension (VS Code, Colab,
Notebook 7 without it, nbconvert HTML, nbviewer): the static drawing, the program payload
as JSON, and a loader that makes it interactive with the standalone viewer
(``jaxviz/static/viewer.js``, built from ``labextension/src/standalone.ts``).

The viewer (1.6 MB, 0.7 MB as it travels: Graphviz in WebAssembly, inlined so that it
works offline) goes into a page once: into the kernel session's first graph output, whose
loader runs it; it defines ``window.jaxviz`` for every output on the page. Later outputs
carry only the loader, which waits for the viewer and leaves the static drawing when none
comes (a viewer-less page: GitHub, a script-less renderer). Where each output is a page of its own (Colab draws
every output in its own iframe) every output carries it. A cell that carried it and runs
again carries it again, so that clearing its old output does not take the viewer with it.
"""

from __future__ import annotations

import functools
import sys
import threading
from pathlib import Path
from typing import Any

from .payload import compressed_graph, gzip_base64, json_bytes

VIEWER_PATH = Path(__file__).resolve().parent.parent / "static" / "viewer.js"

# Every graph output's script. It runs the viewer when the page has none yet: from the
# first ``script.jaxviz-viewer`` on the page (the viewer gzipped, base64: 4x smaller in the
# .ipynb than the script as JSON-escaped text), inflated with the browser's own
# DecompressionStream and added as an inline script (so it runs wherever the outputs'
# own scripts run). Then it polls for ``window.jaxviz`` for 10 s, and upgrades the page's
# graph outputs; without a viewer the static drawing stays.
LOADER = """<script>(function(){var w=window,d=document,n=0;
function up(){var j=w.jaxviz;if(j&&j.upgrade){j.upgrade();return 1;}return 0;}
if(!up()&&!w.jaxvizBooting&&w.DecompressionStream){var z=d.querySelector("script.jaxviz-viewer");
if(z){w.jaxvizBooting=1;var b=Uint8Array.from(atob(z.textContent),function(c){return c.charCodeAt(0);});
new Response(new Blob([b]).stream().pipeThrough(new DecompressionStream("gzip"))).text().then(function(s){
var e=d.createElement("script");e.textContent=s;d.head.appendChild(e);});}}
(function t(){if(!up()&&n++<100){setTimeout(t,100);}})();})();</script>""".replace("\n", "")


@functools.cache
def viewer_source() -> str | None:
    """The bundled viewer's source, or None when it was not built (no Node.js at install:
    outputs are then static)."""
    try:
        return VIEWER_PATH.read_text(encoding="utf-8")
    except OSError:
        return None


def viewer_payload() -> str | None:
    """The viewer as it travels in an output (``gzip_base64`` at level 6, once a session:
    a notebook keeps it, 11 % smaller than at a graph's level; 0.08 s, which
    ``prepare_viewer`` takes off the first graph output's path)."""
    with _PACKING:  # one packing: an output waits for the one ``prepare_viewer`` started
        return _packed_viewer()


@functools.cache
def _packed_viewer() -> str | None:
    source = viewer_source()
    return None if source is None else gzip_base64(source, level=6)


_PACKING = threading.Lock()


def prepare_viewer() -> threading.Thread:
    """Pack the viewer in a thread of its own (zlib lets go of the GIL while it works), as
    the extension loads: while the user writes the first cell, not while its graph waits."""
    thread = threading.Thread(target=viewer_payload, name="jaxviz-viewer", daemon=True)
    thread.start()
    return thread


class ViewerPlacement:
    """Which graph outputs carry the viewer: the first of the session, every one where
    outputs do not share a page (Colab), and those of the cell that carried it."""

    def __init__(self) -> None:
        self.carrier: str | None = None  # the cell id of the output that carried it
        self.sent = False

    def needs_viewer(self) -> bool:
        if "google.colab" in sys.modules:
            return True
        cell = current_cell_id()
        if self.sent and (cell is None or cell != self.carrier):
            return False
        self.sent, self.carrier = True, cell
        return True


PLACEMENT = ViewerPlacement()


def current_cell_id() -> str | None:
    """The id of the notebook cell being run, as the frontend sent it in the request's
    metadata (JupyterLab and Notebook 7 do; nbclient does not), or None."""
    ipython = sys.modules.get("IPython")  # not imported: not in a kernel
    shell = ipython.get_ipython() if ipython is not None else None
    header = getattr(shell, "parent_header", None) if shell is not None else None
    if not isinstance(header, dict):
        return None
    cell = (header.get("metadata") or {}).get("cellId")
    return cell if isinstance(cell, str) else None


def json_for_script(data: Any) -> str:
    """JSON that can sit in a ``<script type="application/json">`` element: no ``</``
    or ``<!--`` closes or comments it (``<\\/`` reads back as ``</`` in JSON)."""
    text = json_bytes(data).decode("utf-8")
    return text.replace("</", "<\\/").replace("<!--", "<\\u0021--")


def graph_output_html(static_html: str, payload: dict[str, Any], *, viewer: bool | None = None) -> str:
    """``static_html`` (what script-less viewers show), made interactive where scripts run.
    ``viewer``: inline the viewer script (default: as ``PLACEMENT`` decides)."""
    if payload.get("graph") is None:  # too big to ship: the static drawing only
        return static_html
    packed = viewer_payload()
    if packed is None:
        return static_html
    if viewer is None:
        viewer = PLACEMENT.needs_viewer()
    inline = f'<script type="application/octet-stream" class="jaxviz-viewer">{packed}</script>' if viewer else ""
    graph = payload["graph"]
    if not (isinstance(graph, dict) and "encoding" in graph):
        # A second copy of the graph (the MIME type holds the first): compressed, whatever
        # its size, since the viewer needs DecompressionStream anyway (5 to 10x smaller).
        graph = compressed_graph(json_bytes(graph))
    shipped = {**payload, "graph": graph}
    # The scripts sit in a hidden box: a sanitizer that keeps a script's text when it drops
    # the element (or a renderer that shows it) does not spill 0.7 MB of base64 on the page.
    return (f'<div class="jaxviz-out"><div class="jaxviz-static">{static_html}</div>'
            f'<div class="jaxviz-scripts" hidden style="display:none">'
            f'<script type="application/json" class="jaxviz-data">{json_for_script(shipped)}</script>'
            f"{inline}{LOADER}</div></div>")
