"""The interactive graph outside JupyterLab, in a real browser (Debian's Chromium driven by
Playwright): the standalone viewer (``jaxviz/static/viewer.js``) that a graph output's
HTML carries, and the JupyterLab extension in Notebook 7.

- a notebook run through nbclient and exported by nbconvert (lab template), opened from
  ``file://`` with no server: every graph is interactive, clicking a group expands it
  (the monitor's static export: ``test_widgets.py``);
- a graph output's HTML alone in a ``sandbox="allow-scripts"`` iframe on a blank page (as
  VS Code and Colab render outputs), twice on one page (duplicated outputs), without the
  viewer anywhere on its page (it stays the static SVG), and on a page marked as VS Code
  marks its dark themes;
- Notebook 7 served by the test: the extension's renderer draws the graph, a click
  expands it, and its plugins load without errors.

Screenshots go to ``artifacts/frontends/``.
"""

from __future__ import annotations

import html
import http.server
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import background
import nbformat
import pytest
from browser_lab import (
    MLP_SOURCE,
    ROOT,
    browser_marks,
    command,
    contrast,
    luminance,
    over,
    run_cell,
    save_shot,
    start_lab,
    write_notebook,
)
from execute_notebook import execute_notebook

from jaxviz.render.embed import VIEWER_PATH

pytest.importorskip("playwright.sync_api")
ARTIFACTS = ROOT / "artifacts" / "frontends"

pytestmark = [*browser_marks(timeout=300),
              pytest.mark.skipif(not VIEWER_PATH.exists() and not os.environ.get("CI"),
                                 reason="the standalone viewer is not built (npm run build)")]

CELLS = [
    "%load_ext jaxviz\n" + MLP_SOURCE,
    # 1: the session's first graph output: it carries the viewer
    "%%jaxpr --expand 0\nloss = mlp(x, ws)",
    # 2: a later one: the loader only
    "%jaxpr --expand 0 mlp(x, ws)",
]

# How many nodes and boxes each graph output shows (after it was upgraded).
ITEMS_JS = "out => out.querySelectorAll('svg.jp-jaxviz-svg g.node').length"


def execute() -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(src) for src in CELLS]
    return execute_notebook(nb, timeout=180)


EXECUTED = background.job(__file__, execute)  # run beside the tests before this module's


@pytest.fixture(scope="module")
def executed() -> nbformat.NotebookNode:
    """The notebook above, run in a real kernel by nbclient (widget state saved, as
    nbclient does by default)."""
    return EXECUTED.result()


@pytest.fixture(scope="module")
def exported(executed, tmp_path_factory) -> Path:
    """The executed notebook as nbconvert's HTML (lab template), a file on disk."""
    from nbconvert import HTMLExporter

    body, _ = HTMLExporter(template_name="lab").from_notebook_node(executed)
    path = tmp_path_factory.mktemp("export") / "exported.html"
    path.write_text(body, encoding="utf-8")
    return path


def graph_html(nb: nbformat.NotebookNode, cell: int) -> str:
    (out,) = [o for o in nb.cells[cell].outputs if "application/vnd.jaxviz+json" in o.get("data", {})]
    return out.data["text/html"]


def expand_first_group(frame, out_selector: str) -> tuple[int, int]:
    """Click the first collapsed group of the output; the item counts before and after."""
    out = frame.locator(out_selector)
    before = out.evaluate(ITEMS_JS)
    group = out.locator("svg.jp-jaxviz-svg g.node[id^='g']").first
    group.click()
    frame.wait_for_function(f"([o, n]) => ({ITEMS_JS})(o) > n",
                            arg=[out.element_handle(), before], timeout=30_000)
    return before, out.evaluate(ITEMS_JS)


def layout_modes(frame) -> set[str]:
    """Where the views' layouts ran: 'worker' (a worker made from the viewer's own script)
    or 'main'."""
    return set(frame.evaluate("[...document.querySelectorAll('.jp-jaxviz-graph')].map(e => e.dataset.jaxvizLayout)"))


def settle(frame) -> None:
    """Wait until no graph is gliding to its new layout (for screenshots)."""
    frame.wait_for_function("!document.querySelector('[data-jaxviz-moving]')", timeout=10_000)


def wait_upgraded(frame, count: int) -> None:
    frame.wait_for_function(
        "n => document.querySelectorAll('.jaxviz-out[data-jaxviz-upgraded=done]').length >= n",
        arg=count, timeout=60_000)


def test_outputs_carry_the_viewer_once(executed):
    first, second = graph_html(executed, 1), graph_html(executed, 2)
    assert first.count('class="jaxviz-viewer"') == 1 and 'class="jaxviz-viewer"' not in second
    for out in (first, second):
        assert '<script type="application/json" class="jaxviz-data">' in out
        assert "<svg" in out  # the static drawing, for script-less viewers


def test_export_from_file_url_is_interactive(browser, exported):
    page = browser.new_page(viewport={"width": 1300, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto(exported.as_uri())
        wait_upgraded(page, 2)
        outs = page.locator(".jaxviz-out")
        assert outs.count() == 2
        assert page.evaluate("window.jaxviz.views.length") == 2
        assert layout_modes(page) == {"worker"}
        assert outs.nth(0).locator(".jaxviz-static").is_hidden()
        page.locator(".jaxviz-out").nth(1).scroll_into_view_if_needed()
        save_shot(page, ARTIFACTS, "1-export-collapsed")
        before, after = expand_first_group(page, ".jaxviz-out >> nth=1")
        assert after > before
        settle(page)
        save_shot(page, ARTIFACTS, "2-export-expanded")
        assert not errors, errors
    finally:
        page.close()


@contextmanager
def served_in_two_parts(body: bytes, cut: int) -> Iterator[tuple[str, threading.Event]]:
    """An HTTP server that sends ``body[:cut]``, then the rest once the event is set, as a
    slow network delivers a long page while the browser is already running its scripts."""
    rest = threading.Event()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.end_headers()
            self.wfile.write(body[:cut])
            self.wfile.flush()
            rest.wait(60)
            self.wfile.write(body[cut:])

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/", rest
    finally:
        rest.set()
        server.shutdown()
        server.server_close()


def test_an_output_still_arriving_when_the_viewer_boots_is_upgraded_once_it_has(browser, exported):
    """The viewer boots asynchronously and then looks at every output on the page. One
    whose payload is still arriving (its data script half parsed) is left for its own
    loader, which comes after the payload: it must not be marked static for good."""
    body = exported.read_bytes()
    tag = b'class="jaxviz-data"'  # of a <script>, its attributes in any order
    second = body.index(b">", body.index(tag, body.index(tag) + 1)) + 1
    cut = second + (body.index(b"</script>", second) - second) // 2  # halfway into its JSON
    page = browser.new_page(viewport={"width": 1300, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        with served_in_two_parts(body, cut) as (url, rest):
            page.goto(url, wait_until="commit")
            wait_upgraded(page, 1)  # the viewer has booted and looked at the page
            outs = page.locator(".jaxviz-out")
            assert outs.count() == 2 and outs.nth(1).get_attribute("data-jaxviz-upgraded") is None
            rest.set()
            wait_upgraded(page, 2)
        assert page.evaluate("window.jaxviz.views.length") == 2
        assert not errors, errors
    finally:
        page.close()


def sandboxed(outputs: list[str]) -> str:
    """A blank page with each HTML in its own ``sandbox="allow-scripts"`` iframe."""
    frames = "".join(f'<iframe sandbox="allow-scripts" style="width:1200px;height:700px" '
                     f'srcdoc="{html.escape(o, quote=True)}"></iframe>' for o in outputs)
    return f"<!doctype html><html><body>{frames}</body></html>"


def test_sandboxed_iframe_with_duplicates(browser, executed, tmp_path):
    first, second = graph_html(executed, 1), graph_html(executed, 2)
    page = browser.new_page(viewport={"width": 1300, "height": 1500})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        # 1: the output that carries the viewer, twice, then a later output (loader only).
        # 2: a later output alone: no viewer on its page, the static drawing stays.
        page.set_content(sandboxed([first + first + second, second]))
        with_viewer, alone = page.frames[1], page.frames[2]
        wait_upgraded(with_viewer, 3)
        assert with_viewer.evaluate("window.jaxviz.views.length") == 3
        assert layout_modes(with_viewer) == {"worker"}
        before, after = expand_first_group(with_viewer, ".jaxviz-out >> nth=1")
        assert after > before
        # the other copy is a view of its own, left as it was
        assert with_viewer.locator(".jaxviz-out").nth(0).evaluate(ITEMS_JS) == before
        settle(with_viewer)
        save_shot(page, ARTIFACTS, "3-sandboxed-duplicates")
        # an output that leaves the page (a cleared cell) is let go at the next upgrade
        with_viewer.evaluate("document.querySelector('.jaxviz-out').remove(); window.jaxviz.upgrade()")
        assert with_viewer.evaluate("window.jaxviz.views.length") == 2
        assert alone.evaluate("typeof window.jaxviz") == "undefined"
        assert alone.locator(".jaxviz-static svg").is_visible()
        assert alone.locator(".jaxviz-live").count() == 0
        assert not errors, errors
    finally:
        page.close()


@pytest.fixture(scope="module")
def notebook7(tmp_path_factory):
    pytest.importorskip("notebook")
    server = start_lab(tmp_path_factory.mktemp("nb7"), app="notebook")
    try:
        yield server
    finally:
        server.stop()


def test_notebook7_renders_expands_and_shows_the_panel(notebook7, browser):
    write_notebook(notebook7.root / "nb7.ipynb", CELLS[:2])
    page = browser.new_page(viewport={"width": 1300, "height": 1000})
    errors: list[str] = []  # jaxviz's own (Notebook 7 logs some errors of its own)
    page.on("pageerror", lambda e: errors.append(f"{e}\n{e.stack}") if "jaxviz" in (e.stack or "") else None)
    page.on("console", lambda m: errors.append(m.text)
            if m.type == "error" and "jaxviz" in m.text.lower() else None)
    try:
        page.goto(f"{notebook7.url}/notebooks/nb7.ipynb?token={notebook7.token}", timeout=90_000)
        page.locator(".jp-Notebook .jp-Cell").first.wait_for(timeout=90_000)
        page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']").first.wait_for(timeout=90_000)
        run_cell(page, 0, 120_000, tries=6)
        run_cell(page, 1, 120_000, tries=6)
        graph = page.locator(".jp-Notebook .jp-Cell").nth(1).locator(".jp-jaxviz-output")
        graph.locator("svg.jp-jaxviz-svg g.node").first.wait_for(timeout=60_000)
        # the extension's renderer, not the standalone viewer (its MIME type wins)
        assert page.locator(".jaxviz-out").count() == 0
        before, after = expand_first_group(page, ".jp-Notebook .jp-Cell >> nth=1 >> .jp-jaxviz-output")
        assert after > before
        # the panel, from the command palette, in Notebook 7's right side panel
        command(page, "jaxviz: Show panel")
        page.locator("#jaxviz-panel[data-jaxviz-state='connected']").wait_for(timeout=30_000)
        settle(page)
        save_shot(page, ARTIFACTS, "4-notebook7")
        assert not errors, errors
    finally:
        page.close()


COLORS_JS = """() => {
  const cs = sel => getComputedStyle(document.querySelector(sel));
  return {
    canvas: cs('.jp-jaxviz-canvas').backgroundColor,
    title: cs('.jp-jaxviz-title').color,
    edgeText: cs('svg.jp-jaxviz-svg g.edge text').fill,
    box: cs('svg.jp-jaxviz-svg g.node.jaxviz-group > polygon').fill,
    boxText: cs('svg.jp-jaxviz-svg g.node.jaxviz-group text').fill,
  };
}"""


def test_vscode_dark_theme(browser, executed):
    """VS Code's webview marks its body with the theme's kind and sets its colours as
    --vscode-* variables (set here by hand, as it would): the graph takes a dark canvas with
    light text, not a white card."""
    page = browser.new_page(viewport={"width": 1300, "height": 800})
    try:
        body = ('<body class="vscode-dark" data-vscode-theme-kind="vscode-dark" '
                'style="--vscode-editor-background:#1f1f1f;background:#1f1f1f">')
        page.set_content(sandboxed([f"<!doctype html><html>{body}{graph_html(executed, 1)}</body></html>"]))
        frame = page.frames[1]
        wait_upgraded(frame, 1)
        settle(frame)
        c = frame.evaluate(COLORS_JS)
        bg = over(c["canvas"], "rgb(31, 31, 31)")
        assert bg == (31, 31, 31), c  # VS Code's editor background
        assert contrast(over(c["title"], c["canvas"]), bg) >= 4.5, c
        assert contrast(over(c["edgeText"], c["canvas"]), bg) >= 4.5, c
        box = over(c["box"], c["canvas"])
        assert luminance(box) < 0.2 and contrast(over(c["boxText"], c["box"]), box) >= 4.5, c
        save_shot(page, ARTIFACTS, "5-vscode-dark")
    finally:
        page.close()
