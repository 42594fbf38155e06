"""The recompilation tracker as a user sees it in a real JupyterLab (Debian's Chromium,
Playwright): the one-line notice under a cell that recompiled, no notice under a cell
that did not compile, ``%jaxviz recompiles`` rendered as a table (not "cannot show this
output"), and an explained tracer error followed by a short traceback of the user's
frames only. Screenshots go to ``artifacts/recompiles/``."""

from __future__ import annotations

from pathlib import Path

import pytest
from browser_lab import ROOT, browser_marks, command, notebook_page, run_cell

ARTIFACTS = ROOT / "artifacts" / "recompiles"

pytestmark = browser_marks(timeout=240)

CELLS = [
    "%load_ext jaxviz",
    # 1: a loop that recompiles six times
    "import jax, jax.numpy as jnp\n"
    "@jax.jit\n"
    "def train_step(x):\n"
    "    return (x ** 2).mean()\n"
    "for n in (32, 48, 64, 80, 96, 112):\n"
    "    loss = train_step(jnp.ones((n, 20)))",
    # 2: cache hits only
    "for n in (32, 48):\n"
    "    loss = train_step(jnp.ones((n, 20)))\n"
    "print('hits only')",
    # 3: the log of one function
    "%jaxviz recompiles train_step",
    # 4: a tracer error, explained
    "@jax.jit\n"
    "def flip(x, neg):\n"
    "    if neg:\n"
    "        return -x\n"
    "    return x\n"
    "flip(jnp.ones(3), True)",
]


@pytest.fixture(scope="module")
def page(lab):
    with notebook_page(lab, "recompiles.ipynb", CELLS, show_panel=False) as pg:
        yield pg


def shot(page, name: str, element=None) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    (element or page).screenshot(path=str(path))
    return path


def run(page, index: int, timeout: float = 90_000):
    """Run cell ``index`` (again if the kernel was not ready to take it), tracebacks
    allowed; wait for an idle kernel; return the cell."""
    try:
        cell = run_cell(page, index, timeout, tries=6, traceback_ok=True)
    except Exception:
        shot(page, f"failed_cell_{index}")
        raise
    page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']").first.wait_for(timeout=timeout)
    return cell


def test_notice_compile_log_and_short_traceback_in_jupyterlab(page):
    run(page, 0)
    loop = run(page, 1)
    notice = loop.locator(".jaxviz-notice")
    notice.wait_for(timeout=30_000)
    assert notice.count() == 1
    assert notice.inner_text() == ("jaxviz: train_step compiled 6 times in this cell: x changed "
                                   "size on axis 0 (32, 48, 64, …) → %jaxviz recompiles train_step")
    assert notice.locator("code").all_inner_texts() == ["train_step", "x",
                                                        "%jaxviz recompiles train_step"]
    assert notice.bounding_box()["height"] < 40  # one line
    shot(page, "notice", loop)

    hits = run(page, 2)
    assert "hits only" in hits.locator(".jp-OutputArea").inner_text()
    assert hits.locator(".jaxviz-notice").count() == 0  # nothing compiled: nothing added

    log = run(page, 3)
    table = log.locator(".jaxviz-compiles table.jv-rc").first
    table.wait_for(timeout=30_000)
    text = log.locator(".jp-OutputArea").inner_text()
    assert "cannot show this output" not in text and "unknown payload schema" not in text
    assert "`" not in text  # code spans are rendered, not raw Markdown
    assert table.locator("tr").count() == 7  # header + 6 compiles
    assert "first compile" in table.locator("tr").nth(1).inner_text()
    assert "x changed shape (96, 20) → (112, 20) on axis 0" in table.locator("tr").nth(6).inner_text()
    assert table.locator("code", has_text="x").count() >= 5
    shot(page, "compile_log", log)

    error = run(page, 4)
    explanation = error.locator(".jp-OutputArea-output").first
    explanation.wait_for(timeout=30_000)
    out = error.locator(".jp-OutputArea").inner_text()
    assert "`neg` is traced" in out or "neg is traced" in out
    folded = error.locator("details.jaxviz-traceback")
    assert folded.count() == 1 and not folded.get_attribute("open")
    short = error.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
    assert short.count() == 1
    short_text = short.inner_text()
    assert "site-packages" not in short_text and "jax/_src" not in short_text
    assert "flip(jnp.ones(3), True)" in short_text and "if neg:" in short_text
    assert short.bounding_box()["height"] < 200, short.bounding_box()
    shot(page, "tracer_error", error)
    folded.locator("summary").click()  # the full traceback: one click away
    assert "jax/_src" in folded.inner_text()
    shot(page, "tracer_error_unfolded", error)


def test_panel_diff_of_a_recompile_opens_in_a_tab(page):
    """Each recompile in the panel has a "diff" button: the kernel draws what it changed in
    the program (jaxviz.diff, with its colours) and the panel opens it in a tab."""
    command(page, "jaxviz: Show panel")
    buttons = page.locator(".jp-jaxviz-panel .jp-jaxviz-compile .jp-jaxviz-diff")
    buttons.first.wait_for(timeout=30_000)
    entries = page.locator(".jp-jaxviz-panel .jp-jaxviz-compile")
    recompiles = entries.filter(has_text="recompile #")
    assert recompiles.count() == 5 and buttons.count() == 5  # first compiles have nothing before them
    entries.filter(has_text="recompile #5").locator(".jp-jaxviz-diff").click()
    tab = page.locator(".jp-jaxviz-diff-tab")
    tab.locator(".jp-jaxviz-diff-drawing svg").wait_for(timeout=60_000)
    summary = tab.locator(".jp-jaxviz-diff-summary").inner_text()
    assert summary.startswith("train_step #5 → train_step #6"), summary
    assert "shape change (96 → 112)" in summary, summary
    drawing = tab.locator(".jp-jaxviz-diff-drawing svg")
    assert drawing.locator("g.node").count() > 3
    assert drawing.bounding_box()["width"] > 200
    shot(page, "panel_diff_tab")
