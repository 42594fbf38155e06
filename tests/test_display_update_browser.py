"""A ``%jaxpr`` display in JupyterLab, shown before ``dot`` lays it out and then updated
with dot's drawing (``render.notebook.program_mimebundles``), where dot's fit chose another
first view than the kernel's estimate: Haiku's LSTM (``benchmarks/programs/``), narrowed to
fit. The browser lays out the update's payload and ends on the fitted view, the one the
kernel's program now opens (a renderer that kept the first view would show its first try).
Screenshot: ``artifacts/display/``."""

from __future__ import annotations

import json
import re
import sys

from browser_lab import ROOT, browser_marks, notebook_page, run_cell, save_shot

sys.path.insert(0, str(ROOT / "benchmarks"))

ARTIFACTS = ROOT / "artifacts" / "display"
REFITTED = "haiku_lstm"  # dot's fit narrows its first view (tests/test_first_view.py)

pytestmark = browser_marks(timeout=300)

CELLS = [
    f"import sys\nsys.path.insert(0, {str(ROOT / 'benchmarks')!r})\nimport json, programs\n%load_ext jaxviz",
    f"case = programs.load({REFITTED!r})",
    "%jaxpr -o prog case.fn(*case.args, **case.kwargs)",
    "print('JAXVIZ-FITTED ' + json.dumps(sorted(prog.graph.expansion(prog.expand))))",
]


def test_a_refitted_first_view_ends_on_the_fitted_view(lab):
    with notebook_page(lab, "display_update.ipynb", CELLS, viewport={"width": 1400, "height": 1000},
                       run=(0, 1), artifacts=ARTIFACTS) as page:
        run_cell(page, 2, timeout=120_000)
        cell = run_cell(page, 3)
        fitted = json.loads(re.search(r"JAXVIZ-FITTED (\[.*\])", cell.locator(".jp-OutputArea-output")
                                      .inner_text()).group(1))
        graph = page.locator(".jp-Notebook .jp-Cell").nth(2).locator(".jp-jaxviz-output")
        # the update's payload differs from the first one's (its expansion): laid out again
        page.wait_for_function("g => g.dataset.jaxvizPayloads === '2'", arg=graph.element_handle(),
                               timeout=60_000)
        page.wait_for_function(
            "([g, want]) => g.getAttribute('data-jaxviz-expanded') === want && !g.classList.contains('jp-jaxviz-busy')",
            arg=[graph.element_handle(), ",".join(map(str, fitted))], timeout=60_000)
        graph.locator("svg.jp-jaxviz-svg g.node").first.wait_for(timeout=60_000)
        graph.scroll_into_view_if_needed()
        save_shot(page, ARTIFACTS, "refitted")
