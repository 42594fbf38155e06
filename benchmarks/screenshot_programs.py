"""A JupyterLab screenshot of each corpus program's first view (``benchmarks/programs/``),
as a user sees it: a real JupyterLab with the extension, Debian's Chromium at 1600×1000,
one notebook whose kernel sees 8 host devices, each program's graph scrolled to the top
of the window. Saved as ``artifacts/corpus/<program>.png``, with one line per program
(the first view's size in pt, its median text height in px) in ``artifacts/corpus/views.txt``.

Run: ``PYTHONPATH=$PWD .venv/bin/python benchmarks/screenshot_programs.py [names...]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import programs  # noqa: E402
from browser_lab import (  # noqa: E402
    CHROMIUM_ARGS,
    TEXT_HEIGHTS_JS,
    chromium_path,
    command,
    run_cell,
    start_lab,
    write_notebook,
)

ARTIFACTS = ROOT / "artifacts" / "corpus"
SETUP = [
    "import os\nos.environ['XLA_FLAGS'] = '--xla_force_host_platform_device_count=8'\n"
    "os.environ['JAX_PLATFORMS'] = 'cpu'",
    f"import sys\nsys.path.insert(0, {str(ROOT / 'benchmarks')!r})\nimport jaxviz, programs",
]


def shoot(page, index: int, name: str) -> str:
    """Run the program's cell, wait for its graph, screenshot it; one line of facts."""
    cell = page.locator(".jp-Notebook .jp-Cell").nth(index)
    try:
        run_cell(page, index, timeout=240_000)
    except AssertionError as exc:
        cell.evaluate("c => c.scrollIntoView({block: 'start'})")
        page.screenshot(path=str(ARTIFACTS / f"{name}.png"))
        return f"{name}: failed: {str(exc).splitlines()[-1][:200]}"
    graph = cell.locator(".jp-jaxviz-output")
    graph.locator("svg.jp-jaxviz-svg g.node").first.wait_for(timeout=180_000)
    page.wait_for_function("g => !g.classList.contains('jp-jaxviz-busy') && !g.dataset.jaxvizMoving",
                           arg=graph.element_handle(), timeout=120_000)
    graph.evaluate("g => g.scrollIntoView({block: 'start'})")
    page.wait_for_timeout(300)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"))
    svg = graph.locator("svg.jp-jaxviz-svg")
    heights = graph.evaluate(TEXT_HEIGHTS_JS)
    median = statistics.median(heights) if heights else 0.0
    return (f"{name}: {float(svg.get_attribute('data-pt-width')):.0f} x "
            f"{float(svg.get_attribute('data-pt-height')):.0f} pt, median text {median:.1f} px "
            f"over {len(heights)} texts")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("names", nargs="*")
    names = parser.parse_args().names or list(programs.PROGRAMS)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    cells = SETUP + [f"case = programs.load({n!r})\njaxviz.trace(case.fn, *case.args, **case.kwargs)"
                     for n in names]
    lines = []
    with tempfile.TemporaryDirectory() as base:
        lab = start_lab(Path(base))
        try:
            write_notebook(lab.root / "corpus.ipynb", cells)
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS, headless=True)
                page = browser.new_context(viewport={"width": 1600, "height": 1000}).new_page()
                page.goto(lab.page_url("corpus.ipynb"), timeout=90_000)
                page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']").first.wait_for(timeout=90_000)
                command(page, "jaxviz: Show panel")  # it asks the kernel: ready once answered
                page.locator("#jaxviz-panel[data-jaxviz-state='not-loaded']").wait_for(timeout=120_000)
                for i in range(len(SETUP)):
                    run_cell(page, i, timeout=300_000)
                for i, name in enumerate(names, len(SETUP)):
                    lines.append(shoot(page, i, name))
                    print(lines[-1], flush=True)
                browser.close()
        finally:
            lab.stop()
    (ARTIFACTS / "views.txt").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
