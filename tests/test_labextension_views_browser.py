"""What a person sees of a graph in a real JupyterLab (Chromium at 1600×1000): the first
view of a train step is legible, exploring it is steady, a re-run does not make the page
jump, tooltips are whole and say something, and the panel opens a function's graph in a
tab big enough to read. Measured on the page (rendered text heights, page positions,
heights sampled every frame); screenshots go to ``artifacts/labextension-views/``.
"""

from __future__ import annotations

import re
import statistics
from xml.etree import ElementTree

import pytest
from browser_lab import (
    ROOT,
    TEXT_HEIGHTS_JS,
    browser_marks,
    command,
    notebook_page,
    save_shot,
    select_cell,
)

ARTIFACTS = ROOT / "artifacts" / "labextension-views"
VIEWPORT = {"width": 1600, "height": 1000}

pytestmark = browser_marks(timeout=300)

MLP = (
    "import sys\n"
    "import jax, jax.numpy as jnp\n"
    "def init(key, sizes):\n"
    "    keys = jax.random.split(key, len(sizes) - 1)\n"
    "    return [{'w': jax.random.normal(k, (m, n)) / jnp.sqrt(m), 'b': jnp.zeros(n)}\n"
    "            for k, m, n in zip(keys, sizes[:-1], sizes[1:])]\n"
    "def dense(p, x):\n"
    "    return x @ p['w'] + p['b']\n"
    "def mlp(params, x):\n"
    "    for p in params[:-1]:\n"
    "        x = jax.nn.relu(dense(p, x))\n"
    "    return dense(params[-1], x)\n"
    "def loss_fn(params, x, y):\n"
    "    return ((mlp(params, x) - y) ** 2).mean()\n"
    "@jax.jit\n"
    "def train_step(params, x, y):\n"
    "    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)\n"
    "    params = jax.tree_util.tree_map(lambda p, g: p - 0.01 * g, params, grads)\n"
    "    return params, loss\n"
    "params = init(jax.random.PRNGKey(0), [8, 32, 32, 32, 1])\n"
    "x, y = jnp.ones((16, 8)), jnp.ones((16, 1))"
)

CELLS = [
    "%load_ext jaxviz",
    MLP,
    "%%jaxpr\nnew_params, loss = train_step(params, x, y)",
    # A 12-block transformer train step (the scale benchmark's model).
    f"sys.path.insert(0, {str(ROOT / 'benchmarks')!r})\n"
    "import models\n"
    "tparams, toks = models.init_params(12), models.tokens()",
    "%%jaxpr\ntparams2, tloss = models.train_step(tparams, toks)",
    # 5: a long chain of equations: a tall, narrow column drawn top to bottom
    "%%jaxpr --expand all\nv = x[0]\nfor i in range(30):\n    v = jnp.sin(v) * 1.01\nt = v.sum()",
    # 6: a long chain of named steps, drawn left to right, each step a box to open
    "%%jaxpr --expand 1\nv = x[0]\nfor i in range(30):\n    with jax.named_scope(f'step{i}'):\n"
    "        v = jnp.cos(jnp.sin(v) * (i + 1.0)) + v\nt = v.sum()",
    # 7, 8: the MLP's jitted step called two wrappers deep (a jitted outer step, a plain
    # function in it): groups around groups around the phases
    "def update(params, x, y):\n    return train_step(params, x, y)\n"
    "@jax.jit\ndef outer_step(params, x, y):\n    params, loss = update(params, x, y)\n    return params, loss * 1.0",
    "%%jaxpr\nouter_params, outer_loss = outer_step(params, x, y)",
    # 9, 10: a Flax Linen CNN's train step on a TrainState (a jitted step calling a jitted
    # apply_model, then optax), from the corpus
    "from programs import linen_cnn\nstate, images, labels = linen_cnn.program().args",
    "%%jaxpr\nstate2, cnn_loss, cnn_accuracy = linen_cnn.train_step(state, images, labels)",
]

# Page rectangles of the drawn items (nodes, boxes, open groups), by id.
ITEM_RECTS_JS = """
graph => Object.fromEntries([...graph.querySelectorAll('svg.jp-jaxviz-svg :is(g.node, g.cluster)')]
  .filter(g => g.id).map(g => { const r = g.getBoundingClientRect();
    return [g.id, [r.left, r.top, r.width, r.height]]; }))
"""


# What each drawn element is, by id: its class, and for nodes and open groups their text
# (edge labels are left out: an opened edge keeps its outside part's label).
DRAWN_JS = """
graph => Object.fromEntries([...graph.querySelectorAll('svg.jp-jaxviz-svg :is(g.node, g.cluster, g.edge)')]
  .filter(g => g.id).map(g => [g.id, g.getAttribute('class') + ' | ' + (g.classList.contains('edge') ? ''
    : [...g.querySelectorAll('text')].map(t => t.textContent).join(' / '))]))
"""


@pytest.fixture(scope="module")
def page(lab):
    """One page on one notebook for the module, its cells run once."""
    with notebook_page(lab, "views.ipynb", CELLS, viewport=VIEWPORT, run=None, artifacts=ARTIFACTS) as pg:
        for i in (2, 4, 5, 6, 8, 10):
            graph_of(pg, i).locator("svg.jp-jaxviz-svg g.node").first.wait_for(timeout=90_000)
        yield pg


def graph_of(page, cell: int):
    return page.locator(".jp-Notebook .jp-Cell").nth(cell).locator(".jp-jaxviz-output")


def settled(graph) -> None:
    """Wait until no layout is running and nothing glides."""
    graph.page.wait_for_function(
        "g => !g.classList.contains('jp-jaxviz-busy') && !g.dataset.jaxvizMoving", arg=graph.element_handle(),
        timeout=60_000)


def scroll_to_graph(page, graph) -> None:
    """Scroll the notebook so that the graph's title is at the top, as a user reading it."""
    graph.evaluate("g => g.scrollIntoView({block: 'start'})")
    page.wait_for_timeout(200)


@pytest.mark.parametrize("cell,name", [(2, "mlp-train-step"), (4, "transformer-12-blocks")])
def test_first_view_is_legible(page, cell, name):
    graph = graph_of(page, cell)
    settled(graph)
    scroll_to_graph(page, graph)
    save_shot(page, ARTIFACTS, f"first-view-{name}")
    heights = graph.evaluate(TEXT_HEIGHTS_JS)
    canvas = graph.locator(".jp-jaxviz-canvas").bounding_box()
    assert len(heights) >= 10, f"{len(heights)} texts visible"
    median = statistics.median(heights)
    print(f"{name}: median text height {median:.1f} px over {len(heights)} texts; canvas {canvas}")
    assert median >= 9, f"median text height {median:.1f} px over {len(heights)} texts"
    canvas = graph.locator(".jp-jaxviz-canvas").bounding_box()
    # The canvas uses the width of the output and, for a big graph, more than 600 px.
    output = page.locator(".jp-Notebook .jp-Cell").nth(cell).locator(".jp-OutputArea-output").bounding_box()
    drawing = graph.locator("svg.jp-jaxviz-svg").bounding_box()
    assert canvas["width"] > 0.95 * output["width"], (canvas, output)
    if drawing["height"] > canvas["height"]:  # it pans: the canvas is as tall as allowed
        assert canvas["height"] > 600, (canvas, drawing)
    else:  # it all shows
        assert drawing["height"] <= canvas["height"] <= drawing["height"] + 20, (canvas, drawing)
    # The top-level structure (the phases when the kernel makes them, else the top-level
    # groups) is in view across, and the first of it without scrolling or panning: a first
    # view may take about two screens at a legible zoom, the rest lies below.
    tops = graph.evaluate("""g => {
      const svg = g.querySelector('svg.jp-jaxviz-svg');
      let items = [...svg.querySelectorAll(':is(g.node, g.cluster).jaxviz-group-phase')];
      if (!items.length) items = [...svg.querySelectorAll(':is(g.node, g.cluster)')].filter(e =>
          /^(cluster_)?g\\d+$/.test(e.id) && !/jaxviz-group-(inputs|outputs)/.test(e.className.baseVal));
      return items.slice(0, 12).map(e => {
        const label = e.classList.contains('cluster')
          ? svg.querySelector(`.jaxviz-cluster-label[data-cluster='${e.id}']`) : e.querySelector('text');
        const r = (label || e).getBoundingClientRect();
        return [e.id, r.left, r.top, r.right, r.bottom];
      });
    }""")
    assert tops, "no group drawn"
    for item, left, _top, right, _bottom in tops:
        assert canvas["x"] - 1 <= left and right <= canvas["x"] + canvas["width"] + 1, (item, canvas)
    item, left, top, right, bottom = tops[0]
    assert canvas["y"] - 1 <= top and bottom <= min(canvas["y"] + canvas["height"], VIEWPORT["height"]) + 1, \
        (item, canvas)
    # Fit still shows all of it.
    graph.locator("button.jp-jaxviz-fit").click()
    svg = graph.locator("svg.jp-jaxviz-svg").bounding_box()
    canvas = graph.locator(".jp-jaxviz-canvas").bounding_box()
    assert svg["width"] <= canvas["width"] + 1 and svg["height"] <= canvas["height"] + 1
    save_shot(page, ARTIFACTS, f"fit-{name}")


def test_a_tall_column_is_drawn_across_the_width(page):
    """(Run before the theme switches: a palette click can land on a graph's Fit button.)"""
    graph = graph_of(page, 5)
    settled(graph)
    scroll_to_graph(page, graph)
    save_shot(page, ARTIFACTS, "chain-sideways")
    assert graph.get_attribute("data-jaxviz-rankdir") == "LR"
    canvas = graph.locator(".jp-jaxviz-canvas").bounding_box()
    svg = graph.locator("svg.jp-jaxviz-svg").bounding_box()
    assert svg["width"] > 0.9 * canvas["width"], (svg, canvas)  # the width is used
    assert statistics.median(graph.evaluate(TEXT_HEIGHTS_JS)) >= 9


CANVAS_JS = "g => { const r = g.querySelector('.jp-jaxviz-canvas').getBoundingClientRect(); return [r.left, r.top]; }"
# The inputs (nodes, and closed groups of them) that the canvas's left or right edge cuts:
# their ids and page extents across.
INPUTS_CUT_JS = """g => { const c = g.querySelector('.jp-jaxviz-canvas').getBoundingClientRect();
  return [...g.querySelectorAll('svg.jp-jaxviz-svg g.node:is(.jaxviz-input, .jaxviz-group-inputs)')]
    .map(e => [e.id, e.getBoundingClientRect()])
    .filter(([, r]) => (r.left < c.left - 1 && c.left + 1 < r.right) || (r.left < c.right - 1 && c.right + 1 < r.right))
    .map(([id, r]) => [id, Math.round(r.left), Math.round(r.right), Math.round(c.left), Math.round(c.right)]); }"""


def assert_drawn_as(graph, before: dict, canvas_before: list) -> None:
    """Once settled, the view shows the items of ``before`` (rectangles by id, as
    ``ITEM_RECTS_JS`` gives them), each within 2 px of where it was in the canvas (whose
    top left corner was at ``canvas_before``: the notebook may scroll meanwhile)."""
    settled(graph)
    back = steady_rects(graph)
    cx, cy = graph.evaluate(CANVAS_JS)
    dx, dy = cx - canvas_before[0], cy - canvas_before[1]
    assert set(back) == set(before)
    moves = {k: abs(back[k][0] - dx - before[k][0]) + abs(back[k][1] - dy - before[k][1]) for k in before}
    worst = max(moves.values())
    assert worst < 2, (f"an item is {worst:.1f} px away from where it was in the canvas (the canvas moved by "
                       f"{dx:.1f}, {dy:.1f} px): " + ", ".join(f"{k} {d:.1f}" for k, d in moves.items() if d >= 2))


def steady_rects(graph, tries: int = 20) -> dict:
    """The items' rectangles (``ITEM_RECTS_JS``) once two reads a frame apart agree."""
    rects = graph.evaluate(ITEM_RECTS_JS)
    for _ in range(tries):
        graph.page.wait_for_timeout(100)
        again = graph.evaluate(ITEM_RECTS_JS)
        if again == rects:
            break
        rects = again
    return rects


def visible_boxes(graph) -> list[list]:
    """Collapsed group boxes wholly inside the canvas: [id, centre x, centre y, eqns]."""
    return graph.evaluate("""g => {
      const c = g.querySelector('.jp-jaxviz-canvas').getBoundingClientRect();
      return [...g.querySelectorAll('svg.jp-jaxviz-svg g.node.jaxviz-group')]
        .filter(e => !/jaxviz-group-(inputs|outputs)/.test(e.className.baseVal))
        .map(e => [e.id, e.getBoundingClientRect(), e.textContent])
        .filter(([, r]) => r.left >= c.left && r.right <= c.right && r.top >= c.top && r.bottom <= c.bottom)
        .map(([id, r, t]) => [id, r.left + r.width / 2, r.top + r.height / 2, +((/(\\d+) eqns/.exec(t) || [0, 0])[1])]);
    }""")


def kept_moves(before: dict, after: dict, opened: list[list[float]], grown: list[float] | None = None) -> dict:
    """How the items drawn before and after opening the boxes ``opened`` ([left, top,
    width, height] before, page px; ``grown``: the one opened group's rectangle after)
    moved: ``moves`` {id: (dx, dy)} of where each item is
    (a node's centre, an open group's top left corner), ``misplaced`` the items outside
    the opened boxes' bands that did not stay or did not move by the growth, and
    ``swapped`` the pairs of items whose left-to-right or top-to-bottom order changed."""
    def at(rect, cluster):
        x, y, w, h = rect
        return (x, y) if cluster else (x + w / 2, y + h / 2)

    keys = [k for k in before if k in after]
    moves, misplaced = {}, []
    for k in keys:
        cluster = k.startswith("cluster_")
        (bx, by), (ax, ay) = at(before[k], cluster), at(after[k], cluster)
        moves[k] = (ax - bx, ay - by)
    if grown:
        # One box opened: beyond its right (bottom) edge everything moves by the growth in
        # width (height), before its left (top) edge nothing moves, and what lies across
        # its span moves by one or the other.
        (ol, ot, ow, oh), (_, _, cw, ch) = opened[0], grown
        grow = (max(0.0, cw - ow), max(0.0, ch - oh))
        for k in keys:
            x, y, w, h = before[k]
            contains = k.startswith("cluster_") and x <= ol and y <= ot and x + w >= ol + ow and y + h >= ot + oh
            for axis, (lo, size, start, extent) in enumerate([(ol, ow, x, w), (ot, oh, y, h)]):
                d = moves[k][axis]
                if contains:  # an open group around it: grows by the growth, its corner stays
                    d_far = after[k][axis] + after[k][axis + 2] - (start + extent)
                    if abs(d) >= 3 or abs(d_far - grow[axis]) > 3:
                        misplaced.append((k, "xy"[axis], round(d), round(d_far)))
                elif start + extent <= lo + 0.5 and abs(d) >= 3:
                    misplaced.append((k, "xy"[axis], round(d)))
                elif start >= lo + size - 0.5 and abs(d - grow[axis]) > 3:
                    misplaced.append((k, "xy"[axis], round(d), round(grow[axis])))
                elif abs(d) >= 3 and abs(d - grow[axis]) > 3:  # in the band: stays or makes room
                    misplaced.append((k, "xy"[axis], round(d), round(grow[axis])))
    else:
        # Several opened: what lies wholly above (left of) all of them stays.
        top = min(o[1] for o in opened)
        left = min(o[0] for o in opened)
        for k in keys:
            x, y, w, h = before[k]
            if y + h <= top + 0.5 and abs(moves[k][1]) >= 3:
                misplaced.append((k, "y", round(moves[k][1])))
            if x + w <= left + 0.5 and abs(moves[k][0]) >= 3:
                misplaced.append((k, "x", round(moves[k][0])))
    swapped = []
    points = {k: (at(before[k], k.startswith("cluster_")), at(after[k], k.startswith("cluster_"))) for k in keys}
    items = sorted(points)
    for i, a in enumerate(items):
        for b in items[i + 1:]:
            for axis in (0, 1):
                was = points[a][0][axis] - points[b][0][axis]
                now = points[a][1][axis] - points[b][1][axis]
                if abs(was) > 2 and was * now <= 0:
                    swapped.append((a, b, "xy"[axis]))
    return {"moves": moves, "misplaced": misplaced, "swapped": swapped}


@pytest.mark.parametrize("cell,name", [(2, "mlp-train-step"), (4, "transformer-12-blocks"), (6, "steps-sideways"),
                                       (8, "step-two-wrappers-deep"), (10, "linen-cnn-step")])
def test_expand_is_steady(page, cell, name):
    """Opening a group opens it in place: every other item keeps its place (what lies
    beyond the group moves by its growth, nothing changes order or side), the group is
    under the pointer, the zoom stays, items glide rather than jump; closing it brings
    the old view back."""
    graph = graph_of(page, cell)
    settled(graph)
    # The cell explored is the active one before anything is measured (a click in a cell
    # that is not makes JupyterLab activate it, and it may scroll the page to show it).
    select_cell(page, page.locator(".jp-Notebook .jp-Cell").nth(cell))
    scroll_to_graph(page, graph)
    assert graph.get_attribute("data-jaxviz-rankdir") == ("LR" if name == "steps-sideways" else "TB")
    boxes = sorted(visible_boxes(graph), key=lambda b: -b[3])
    assert boxes, "no group box in view"
    gid, x, y, _ = boxes[0]
    scale = graph.get_attribute("data-jaxviz-scale")
    before = graph.evaluate(ITEM_RECTS_JS)
    canvas_before = graph.evaluate(CANVAS_JS)
    save_shot(page, ARTIFACTS, f"expand-before-{name}")
    # The first view cuts no input in half at the canvas's edges (``storyWindow``).
    cut = graph.evaluate(INPUTS_CUT_JS)
    assert not cut, f"inputs cut by the canvas's edge at {canvas_before}: {cut}"
    page.mouse.move(x, y)
    # Record every frame from the click on: which view is shown and where its items are.
    graph.evaluate("""g => { g.__frames = []; const t0 = performance.now();
      const tick = () => { const svg = g.querySelector('svg.jp-jaxviz-svg');
        const rects = {}; if (svg) for (const e of svg.querySelectorAll(':is(g.node, g.cluster)'))
          { const r = e.getBoundingClientRect(); rects[e.id] = [r.left, r.top]; }
        g.__frames.push({expanded: g.dataset.jaxvizExpanded, items: svg ? svg.querySelectorAll('g.node').length : 0,
                         rects});
        if (performance.now() - t0 < 2500) requestAnimationFrame(tick); };
      tick(); }""")  # the first frame now, before the click (a prefetched opening can beat the next frame)
    page.mouse.click(x, y)
    graph.locator(f"svg g.cluster#cluster_{gid}").wait_for(timeout=60_000)
    settled(graph)
    page.wait_for_function("g => g.__frames.length && performance.now() > 0", arg=graph.element_handle())
    page.wait_for_timeout(2600)  # the frame recorder's span
    save_shot(page, ARTIFACTS, f"expand-after-{name}")
    after = graph.evaluate(ITEM_RECTS_JS)
    opened_status = graph.locator(".jp-jaxviz-status").inner_text()
    assert graph.get_attribute("data-jaxviz-arranged") in ("splice", "restore")
    assert graph.get_attribute("data-jaxviz-scale") == scale, "the zoom stays"
    # The opened group is under the pointer, its label where the box's top was.
    left, top, width, height = after[f"cluster_{gid}"]
    assert left <= x <= left + width and top <= y <= top + height, (x, y, after[f"cluster_{gid}"])
    bl, bt = before[gid][0], before[gid][1]
    assert abs(left - bl) < 3 and abs(top - bt) < 3, (before[gid], after[f"cluster_{gid}"])
    # Every other item kept its place.
    kept = kept_moves(before, after, [before[gid]], after[f"cluster_{gid}"])
    moves = kept["moves"]
    assert len(moves) >= 5, moves
    distance = {k: abs(dx) + abs(dy) for k, (dx, dy) in moves.items()}
    print(f"{name}: opened {gid} ({before[gid][2]:.0f}×{before[gid][3]:.0f} → {width:.0f}×{height:.0f} px): "
          f"{len(moves)} items kept, median move {statistics.median(distance.values()):.0f} px, "
          f"{sum(d < 3 for d in distance.values())} within 3 px; grown by {width - before[gid][2]:.0f}"
          f"×{height - before[gid][3]:.0f} px")
    assert not kept["misplaced"], kept["misplaced"][:10]
    assert not kept["swapped"], kept["swapped"][:10]
    # It glided there: in the first frame that shows the new drawing, the items drawn
    # before are where they were (no jump), and no frame was blank.
    frames = graph.evaluate("g => g.__frames")
    assert frames and all(f["items"] > 0 for f in frames), "a frame without the drawing"
    switched = [f for f in frames if f["expanded"] != frames[0]["expanded"]]
    assert switched, frames[:3]
    first = switched[0]["rects"]
    jumps = {k: (round(first[k][0] - before[k][0]), round(first[k][1] - before[k][1]))
             for k in first if k in before and k != gid}
    assert jumps and max(abs(dx) + abs(dy) for dx, dy in jumps.values()) <= 4, jumps
    # Closing it from its label brings the earlier view back exactly, the box in place.
    lx, ly = graph.evaluate(f"""g => {{ const r = g.querySelector(
        "svg text.jaxviz-cluster-label[data-cluster='cluster_{gid}']").getBoundingClientRect();
        return [r.left + 4, r.top + r.height / 2]; }}""")
    page.mouse.click(lx, ly)
    graph.locator(f"svg g.node#{gid}").wait_for(timeout=30_000)
    assert_drawn_as(graph, before, canvas_before)
    # The drawing opened in place has the ids and classes Graphviz gives the whole view
    # (what tooltips, clicks, search and the theme go by): opened again, then tidied.
    page.mouse.click(x, y)
    graph.locator(f"svg g.cluster#cluster_{gid}").wait_for(timeout=30_000)
    settled(graph)
    spliced = graph.evaluate(DRAWN_JS)
    # It is what tooltips and export read: an item inside says what it is, the SVG
    # exported is a whole document with the opened group in it.
    # (one whose centre is in the canvas's view: a wide group may run past its edge)
    inner = graph.evaluate(f"""g => {{ const c = g.querySelector('svg g.cluster#cluster_{gid}').getBoundingClientRect();
        const v = g.querySelector('.jp-jaxviz-canvas').getBoundingClientRect();
        const n = [...g.querySelectorAll('svg g.node')].map(e => [e.id, e.getBoundingClientRect()])
          .find(([, r]) => r.left >= c.left && r.right <= c.right && r.top >= c.top && r.bottom <= c.bottom
            && r.left + r.width / 2 > v.left && r.left + r.width / 2 < v.right
            && r.top + r.height / 2 > v.top && r.top + r.height / 2 < v.bottom);
        return [n[0], n[1].left + n[1].width / 2, n[1].top + n[1].height / 2]; }}""")
    page.mouse.move(inner[1], inner[2])
    tooltip = page.locator(".jp-jaxviz-tooltip:visible")
    tooltip.wait_for(timeout=10_000)
    assert tooltip.inner_text().strip(), inner
    with page.expect_download() as dl:
        graph.locator("button.jp-jaxviz-export-svg").click()
    exported = ElementTree.parse(dl.value.path()).getroot()
    ids = {e.get("id") for e in exported.iter()}
    assert {f"cluster_{gid}", inner[0]} <= ids and not any("jaxviz-hit" in (e.get("class") or "") for e in exported.iter())
    graph.locator("button.jp-jaxviz-tidy").click()
    page.wait_for_function("g => g.dataset.jaxvizArranged === 'layout'", arg=graph.element_handle(), timeout=30_000)
    settled(graph)
    tidied = graph.evaluate(DRAWN_JS)
    took = re.findall(r"(opened in place|layout) (\d+) ms", opened_status + graph.locator(".jp-jaxviz-status").inner_text())
    print(f"{name}: {' · '.join(f'{how} {ms} ms' for how, ms in took)}")
    assert spliced == tidied, {k: (spliced.get(k), tidied.get(k)) for k in set(spliced) ^ set(tidied)}
    # Closed after the tidy: in the tidied drawing, in place (not the drawing from before
    # the tidy, which would move everything back).
    lx, ly = graph.evaluate(f"""g => {{ const r = g.querySelector(
        "svg text.jaxviz-cluster-label[data-cluster='cluster_{gid}']").getBoundingClientRect();
        return [r.left + 4, r.top + r.height / 2]; }}""")
    tidy_rects = graph.evaluate(ITEM_RECTS_JS)
    page.mouse.click(lx, ly)
    graph.locator(f"svg g.node#{gid}").wait_for(timeout=30_000)
    settled(graph)
    assert graph.get_attribute("data-jaxviz-arranged") == "close"
    closed = graph.evaluate(ITEM_RECTS_JS)
    box = tidy_rects[f"cluster_{gid}"]
    outside = [k for k in closed if k in tidy_rects and k != gid and not (
        tidy_rects[k][0] >= box[0] - 0.5 and tidy_rects[k][1] >= box[1] - 0.5
        and tidy_rects[k][0] + tidy_rects[k][2] <= box[0] + box[2] + 0.5
        and tidy_rects[k][1] + tidy_rects[k][3] <= box[1] + box[3] + 0.5)]
    drift = {k: (round(closed[k][0] - tidy_rects[k][0]), round(closed[k][1] - tidy_rects[k][1])) for k in outside}
    assert outside and all(abs(dx) + abs(dy) < 3 for dx, dy in drift.values()), drift
    page.mouse.move(4, 4)  # off the graph: its tooltip goes (the next tests hover another graph)


def test_closing_a_group_open_from_the_start_keeps_the_rest_in_place(page):
    """A group the first view opened has no drawing from before it opened: closing it puts
    its box at the group's top left corner (under the label clicked) and moves nothing
    else; opening it again brings the drawing back exactly."""
    graph = graph_of(page, 4)
    settled(graph)
    scroll_to_graph(page, graph)
    # The biggest open group inside another one, with its label in view.
    cid, lx, ly = graph.evaluate("""g => {
      const c = g.querySelector('.jp-jaxviz-canvas').getBoundingClientRect();
      const rect = id => g.querySelector('svg g.cluster#' + id).getBoundingClientRect();
      const holds = (a, b) => a.left <= b.left && a.top <= b.top && a.right >= b.right && a.bottom >= b.bottom;
      const ids = [...g.querySelectorAll('svg g.cluster')].map(e => e.id);
      const found = [...g.querySelectorAll('svg text.jaxviz-cluster-label[data-cluster]')]
        .map(t => [t.dataset.cluster, t.getBoundingClientRect()])
        .filter(([id, r]) => r.left >= c.left && r.right <= c.right && r.top >= c.top && r.bottom <= c.bottom
          && ids.some(o => o !== id && holds(rect(o), rect(id))))
        .sort((a, b) => rect(b[0]).width * rect(b[0]).height - rect(a[0]).width * rect(a[0]).height)[0];
      return [found[0], found[1].left + 4, found[1].top + found[1].height / 2]; }""")
    gid = cid.removeprefix("cluster_")
    before = graph.evaluate(ITEM_RECTS_JS)
    canvas_before = graph.evaluate(CANVAS_JS)
    held = before[cid]
    save_shot(page, ARTIFACTS, "close-before-transformer-12-blocks")
    page.mouse.click(lx, ly)
    page.wait_for_function("g => g.dataset.jaxvizArranged === 'close'", arg=graph.element_handle(), timeout=30_000)
    graph.locator(f"svg g.node#{gid}").wait_for(timeout=30_000)
    settled(graph)
    save_shot(page, ARTIFACTS, "close-after-transformer-12-blocks")
    after = graph.evaluate(ITEM_RECTS_JS)

    def inside(r):
        return r[0] >= held[0] - 0.5 and r[1] >= held[1] - 0.5 and r[0] + r[2] <= held[0] + held[2] + 0.5 \
            and r[1] + r[3] <= held[1] + held[3] + 0.5

    kept = [k for k in before if k in after and k != cid and not inside(before[k])]
    assert len(kept) >= 5, kept
    moved = {k: (round(after[k][0] - before[k][0]), round(after[k][1] - before[k][1])) for k in kept
             if abs(after[k][0] - before[k][0]) + abs(after[k][1] - before[k][1]) >= 3}
    assert not moved, moved
    assert abs(after[gid][0] - held[0]) < 3 and abs(after[gid][1] - held[1]) < 3, (after[gid], held)
    assert not [k for k in after if k != gid and k not in before]  # nothing drawn anew but the box
    print(f"closed {cid} ({held[2]:.0f}×{held[3]:.0f} px) in place: {len(kept)} items kept, none moved")
    # Opened again: the drawing from before, exactly.
    box = after[gid]
    page.mouse.click(box[0] + box[2] / 2, box[1] + box[3] / 2)
    graph.locator(f"svg g.cluster#{cid}").wait_for(timeout=30_000)
    assert_drawn_as(graph, before, canvas_before)
    page.mouse.move(4, 4)


def test_tooltips_are_whole_and_quiet(page):
    """A tooltip near the bottom of the screen flips above the pointer instead of being
    cut off, and says nothing empty (`sharding: None`, "0 FLOP")."""
    graph = graph_of(page, 2)
    settled(graph)
    # The graph's bottom at the bottom of the window: the lowest items sit near it.
    graph.evaluate("g => g.querySelector('.jp-jaxviz-canvas').scrollIntoView({block: 'end'})")
    page.wait_for_timeout(200)
    eqns = graph.evaluate("""g => {
      const c = g.querySelector('.jp-jaxviz-canvas').getBoundingClientRect();
      return [...g.querySelectorAll('svg.jp-jaxviz-svg g.node')].map(e => e.getBoundingClientRect())
        .filter(r => r.top >= c.top && r.bottom <= Math.min(c.bottom, innerHeight) && r.left >= c.left && r.right <= c.right)
        .map(r => [r.left + r.width / 2, r.top + r.height / 2]).sort((a, b) => b[1] - a[1]);
    }""")
    assert eqns, "no equation in view"
    # Each graph keeps its own tooltip element (hidden when not hovered): the one shown.
    tooltip = page.locator(".jp-jaxviz-tooltip:visible")
    texts = []
    for x, y in eqns[:8]:
        page.mouse.move(x, y)
        tooltip.wait_for(state="visible")
        box = tooltip.bounding_box()
        assert box["y"] >= 0 and box["y"] + box["height"] <= VIEWPORT["height"], (box, y)
        assert box["x"] >= 0 and box["x"] + box["width"] <= VIEWPORT["width"], box
        texts.append(tooltip.inner_text())
    # The lowest item at the bottom of the notebook's scroll area.
    graph.evaluate("""g => { const c = g.querySelector('.jp-jaxviz-canvas').getBoundingClientRect();
      const items = [...g.querySelectorAll('svg.jp-jaxviz-svg g.node')].filter(e => {
        const r = e.getBoundingClientRect(); return r.bottom <= c.bottom && r.left >= c.left && r.right <= c.right; });
      items.sort((a, b) => b.getBoundingClientRect().bottom - a.getBoundingClientRect().bottom);
      items[0].id && items[0].scrollIntoView({block: 'end'}); g.dataset.lowest = items[0].id; }""")
    page.wait_for_timeout(200)
    lowest = graph.locator(f"svg g.node#{graph.get_attribute('data-lowest')}").bounding_box()
    x, y = lowest["x"] + lowest["width"] / 2, lowest["y"] + lowest["height"] / 2
    page.mouse.move(5, 5)
    page.mouse.move(x, y)
    tooltip.wait_for(state="visible")
    box = tooltip.bounding_box()
    # Below the pointer it would have been cut off: it went above.
    assert y + 14 + box["height"] > VIEWPORT["height"] and box["y"] + box["height"] <= y, (y, box)
    save_shot(page, ARTIFACTS, "tooltip-bottom")
    for text in texts:
        assert "None" not in text and not re.search(r"(^|\s)0 FLOP", text), text
    page.mouse.move(5, 5)


def test_rerun_keeps_the_height_and_the_title_follows_the_prompt(page):
    cell = page.locator(".jp-Notebook .jp-Cell").nth(2)
    graph = graph_of(page, 2)
    settled(graph)
    scroll_to_graph(page, graph)
    wrapper = cell.locator(".jp-Cell-outputWrapper")
    h0 = wrapper.bounding_box()["height"]
    old = int(re.search(r"\[(\d+)\]", cell.locator(".jp-InputPrompt").inner_text()).group(1))
    graph.evaluate("g => g.dataset.old = '1'")
    # The wrapper's height in every frame while the cell runs again.
    wrapper.evaluate("""w => { window.__heights = []; window.__sampling = true;
      const tick = () => { window.__heights.push(w.getBoundingClientRect().height);
        if (window.__sampling) requestAnimationFrame(tick); }; requestAnimationFrame(tick); }""")
    select_cell(page, cell)
    page.keyboard.press("Shift+Enter")
    new = cell.locator(".jp-jaxviz-output:not([data-old])[data-jaxviz-items]")
    new.wait_for(timeout=120_000)
    page.wait_for_function("([el, n]) => { const m = /\\[(\\d+)\\]/.exec(el.textContent); return m && +m[1] > n; }",
                           arg=[cell.locator(".jp-InputPrompt").element_handle(), old], timeout=60_000)
    page.wait_for_timeout(700)
    heights = page.evaluate("() => { window.__sampling = false; return window.__heights; }")
    assert len(heights) > 10
    low = min(heights)
    print(f"output height {h0:.0f} px before; during the re-run {low:.0f}–{max(heights):.0f} px "
          f"over {len(heights)} frames; after {heights[-1]:.0f} px")
    assert low >= h0 - 5, f"the output shrank to {low:.0f} px (from {h0:.0f}) during the re-run"
    assert abs(heights[-1] - h0) < 0.1 * h0
    count = int(re.search(r"\[(\d+)\]", cell.locator(".jp-InputPrompt").inner_text()).group(1))
    title = graph_of(page, 2).locator(".jp-jaxviz-title").inner_text()
    assert title == f"In[{count}]", (title, count)


def test_panel_opens_a_graph_in_a_tab(page):
    """The panel's graph opens in a main-area tab, as big as the notebook, legible."""
    panel = page.locator("#jaxviz-panel")
    cells = panel.locator(".jp-jaxviz-cells")
    cells.wait_for(timeout=30_000)
    assert "0 compiles" not in panel.locator(".jp-jaxviz-section-functions").inner_text()
    panel.locator(".jp-jaxviz-cell-name.jp-jaxviz-clickable").first.click()
    tab = page.locator(".jp-jaxviz-graph-tab")
    tab.locator("svg.jp-jaxviz-svg g.node").first.wait_for(timeout=60_000)
    settled(tab.locator(".jp-jaxviz-graph"))
    save_shot(page, ARTIFACTS, "panel-graph-tab")
    canvas = tab.locator(".jp-jaxviz-canvas").bounding_box()
    assert canvas["width"] > 700 and canvas["height"] > 600, canvas
    heights = tab.locator(".jp-jaxviz-graph").evaluate(TEXT_HEIGHTS_JS)
    assert len(heights) >= 5 and statistics.median(heights) >= 9, heights
    assert page.locator(".lm-DockPanel .lm-TabBar-tab", has_text="jaxviz: In[").count() == 1
    # Back to the notebook for the next tests.
    page.locator(".lm-DockPanel .lm-TabBar-tab", has_text="views.ipynb").click()


def test_dark_theme_boxes_do_not_glare(page):
    graph = graph_of(page, 2)
    settled(graph)
    probe = """g => {
      const lum = c => { const m = c.match(/[\\d.]+/g).map(Number);
        const v = c.startsWith('color(') ? m.slice(0, 3).map(x => x * 255) : m.slice(0, 3);
        const l = v.map(x => { x /= 255; return x <= 0.04045 ? x / 12.92 : ((x + 0.055) / 1.055) ** 2.4; });
        return 0.2126 * l[0] + 0.7152 * l[1] + 0.0722 * l[2]; };
      const boxes = [...g.querySelectorAll('svg g.node.jaxviz-group > polygon:not([fill="none"])')]
        .map(p => lum(getComputedStyle(p).fill));
      const texts = [...g.querySelectorAll('svg g.node.jaxviz-group text')].map(t => lum(getComputedStyle(t).fill));
      const swatches = [...g.querySelectorAll('.jp-jaxviz-legend-group .jp-jaxviz-swatch')]
        .map(s => lum(getComputedStyle(s).backgroundColor));
      return {boxes, texts, swatches};
    }"""
    light = graph.evaluate(probe)
    assert light["boxes"] and light["swatches"]
    command(page, "Use Theme: JupyterLab Dark")
    page.wait_for_function("() => document.body.dataset.jpThemeName === 'JupyterLab Dark'", timeout=30_000)
    page.locator("#jupyterlab-splash").wait_for(state="detached", timeout=30_000)
    try:
        dark = graph.evaluate(probe)
        scroll_to_graph(page, graph)
        save_shot(page, ARTIFACTS, "dark-boxes")
    finally:
        command(page, "Use Theme: JupyterLab Light")
        page.wait_for_function("() => document.body.dataset.jpThemeName === 'JupyterLab Light'", timeout=30_000)
    # Tinted boxes and swatches (the light theme's cream and orange glare on a dark page),
    # light text on them.
    assert max(dark["boxes"]) < 0.2 and max(dark["swatches"]) < 0.2, dark
    assert min(dark["texts"]) > 0.5, dark
    # The legend's swatches are tinted as the boxes are (darker than in the light theme).
    assert all(d < lt for d, lt in zip(dark["swatches"], light["swatches"], strict=True)), (light, dark)
    assert all(d < lt for d, lt in zip(dark["boxes"], light["boxes"], strict=True)), (light, dark)


def test_search_enter_keeps_the_zoom_and_the_opened_group_in_place(page):
    graph = graph_of(page, 2)
    settled(graph)
    scroll_to_graph(page, graph)
    scale = graph.get_attribute("data-jaxviz-scale")
    search = graph.locator(".jp-jaxviz-search")
    search.fill("dot_general")
    page.wait_for_function("el => /collapsed groups/.test(el.textContent)",
                           arg=graph.locator(".jp-jaxviz-matches").element_handle(), timeout=10_000)
    # The topmost box holding a match is the one kept in place.
    opened = graph.evaluate("""g => [...g.querySelectorAll('svg g.node.jaxviz-group.jaxviz-match')]
        .map(m => { const r = m.getBoundingClientRect(); return [m.id, r.left, r.top, r.width, r.height]; })
        .sort((a, b) => a[2] - b[2] || a[1] - b[1])""")
    first_box = opened[0]
    before = graph.evaluate(ITEM_RECTS_JS)
    save_shot(page, ARTIFACTS, "search-enter-before")
    search.press("Enter")
    graph.locator(f"svg g.cluster#cluster_{first_box[0]}").wait_for(timeout=30_000)
    settled(graph)
    save_shot(page, ARTIFACTS, "search-enter")
    assert graph.get_attribute("data-jaxviz-scale") == scale, "the zoom stays"
    # The groups open in place, one by one: nothing else changes side or order (the
    # backward pass stays where it was), what lies above and left of them stays.
    assert graph.get_attribute("data-jaxviz-arranged") == "splice"
    kept = kept_moves(before, graph.evaluate(ITEM_RECTS_JS), [box[1:] for box in opened])
    print(f"search-enter opened {len(opened)} boxes; {len(kept['moves'])} items kept")
    assert len(kept["moves"]) >= 5
    assert not kept["misplaced"], kept["misplaced"][:10]
    assert not kept["swapped"], kept["swapped"][:10]
    # Each opened group is where its box was, or right or below where the groups opened
    # with it made room; the topmost at its box's height.
    for gid, bl, bt, _, _ in opened:
        left, top = graph.evaluate(f"""g => {{ const r = g.querySelector('svg g.cluster#cluster_{gid}')
            .getBoundingClientRect(); return [r.left, r.top]; }}""")
        assert left >= bl - 3 and top >= bt - 3, (gid, bl, bt, left, top)
        if gid == first_box[0]:
            assert abs(top - bt) < 3, (first_box, left, top)
    assert graph.locator("svg g.node.jaxviz-eqn.jaxviz-match").count() >= 1
    search.fill("")
    search.press("Escape")
    # Panned far into the opened drawing, then "Collapse all": the small drawing that is
    # left is in view, not off to a side of an empty-looking canvas.
    canvas = graph.locator(".jp-jaxviz-canvas").bounding_box()
    cx, cy = canvas["x"] + canvas["width"] / 2, canvas["y"] + canvas["height"] / 2
    page.mouse.move(cx, cy)
    page.mouse.down()
    page.mouse.move(cx - 400, cy - 300, steps=8)
    page.mouse.up()
    graph.locator("button", has_text="Collapse all").click()
    page.wait_for_function("g => g.dataset.jaxvizExpanded === '0'", arg=graph.element_handle(), timeout=30_000)
    settled(graph)
    svg = graph.locator("svg.jp-jaxviz-svg").bounding_box()
    canvas = graph.locator(".jp-jaxviz-canvas").bounding_box()
    overlap_w = min(svg["x"] + svg["width"], canvas["x"] + canvas["width"]) - max(svg["x"], canvas["x"])
    overlap_h = min(svg["y"] + svg["height"], canvas["y"] + canvas["height"]) - max(svg["y"], canvas["y"])
    assert overlap_w >= 0.9 * min(svg["width"], canvas["width"]) and overlap_h >= 0.9 * min(svg["height"], canvas["height"]), \
        (svg, canvas)

