"""Open groups that only wrap one another (``forward › loss_fn › GPT``) in the browser, as
the kernel draws them: one cluster, the outermost's, titled by their path, legible at
the first view's zoom. Real programs of ``benchmarks/programs/`` (nanoGPT's train step,
numpyro's NUTS, a Haiku transformer), run once by nbclient; their outputs shown by the
JupyterLab extension (the notebook opened in JupyterLab) and by the standalone viewer
(the notebook exported by nbconvert, opened from ``file://``). The reference is the
kernel's own drawing, the static SVG each output carries. Screenshots go to
``artifacts/chains/``."""

from __future__ import annotations

import html
import re
import statistics
from pathlib import Path

import background
import nbformat
import pytest
from browser_lab import (
    ROOT,
    TEXT_HEIGHTS_JS,
    browser_marks,
    save_shot,
)
from execute_notebook import execute_notebook

ARTIFACTS = ROOT / "artifacts" / "chains"
VIEWPORT = {"width": 1600, "height": 1000}
MIN_TEXT_PX = 9
PROGRAMS = ["nanogpt", "numpyro_nuts", "haiku_transformer"]
SETUP = f"import sys\nsys.path.insert(0, {str(ROOT / 'benchmarks')!r})\nimport jaxviz, programs"
CELLS = [SETUP] + [f"case = programs.load({name!r})\njaxviz.trace(case.fn, *case.args, **case.kwargs)"
                   for name in PROGRAMS]
MIME = "application/vnd.jaxviz+json"

pytestmark = browser_marks(timeout=400)

# Each open group's title as drawn ([id, text, height px]), the ▾ marker left off.
CLUSTERS_JS = """
graph => [...graph.querySelectorAll('svg.jp-jaxviz-svg text.jaxviz-cluster-label')].map(t =>
  [t.dataset.cluster, t.textContent.replace(/^▾ /, ''), t.getBoundingClientRect().height])
"""


def execute() -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(src) for src in CELLS]
    return execute_notebook(nb, timeout=300)


EXECUTED = background.job(__file__, execute)  # run by nbclient beside the tests before this module's


@pytest.fixture(scope="module")
def executed() -> nbformat.NotebookNode:
    return EXECUTED.result()


def kernel_clusters(nb: nbformat.NotebookNode, program: str) -> dict[str, str]:
    """The clusters of the kernel's own drawing of a program's output: id → title."""
    (out,) = [o for o in nb.cells[1 + PROGRAMS.index(program)].outputs if MIME in o.get("data", {})]
    svg = out.data["image/svg+xml"]
    found = re.findall(r'<g id="(cluster_g\d+)" class="cluster">.*?<text[^>]*>(.*?)</text>', svg, flags=re.S)
    return {cid: html.unescape(text) for cid, text in found}


def check_chains(graph, want: dict[str, str], where: str) -> list[str]:
    """What differs from the kernel's clusters, and chain titles drawn under MIN_TEXT_PX."""
    drawn = {cid: (text, height) for cid, text, height in graph.evaluate(CLUSTERS_JS)}
    problems = []
    if {cid: text for cid, (text, _) in drawn.items()} != want:
        problems.append(f"{where}: clusters {sorted(drawn.items())} where the kernel draws {sorted(want.items())}")
    small = [(text, round(h, 1)) for text, h in drawn.values() if " › " in text and h < MIN_TEXT_PX]
    if small:
        problems.append(f"{where}: chain titles under {MIN_TEXT_PX} px: {small}")
    heights = graph.evaluate(TEXT_HEIGHTS_JS)
    median = statistics.median(heights) if heights else 0.0
    print(f"{where}: {len(drawn)} clusters, median text {median:.1f} px over {len(heights)}")
    if median < MIN_TEXT_PX:
        problems.append(f"{where}: median text height {median:.1f} px (at least {MIN_TEXT_PX})")
    return problems


def test_every_program_has_a_chain(executed):
    """The programs exercise the rule: each first view has a chain of open groups."""
    for program in PROGRAMS:
        assert any(" › " in title for title in kernel_clusters(executed, program).values()), program
    assert "forward › loss_fn › GPT" in " ".join(kernel_clusters(executed, "nanogpt").values())


def settled(page, graph) -> None:
    graph.locator("svg.jp-jaxviz-svg g.node").first.wait_for(timeout=120_000)
    page.wait_for_function("g => !g.classList.contains('jp-jaxviz-busy') && !g.dataset.jaxvizMoving",
                           arg=graph.element_handle(), timeout=60_000)
    graph.evaluate("g => g.scrollIntoView({block: 'start'})")
    page.wait_for_timeout(300)


def test_jupyterlab_draws_chains_as_the_kernel(lab, executed, browser):
    nbformat.write(executed, lab.root / "chains.ipynb")
    page = browser.new_context(viewport=VIEWPORT).new_page()
    problems = []
    try:
        page.goto(lab.page_url("chains.ipynb"), timeout=90_000)
        for i, program in enumerate(PROGRAMS):
            graph = page.locator(".jp-Notebook .jp-Cell").nth(1 + i).locator(".jp-jaxviz-output")
            settled(page, graph)
            save_shot(page, ARTIFACTS, f"lab-{program}")
            problems += check_chains(graph, kernel_clusters(executed, program), f"JupyterLab {program}")
    finally:
        page.context.close()
    assert not problems, "\n".join(problems)


def test_exported_html_draws_chains_as_the_kernel(executed, browser, tmp_path: Path):
    from nbconvert import HTMLExporter

    body, _ = HTMLExporter(template_name="lab").from_notebook_node(executed)
    path = tmp_path / "chains.html"
    path.write_text(body, encoding="utf-8")
    page = browser.new_context(viewport=VIEWPORT).new_page()
    problems = []
    try:
        page.goto(path.as_uri())
        page.wait_for_function("n => document.querySelectorAll('.jaxviz-out[data-jaxviz-upgraded=done]').length >= n",
                               arg=len(PROGRAMS), timeout=300_000)  # a loaded machine
        for i, program in enumerate(PROGRAMS):
            graph = page.locator(".jaxviz-out").nth(i).locator(".jp-jaxviz-output")
            settled(page, graph)
            save_shot(page, ARTIFACTS, f"export-{program}")
            problems += check_chains(graph, kernel_clusters(executed, program), f"exported HTML {program}")
    finally:
        page.context.close()
    assert not problems, "\n".join(problems)
