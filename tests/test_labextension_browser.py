"""The JupyterLab extension in a real browser: a JupyterLab server, Debian's Chromium driven
by Playwright, a notebook run through the UI.

Checks the interactive graph (the SVG's top-level items are those of ``Graph.view`` in
the kernel; clicking a group expands it; search; export; the groups opened are saved with
the notebook and come back on reopening it), and the jaxviz panel (opened
from the command palette; says how to load jaxviz; lists the traced function, the
recompile with its cause and the stale capture pushed by the recompilation tracker;
shows a function's graph; resets on kernel restart). Screenshots go to
``artifacts/labextension/``.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest
from browser_lab import (
    MLP_SOURCE,
    ROOT,
    browser_marks,
    command,
    contrast,
    luminance,
    notebook_page,
    over,
    run_cell,
    save_shot,
    svg_items,
    write_notebook,
)

ARTIFACTS = ROOT / "artifacts" / "labextension"
MIME = "application/vnd.jaxviz+json"

pytestmark = browser_marks(timeout=240)

CELLS = [
    "%load_ext jaxviz",
    # 1: a program with three calls of a user function
    "import json\n" + MLP_SOURCE,
    # 2: the %%jaxpr cell, top level collapsed
    "%%jaxpr --expand 0 -o prog\nloss = mlp(x, ws)",
    # 3: what the kernel's own Graph.view shows, for the browser to match
    "def ids(view):\n"
    "    g = view.graph\n"
    "    return sorted([f'n{n}' for e in view.expanded for n in g.groups[e].nodes]\n"
    "                  + [f'g{c}' for e in view.expanded for c in g.groups[e].groups if c not in view.expanded])\n"
    # groups to open one after the other, down to the first group of equations only
    "path, g = [], 0\n"
    "while prog.graph.groups[g].groups:\n"
    "    g = prog.graph.groups[g].groups[0]\n"
    "    path.append(g)\n"
    "from jaxviz.render.payload import program_payload\n"
    "print('JAXVIZ-EXPECTED ' + json.dumps({'name': prog.name, 'collapsed': ids(prog.graph.view(0)),\n"
    "      'path': path, 'views': [ids(prog.graph.view(path[:i + 1])) for i in range(len(path))],\n"
    "      'kernel_expanded': program_payload(prog)['expanded'], 'n_groups': len(prog.graph.groups),\n"
    "      'folds': [[g.id, g.name, g.groups] for g in prog.graph.groups if g.kind == 'repeat']}))",
    # 4: a recompile (new shape), seen by the recompilation tracker
    "@jax.jit\n"
    "def step(v):\n"
    "    return jnp.tanh(v) * 2\n"
    "step(jnp.ones(3))\n"
    "step(jnp.ones(4)).block_until_ready()",
    # 5: a global baked in at trace time, then changed
    "scale = 2.0\n"
    "@jax.jit\n"
    "def scaled(v):\n"
    "    return v * scale\n"
    "scaled(jnp.ones(2))\n"
    "scale = 3.0",
    # 6: a flood of events
    "import jaxviz.ipython.bridge\n"
    "for i in range(5000):\n"
    "    jaxviz.ipython.bridge.publish('compile', {'function': 'flood', 'count': i + 2, 'message': f'flood {i}',\n"
    "        'causes': [{'kind': 'static_value', 'path': 'n', 'before': i, 'after': i + 1}]})",
    # 7: a graph big enough to travel gzipped (payload over 256 KB)
    "%%jaxpr --expand 0 -o big\nv = jnp.ones(3)\nfor i in range(600):\n    v = jnp.sin(v) * 1.01\n"
    "total = v.sum()",
    # 8: the kernel's view of it, for the browser to match
    "from jaxviz.render.payload import program_payload\n"
    "shipped = program_payload(big)['graph']\n"
    "print('JAXVIZ-BIG ' + json.dumps({'encoding': shipped.get('encoding'), 'items': ids(big.graph.view(0))}))",
]


def shot(page, name: str) -> None:
    save_shot(page, ARTIFACTS, name)


def saved_notebook(path: Path, done, timeout: float = 30) -> dict:
    """The notebook on disk, once ``done(notebook)`` says the save we wait for is there."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            nb = json.loads(path.read_text())
            if done(nb):
                return nb
        except (OSError, ValueError, LookupError):
            pass
        assert time.monotonic() < deadline, f"{path.name} was not saved as expected"
        time.sleep(0.2)


# Colours as the browser computed them, for the dark-theme checks: each SVG or panel item
# with the colour under it (its fill, or the background behind it).
THEME_COLORS_JS = """
([graph, panel]) => {
  const cs = e => (e ? getComputedStyle(e) : null);
  const q = (root, sel) => root.querySelector(sel);
  const probe = document.createElement('div');
  probe.style.background = 'var(--jp-layout-color0)';
  document.body.appendChild(probe);
  const layout0 = cs(probe).backgroundColor;
  probe.remove();
  const svg = q(graph, 'svg.jp-jaxviz-svg');
  const edge = q(svg, 'g.edge:not(.jaxviz-weak) path:not(.jaxviz-hit)');
  const arrow = q(svg, 'g.edge:not(.jaxviz-weak) polygon');
  const edgeText = q(svg, 'g.edge text');
  const cluster = q(svg, 'g.cluster.jaxviz-group-call > path');
  const clusterLabel = q(svg, '.jaxviz-cluster-label');
  const eqn = q(svg, 'g.node.jaxviz-eqn > path');
  const eqnText = q(svg, 'g.node.jaxviz-eqn text');
  const input = q(svg, 'g.node.jaxviz-input > polygon');
  const inputText = q(svg, 'g.node.jaxviz-input text');
  const warning = q(panel, '.jp-jaxviz-compile.jp-jaxviz-warning');
  return {
    theme: document.body.dataset.jpThemeName,
    layout0,
    canvas: cs(q(graph, '.jp-jaxviz-canvas')).backgroundColor,
    edge: cs(edge).stroke,
    arrow: cs(arrow).fill,
    edgeText: cs(edgeText).fill,
    cluster: cs(cluster).fill,
    clusterLine: cs(cluster).stroke,
    clusterLabel: cs(clusterLabel).fill,
    eqn: cs(eqn).fill,
    eqnText: cs(eqnText).fill,
    input: cs(input).fill,
    inputText: cs(inputText).fill,
    legendText: cs(q(graph, '.jp-jaxviz-legend')).color,
    panel: cs(panel).backgroundColor,
    panelText: cs(panel).color,
    warning: cs(warning).backgroundColor,
    warningText: cs(warning).color,
  };
}
"""


def check_theme_colors(c: dict, dark: bool) -> None:
    """What is drawn on the background stands out from it; text stays readable on the
    fill under it; in the dark theme, lines and text on the background are light and
    kind-coloured nodes keep their light fill with dark text."""
    bg = over(c["layout0"], "rgb(255, 255, 255)")
    assert (luminance(bg) < 0.05) == dark, c
    assert over(c["canvas"], c["layout0"]) == bg, c  # the graph sits on the theme's background
    edge = over(c["edge"], c["layout0"])
    assert contrast(edge, bg) >= 3, c
    assert contrast(over(c["arrow"], c["layout0"]), bg) >= 3, c
    assert contrast(over(c["edgeText"], c["layout0"]), bg) >= 4.5, c
    cluster = over(c["cluster"], c["layout0"])
    assert contrast(over(c["clusterLabel"], c["cluster"]), cluster) >= 4.5, c
    assert contrast(over(c["edgeText"], c["cluster"]), cluster) >= 4.5, c
    assert contrast(over(c["edge"], c["cluster"]), cluster) >= 3, c
    assert contrast(over(c["clusterLine"], c["layout0"]), bg) >= 1.8, c
    eqn = over(c["eqn"], c["cluster"])
    assert contrast(over(c["eqnText"], c["eqn"]), eqn) >= 4.5, c
    node = over(c["input"], c["layout0"])
    node_text = over(c["inputText"], c["input"])
    assert luminance(node_text) < 0.05 and contrast(node_text, node) >= 4.5, c
    panel = over(c["panel"], c["layout0"])
    assert contrast(over(c["panelText"], c["panel"]), panel) >= 4.5, c
    assert contrast(over(c["legendText"], c["layout0"]), bg) >= 4.5, c
    warning = over(c["warning"], c["panel"])
    assert contrast(over(c["warningText"], c["warning"]), warning) >= 4.5, c
    if dark:
        assert luminance(edge) > 0.18 and luminance(over(c["edgeText"], c["layout0"])) > 0.5, c
        assert luminance(cluster) < 0.05 and luminance(eqn) < 0.05, c


def set_theme(page, name: str) -> None:
    """Switch JupyterLab's theme from the command palette; wait until its CSS applies."""
    command(page, f"Use Theme: {name}")
    page.wait_for_function(
        "name => document.body.dataset.jpThemeName === name", arg=name, timeout=30_000)
    page.locator("#jupyterlab-splash").wait_for(state="detached", timeout=30_000)  # its fade-out


def test_graph_and_panel_in_jupyterlab(lab):
    write_notebook(lab.root / "other.ipynb", ["1 + 1"])
    console: list[str] = []
    with notebook_page(lab, "jaxviz_test.ipynb", CELLS, viewport={"width": 1500, "height": 1000},
                       panel_timeout=30_000, artifacts=ARTIFACTS, failure_shot="failure", console=console) as page:
        # The panel, from the command palette, before jaxviz is loaded in the kernel.
        panel = page.locator("#jaxviz-panel")
        assert panel.is_visible()
        assert "%load_ext jaxviz" in panel.locator(".jp-jaxviz-link-status").inner_text()
        shot(page, "1-panel-not-loaded")

        # %load_ext jaxviz: the kernel announces itself and the panel connects.
        run_cell(page, 0)
        page.locator("#jaxviz-panel[data-jaxviz-state='connected']").wait_for(timeout=30_000)

        for i in (1, 2, 3):
            run_cell(page, i)
        text = page.locator(".jp-Notebook .jp-Cell").nth(3).locator(".jp-OutputArea-output").inner_text()
        expected = json.loads(re.search(r"JAXVIZ-EXPECTED (\{.*\})", text).group(1))

        # The graph: laid out in the browser, same top-level items as the kernel's view.
        graph = page.locator(".jp-Notebook .jp-Cell").nth(2).locator(".jp-jaxviz-output")
        graph.locator("svg.jp-jaxviz-svg g.node").first.wait_for(timeout=60_000)
        assert svg_items(graph) == expected["collapsed"]
        assert len(expected["collapsed"]) >= 5
        # Laid out by Graphviz in a Web Worker (the extension's own chunk), not on the main thread.
        assert graph.get_attribute("data-jaxviz-layout") == "worker"
        assert any("jaxviz_layout_worker" in w.url and "/static/" in w.url for w in page.workers), \
            [w.url for w in page.workers]
        legend = graph.locator(".jp-jaxviz-legend").inner_text()
        assert "traced" in legend and "output" in legend and "×N identical layers" in legend
        # The three calls of `layer` (inside the call of `mlp`) are one "layer ×3" box (a
        # repeat group), opened on the way down, then its first layer.
        (fold, fold_name, members), = expected["folds"]
        at = expected["path"].index(fold)
        assert fold_name == "layer ×3" and expected["path"][at + 1] == members[0]
        graph.scroll_into_view_if_needed()
        shot(page, "2-graph-collapsed")

        # Hover a group: its tooltip; click it: it expands (down to a group of equations:
        # more nodes).
        path = expected["path"]
        tooltip = page.locator(".jp-jaxviz-tooltip:visible")  # on the page's body: never cut off
        for gid, want in zip(path, expected["views"]):
            group = graph.locator(f"svg g.node#g{gid}")
            group.hover()
            tooltip.wait_for(state="visible")
            assert "equations" in tooltip.inner_text() and "click to expand" in tooltip.inner_text()
            if gid == fold:
                text = group.text_content()  # an SVG element: no inner_text
                assert "layer ×3" in text and "3 × 2 eqns" in text, text
                assert "3 identical layer layers" in tooltip.inner_text()
            group.click()
            graph.locator(f"svg g.cluster#cluster_g{gid}").wait_for(timeout=30_000)
            assert svg_items(graph) == want
            if gid == fold:  # opened: one box per layer, in the fold's dashed cluster
                assert {f"g{m}" for m in members} <= set(want)
                shot(page, "2b-graph-fold-expanded")
        assert len(expected["views"][-1]) > len(expected["collapsed"])
        assert graph.get_attribute("data-jaxviz-layout") == "worker"  # re-layouts too
        # Hover an equation: primitive, avals, source line.
        tanh = graph.locator("svg g.node.jaxviz-eqn", has_text="tanh").first
        tanh.hover()
        tip = tooltip.inner_text()
        assert "tanh" in tip and "f32[2,4]" in tip and "source" in tip
        shot(page, "3-graph-expanded")
        # Hover an edge (its wide invisible stroke): shape, dtype.
        hit = graph.locator("svg g.edge path.jaxviz-hit").first
        box = hit.bounding_box()
        hit.dispatch_event("mousemove", {"clientX": box["x"] + box["width"] / 2,
                                         "clientY": box["y"] + box["height"] / 2, "bubbles": True})
        assert "dtype float32" in tooltip.inner_text()
        # Zoom buttons.
        scale = float(graph.get_attribute("data-jaxviz-scale"))
        graph.locator("button.jp-jaxviz-zoom-in").click()
        assert float(graph.get_attribute("data-jaxviz-scale")) == pytest.approx(scale * 1.25, rel=1e-2)
        graph.locator("button.jp-jaxviz-fit").click()
        svg_box = graph.locator("svg.jp-jaxviz-svg").bounding_box()
        canvas_box = graph.locator(".jp-jaxviz-canvas").bounding_box()
        assert svg_box["height"] <= canvas_box["height"] and svg_box["width"] <= canvas_box["width"]

        # Search: highlights the matching nodes.
        graph.locator(".jp-jaxviz-search").fill("dot_general")
        page.wait_for_function("el => /match/.test(el.textContent)",
                               arg=graph.locator(".jp-jaxviz-matches").element_handle())
        assert re.match(r"3 matches", graph.locator(".jp-jaxviz-matches").inner_text())
        assert graph.locator("svg g.node.jaxviz-match").count() >= 1
        # Collapse again from the outermost cluster's label.
        graph.locator(".jp-jaxviz-search").fill("")
        graph.locator(f"svg text.jaxviz-cluster-label[data-cluster='cluster_g{path[0]}']").click()
        graph.locator(f"svg g.node#g{path[0]}").wait_for(timeout=30_000)
        assert svg_items(graph) == expected["collapsed"]

        # Export DOT and SVG.
        with page.expect_download() as dl:
            graph.locator("button.jp-jaxviz-export-dot").click()
        dot = Path(dl.value.path()).read_text()
        assert dot.startswith("digraph") and f'"g{path[0]}"' in dot
        with page.expect_download() as dl:
            graph.locator("button.jp-jaxviz-export-svg").click()
        svg = Path(dl.value.path()).read_text()
        assert "<svg" in svg and f'id="g{path[0]}"' in svg and "jaxviz-hit" not in svg
        assert 'stroke="#555555"' in svg  # in the DOT's colours (the theme's are CSS rules)

        # The panel lists the traced function ...
        # (a cell's program, compiled by nothing of its own: in the line of cell graphs)
        fn = panel.locator(f".jp-jaxviz-cells .jp-jaxviz-cell-name[data-name='{expected['name']}']")
        fn.wait_for(timeout=30_000)
        # ... and, pushed by the recompilation tracker, the recompile with its cause ...
        run_cell(page, 4)
        entry = panel.locator(".jp-jaxviz-compile.jp-jaxviz-warning[data-function='step']").first
        entry.wait_for(timeout=30_000)
        entry_text = entry.inner_text()
        cause = entry.locator(".jp-jaxviz-cause").first.inner_text()
        assert re.search(r"shape\s+v:\s+\[3\]\s+→\s+\[4\]", cause), entry_text
        assert "recompile" in entry_text, entry_text
        # One line per cause; the message (and the fix) on demand.
        assert "changed shape" in entry.locator(".jp-jaxviz-message").text_content()
        assert not entry.locator(".jp-jaxviz-message").is_visible()
        entry.locator(".jp-jaxviz-compile-details > summary").click()
        assert entry.locator(".jp-jaxviz-message").is_visible()
        assert "`" not in entry.locator(".jp-jaxviz-compile-details").inner_text()  # code spans, not backticks
        # ... and the stale capture.
        run_cell(page, 5)
        stale = panel.locator(".jp-jaxviz-stale").first
        stale.wait_for(timeout=30_000)
        assert "scale" in stale.inner_text()
        # Its message's `code` spans are code, not raw backticks.
        message = stale.locator(".jp-jaxviz-message")
        assert message.locator("code").count() >= 1 and "`" not in message.inner_text(), message.inner_text()
        # No word of the panel's text is broken across lines ("P ass").
        split = panel.evaluate("""p => { const out = []; const walk = document.createTreeWalker(p, NodeFilter.SHOW_TEXT);
            for (let t = walk.nextNode(); t; t = walk.nextNode()) { const re = /\\S+/g; let m;
              while ((m = re.exec(t.data))) { const r = document.createRange(); r.setStart(t, m.index);
                r.setEnd(t, m.index + m[0].length); const rects = [...r.getClientRects()].filter(x => x.width > 0);
                if (rects.length > 1 && m[0].length < 30) out.push(m[0]); } } return out; }""")
        assert not split, split
        # A big graph travels gzipped and renders the same items as the kernel's view.
        run_cell(page, 7)
        run_cell(page, 8)
        text = page.locator(".jp-Notebook .jp-Cell").nth(8).locator(".jp-OutputArea-output").inner_text()
        big = json.loads(re.search(r"JAXVIZ-BIG (\{.*\})", text).group(1))
        assert big["encoding"] == "gzip+base64"
        big_graph = page.locator(".jp-Notebook .jp-Cell").nth(7).locator(".jp-jaxviz-output")
        big_graph.locator("svg.jp-jaxviz-svg g.node").first.wait_for(timeout=60_000)
        assert svg_items(big_graph) == big["items"]
        devices = panel.locator(".jp-jaxviz-device").first
        devices.wait_for(timeout=30_000)
        assert "cpu" in devices.inner_text()
        # Clicking the function shows its graph in the panel.
        shot(page, "4-panel-connected")
        fn.click()  # the graph opens in a main-area tab
        tab = page.locator(".jp-jaxviz-graph-tab")
        tab.locator("svg.jp-jaxviz-svg g.node").first.wait_for(timeout=30_000)
        shot(page, "4b-panel-graph-tab")
        page.locator(".lm-DockPanel .lm-TabBar-tab", has_text="jaxviz:").locator(".lm-TabBar-tabCloseIcon").click()
        page.locator(".lm-DockPanel .lm-TabBar-tab", has_text="jaxviz_test.ipynb").click()

        # The dark theme: the graph (opened down to equations: clusters, edges, labels)
        # and the panel stay readable, checked on the browser's computed colours.
        # Reopening the outermost group brings back what was open inside it when it closed.
        graph.locator(f"svg g.node#g{path[0]}").click()
        for gid in path:
            graph.locator(f"svg g.cluster#cluster_g{gid}").wait_for(timeout=30_000)
        handles = [graph.element_handle(), panel.element_handle()]
        check_theme_colors(page.evaluate(THEME_COLORS_JS, handles), dark=False)
        set_theme(page, "JupyterLab Dark")
        dark = page.evaluate(THEME_COLORS_JS, handles)
        check_theme_colors(dark, dark=True)
        # Search highlight and the edges' hover areas keep their look over the theming.
        graph.locator(".jp-jaxviz-search").fill("dot_general")
        graph.locator("svg g.node.jaxviz-match").first.wait_for(timeout=5_000)
        styles = graph.evaluate("""g => [
            getComputedStyle(g.querySelector('svg g.node.jaxviz-match.jaxviz-eqn > path')).stroke,
            getComputedStyle(g.querySelector('svg g.node.jaxviz-eqn:not(.jaxviz-match)')).opacity,
            getComputedStyle(g.querySelector('svg path.jaxviz-hit')).stroke]""")
        assert styles == ["rgb(232, 89, 12)", "0.35", "rgba(0, 0, 0, 0)"], styles
        graph.locator(".jp-jaxviz-search").fill("")
        graph.locator(".jp-jaxviz-search").blur()  # it keeps keys from JupyterLab's shortcuts
        graph.scroll_into_view_if_needed()
        shot(page, "7-dark-page")
        graph.screenshot(path=str(ARTIFACTS / "7-dark-graph.png"))
        panel.screenshot(path=str(ARTIFACTS / "7-dark-panel.png"))
        entry.scroll_into_view_if_needed()  # the recompile warnings, with their suggestions
        panel.screenshot(path=str(ARTIFACTS / "7-dark-panel-recompiles.png"))
        set_theme(page, "JupyterLab Light")
        check_theme_colors(page.evaluate(THEME_COLORS_JS, handles), dark=False)
        # Closed one level at a time, innermost first: nothing open inside is remembered,
        # so opening the outermost again later opens it alone.
        for gid in reversed(path):
            graph.locator(f"svg text.jaxviz-cluster-label[data-cluster='cluster_g{gid}']").click()
            graph.locator(f"svg g.node#g{gid}").wait_for(timeout=30_000)

        # Switching notebooks: the panel follows the current one's kernel, and back.
        page.locator(".jp-DirListing-item", has_text="other.ipynb").dblclick()
        page.locator("#jaxviz-panel[data-jaxviz-state='not-loaded']").wait_for(timeout=60_000)
        assert "other.ipynb" in panel.locator(".jp-jaxviz-where").inner_text()
        assert panel.locator(".jp-jaxviz-function").count() == 0
        page.locator(".lm-DockPanel .lm-TabBar-tab", has_text="jaxviz_test.ipynb").click()
        page.locator("#jaxviz-panel[data-jaxviz-state='connected']").wait_for(timeout=30_000)
        fn.wait_for(timeout=30_000)
        assert panel.locator(".jp-jaxviz-compile[data-function='step']").count() == 2

        # A flood of 5000 recompiles: the panel shows the newest 100, folds the rest.
        run_cell(page, 6)
        panel.locator(".jp-jaxviz-compile", has_text="flood 4999").wait_for(timeout=90_000)  # a loaded machine's
        assert panel.locator(".jp-jaxviz-compile").count() == 100
        folded = panel.locator(".jp-jaxviz-section-recompiles .jp-jaxviz-folded").inner_text()
        assert re.search(r"\d+ older compilations folded", folded), folded
        badge = panel.locator(".jp-jaxviz-section-recompiles .jp-jaxviz-count").inner_text()
        assert int(badge) == 5000 + 1, badge  # recompiles: first compiles are not counted
        # The page still responds: the function list is clickable.
        panel.locator(".jp-jaxviz-function[data-name='flood']").wait_for(timeout=5_000)
        shot(page, "6-panel-flood")

        # Kernel restart: the panel resets and says how to load jaxviz again.
        command(page, "Restart Kernel", re.compile(r"^Restart Kernel…"))
        page.locator(".jp-Dialog-button.jp-mod-accept").click()
        page.locator("#jaxviz-panel[data-jaxviz-state='not-loaded']").wait_for(timeout=60_000)
        assert panel.locator(".jp-jaxviz-function").count() == 0
        assert panel.locator(".jp-jaxviz-compile").count() == 0
        run_cell(page, 0)
        page.locator("#jaxviz-panel[data-jaxviz-state='connected']").wait_for(timeout=30_000)
        panel.locator(".jp-jaxviz-empty", has_text="No function traced yet").wait_for(timeout=10_000)
        # The notebook's outputs survived the restart, and still render.
        assert graph.locator("svg.jp-jaxviz-svg g.node").count() == len(expected["collapsed"])
        shot(page, "5-panel-after-restart")

        # The expansion state is saved with the notebook: opened down to the fold's first
        # layer and saved, the .ipynb keeps it in the output's metadata (the kernel's
        # payload unchanged); the reopened page shows the same groups, not run again.
        depth = at + 2
        for gid in path[:depth]:
            graph.locator(f"svg g.node#g{gid}").click()
            graph.locator(f"svg g.cluster#cluster_g{gid}").wait_for(timeout=30_000)
        assert svg_items(graph) == expected["views"][depth - 1]
        opened = graph.get_attribute("data-jaxviz-expanded")
        cell = page.locator(".jp-Notebook .jp-Cell").nth(2)
        prompt = cell.locator(".jp-InputPrompt").inner_text()
        assert re.search(r"\[\d+\]", prompt), prompt
        cell.locator(".jp-InputPrompt").click()
        page.keyboard.press("Control+s")
        saved = saved_notebook(lab.root / "jaxviz_test.ipynb",
                               lambda nb: any(MIME in o.get("metadata", {}) for o in nb["cells"][2]["outputs"]))
        out, = [o for o in saved["cells"][2]["outputs"] if MIME in o.get("data", {})]
        stored = out["metadata"][MIME]
        assert stored == {"expanded": [int(g) for g in opened.split(",")], "groups": expected["n_groups"]}, stored
        assert out["data"][MIME]["expanded"] == expected["kernel_expanded"] != stored["expanded"]
        # The kernel showed the payload before dot laid the view out, then updated that
        # display with dot's drawing (what the saved notebook shows without jaxviz): the
        # browser laid out the payload once, and kept the user's state through the update.
        assert "<svg" in "".join(out["data"]["image/svg+xml"])  # saved as its lines
        assert graph.get_attribute("data-jaxviz-payloads") == "1"
        big_out, = [o for o in saved["cells"][7]["outputs"] if MIME in o.get("data", {})]
        assert MIME not in big_out.get("metadata", {})  # never expanded: nothing stored
        page.goto(lab.page_url("jaxviz_test.ipynb"), timeout=90_000)
        graph = page.locator(".jp-Notebook .jp-Cell").nth(2).locator(".jp-jaxviz-output")
        graph.locator("svg.jp-jaxviz-svg g.node").first.wait_for(timeout=60_000)
        assert graph.get_attribute("data-jaxviz-expanded") == opened
        assert svg_items(graph) == expected["views"][depth - 1]
        assert page.locator(".jp-Notebook .jp-Cell").nth(2).locator(".jp-InputPrompt").inner_text() == prompt
        graph.scroll_into_view_if_needed()
        shot(page, "8-graph-reopened")
        # Showing the stored state changes nothing; collapsing a group is a change to save.
        tab = page.locator(".lm-DockPanel .lm-TabBar-tab", has_text="jaxviz_test.ipynb")
        assert "jp-mod-dirty" not in tab.get_attribute("class")
        last = path[depth - 1]
        graph.locator(f"svg text.jaxviz-cluster-label[data-cluster='cluster_g{last}']").click()
        graph.locator(f"svg g.node#g{last}").wait_for(timeout=30_000)
        page.wait_for_function("el => el.classList.contains('jp-mod-dirty')", arg=tab.element_handle(),
                               timeout=5_000)
        # Running the cell again makes a new output: the kernel's expansion again.
        run_cell(page, 1)
        run_cell(page, 2)
        graph.locator(f"svg g.node#g{path[0]}").wait_for(timeout=60_000)
        assert svg_items(graph) == expected["collapsed"]
        assert graph.get_attribute("data-jaxviz-expanded") == ",".join(map(str, expected["kernel_expanded"]))
    # jaxviz's errors, and a layout worker that fell back to the main thread
    ours = [m for m in console if "jaxviz" in m.lower() and (m.startswith(("error: ", "pageerror: "))
                                                         or m.startswith("warning: ") and "layout worker" in m)]
    assert not ours, ours


def test_layout_falls_back_to_the_main_thread(lab):
    """When the layout worker's script cannot load, the graph is laid out on the main thread."""
    blocked: list[str] = []

    def block(route):
        blocked.append(route.request.url)
        route.abort()

    def block_the_worker(page):
        page.route(re.compile(r".*/jaxviz_layout_worker\.[0-9a-f]+\.js.*"), block)

    console: list[str] = []
    with notebook_page(lab, "jaxviz_fallback.ipynb", CELLS[:3], viewport={"width": 1500, "height": 1000},
                       before_open=block_the_worker, panel_timeout=30_000, run=None, run_timeout=60_000,
                       artifacts=ARTIFACTS, failure_shot="failure-fallback", console=console) as page:
        graph = page.locator(".jp-Notebook .jp-Cell").nth(2).locator(".jp-jaxviz-output")
        graph.locator("svg.jp-jaxviz-svg g.node").first.wait_for(timeout=60_000)
        assert blocked, "the worker's script was requested"
        assert graph.get_attribute("data-jaxviz-layout") == "main"
        warnings = [m for m in console if m.startswith("warning: ")]
        assert any("layout worker unusable" in w for w in warnings), warnings
        assert "Graphviz failed" not in graph.inner_text()
