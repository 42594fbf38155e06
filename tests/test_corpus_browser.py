"""The first view of a real program of each framework family, as a JupyterLab user sees
it (Chromium at 1600×1000): Flax, Equinox, Haiku, numpyro, mctx, gymnax (PureJaxRL's PPO),
shard_map and pmap, programs of ``benchmarks/programs/``. Each asserts the rules of the
first view on the page: it is at most 3,000 pt each way as laid out, the program's
repeated layers show folded (``TransformerBlock ×4``; where a program states no fold, its
library call is named), in view, and its median text height is at least 9 px at the
initial zoom. One JupyterLab server, one notebook; its kernel sees 8 host devices.
Screenshots go to ``artifacts/corpus/``."""

from __future__ import annotations

import re
import statistics
import sys

import pytest
from browser_lab import (
    ROOT,
    TEXT_HEIGHTS_JS,
    browser_marks,
    notebook_page,
    run_cell,
    save_shot,
)

sys.path.insert(0, str(ROOT / "benchmarks"))

import programs  # noqa: E402

ARTIFACTS = ROOT / "artifacts" / "corpus"
VIEWPORT = {"width": 1600, "height": 1000}
MAX_VIEW_PT = 3000
MIN_TEXT_PX = 9

pytestmark = browser_marks(timeout=400)

# One program per framework family.
FAMILIES = {
    "flax": "nnx_minigpt",
    "equinox": "equinox_vit",
    "haiku": "haiku_transformer",
    "numpyro": "numpyro_nuts",
    "mctx": "mctx_gumbel_muzero",
    "gymnax": "ppo_gymnax",
    "shard_map": "shard_map_fsdp",
    "pmap": "pmap_resnet",
}
SETUP = [
    # before JAX is imported: the kernel sees 8 host devices (shard_map, pmap)
    "import os\nos.environ['XLA_FLAGS'] = '--xla_force_host_platform_device_count=8'\n"
    "os.environ['JAX_PLATFORMS'] = 'cpu'",
    f"import sys\nsys.path.insert(0, {str(ROOT / 'benchmarks')!r})\nimport jaxviz, programs",
]
FIRST_PROGRAM_CELL = len(SETUP)
CELLS = SETUP + [f"case = programs.load({name!r})\njaxviz.trace(case.fn, *case.args, **case.kwargs)"
                 for name in FAMILIES.values()]

# Every text drawn in the graph, with whether its centre lies in the canvas's visible box.
TEXTS_JS = """
graph => {
  const canvas = graph.querySelector('.jp-jaxviz-canvas').getBoundingClientRect();
  return [...graph.querySelectorAll('svg.jp-jaxviz-svg text')].map(t => {
    const r = t.getBoundingClientRect(), cx = r.left + r.width / 2, cy = r.top + r.height / 2;
    return [t.textContent, cx >= canvas.left && cx <= canvas.right && cy >= canvas.top && cy <= canvas.bottom];
  });
}
"""


@pytest.fixture(scope="module")
def page(lab):
    """One page on one notebook, its cells run once (a program that fails to trace
    leaves its cell's traceback, which its own test reports)."""
    with notebook_page(lab, "corpus.ipynb", CELLS, viewport=VIEWPORT, panel_timeout=120_000,
                       run=range(len(SETUP)), run_timeout=300_000) as pg:
        failed = {}
        for i in range(FIRST_PROGRAM_CELL, len(CELLS)):
            try:
                run_cell(pg, i, timeout=180_000)
            except AssertionError as exc:
                failed[i] = str(exc)
        pg.jaxviz_failed = failed  # type: ignore[attr-defined]
        yield pg


def shown_graph(page, family: str):
    """The graph output of the family's cell, scrolled to the top of the notebook's view
    and settled (no layout running, nothing gliding)."""
    cell = FIRST_PROGRAM_CELL + list(FAMILIES).index(family)
    assert cell not in page.jaxviz_failed, page.jaxviz_failed[cell][:2000]
    graph = page.locator(".jp-Notebook .jp-Cell").nth(cell).locator(".jp-jaxviz-output")
    graph.locator("svg.jp-jaxviz-svg g.node").first.wait_for(timeout=120_000)
    page.wait_for_function("g => !g.classList.contains('jp-jaxviz-busy') && !g.dataset.jaxvizMoving",
                           arg=graph.element_handle(), timeout=60_000)
    graph.evaluate("g => g.scrollIntoView({block: 'start'})")
    page.wait_for_timeout(300)
    return graph


def expected_labels(name: str) -> list[re.Pattern[str]]:
    """What the first view must show: the folds the program states (``Block ×6``), else
    the library calls it makes."""
    stated = programs.stated(name)
    if stated["folds"]:
        return [re.compile(rf"{re.escape(layer)}\b.*×\s*{n}\b", re.I) for layer, n in stated["folds"]]
    return [re.compile(re.escape(call)) for call in stated["calls"]]


# Rules of issue 20 these programs do not meet yet (strict: a fix makes the test fail
# until its line here goes).
NOT_YET: dict[str, str] = {}


@pytest.mark.parametrize("family", [pytest.param(f, marks=pytest.mark.xfail(reason=NOT_YET[f], strict=True))
                                    if f in NOT_YET else f for f in FAMILIES])
def test_first_view_of_a_real_program(page, family):
    name = FAMILIES[family]
    graph = shown_graph(page, family)
    save_shot(page, ARTIFACTS, f"{family}-{name}")
    svg = graph.locator("svg.jp-jaxviz-svg")
    width, height = float(svg.get_attribute("data-pt-width")), float(svg.get_attribute("data-pt-height"))
    heights = graph.evaluate(TEXT_HEIGHTS_JS)
    texts = graph.evaluate(TEXTS_JS)
    median = statistics.median(heights) if heights else 0.0
    print(f"{family} ({name}): {width:.0f} x {height:.0f} pt, median text {median:.1f} px over {len(heights)}")
    problems = []
    if max(width, height) > MAX_VIEW_PT:
        problems.append(f"first view {width:.0f} x {height:.0f} pt (at most {MAX_VIEW_PT} each way)")
    for pattern in expected_labels(name):
        if not any(pattern.search(text) and inside for text, inside in texts):
            drawn = [t for t, _ in texts if pattern.search(t)]
            where = f"drawn outside the canvas's view: {drawn[:2]}" if drawn else "not drawn"
            problems.append(f"{pattern.pattern!r} {where} (folds drawn: {sorted({t for t, _ in texts if '×' in t})[:6]})")
    if median < MIN_TEXT_PX:
        problems.append(f"median text height {median:.1f} px over {len(heights)} texts (at least {MIN_TEXT_PX})")
    assert not problems, f"{family} ({name}): " + "; ".join(problems)
