"""Browser benchmark: big views in a real JupyterLab (Debian's Chromium, headless, via
Playwright), from real programs: the transformer train step of ``models.py`` traced with
every group open (``%%jaxpr --expand all --no-run``) at L = 10, 39 and 78 blocks: about
2.5k, 10k and 20k visible items. Prints, for each:
  - the layout time (the layered layout in the worker, as the view reports it) and the
    time from asking to paint for a fresh layout (Tidy layout: the same view again), with
    the CPU time the page's renderer (main thread and worker) used meanwhile: a figure a
    loaded machine hardly changes;
  - the frame time while panning (mouse drags, frames counted by requestAnimationFrame)
    and while zooming (ctrl+wheel), the canvas's own draw time per frame, and the frame
    time while panning with every frame drawn afresh (the kept layer off): what the
    layer buys;
and the time from click to paint of opening a group in place, in the first views of a
2-block and a 48-block train step (Graphviz, spliced in place; the boxes opened named)
and in the 10k view (the layered layout again, on the click or ahead of it while the
user looks), by how the view came to be: to the frame that shows the new state, and to
the frame after it (by then the canvas has drawn the layer it keeps for panning).
Figures, not assertions: one run, best of several where a step repeats; each line ends
with the machine's load average (1 min).

Usage: .venv/bin/python benchmarks/bench_browser.py [--blocks 10 39 78]
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from browser_lab import (  # noqa: E402  # pyright: ignore[reportMissingImports]
    CHROMIUM_ARGS,
    chromium_path,
    command,
    run_cell,
    start_lab,
    write_notebook,
)
from playwright.sync_api import sync_playwright  # noqa: E402

FIRST_VIEW_BLOCKS = (2, 48)  # train steps whose first view's boxes are opened in place

# Milliseconds from a click (on the element at a page point, or on a button) until the view
# shows a new state, painted: the state changes (its open groups, layout time or how it was
# arranged) and the view is not busy, seen at a frame (the frame that draws it), and that
# frame is out (a task after it); then until the frame after that is out (what the page does just after the first paint, such as drawing the
# canvas's kept layer for panning, done by then). Both, [first, next]; [-1, -1] when the
# click changed nothing. Measured in the page.
CLICK_TO_PAINT_JS = """([g, where]) => new Promise(resolve => {
  const state = () => g.dataset.jaxvizExpanded + '|' + g.dataset.jaxvizLayoutMs + '|' + g.dataset.jaxvizArranged
    + '|' + g.querySelector('.jp-jaxviz-status').textContent;
  const before = state();
  const target = typeof where === 'string' ? g.querySelector(where) : document.elementFromPoint(where[0], where[1]);
  const t0 = performance.now();
  setTimeout(() => resolve([-1, -1]), 30000);  // nothing changed: the click hit nothing
  if (typeof where === 'string') target.click();
  else target.dispatchEvent(new MouseEvent('click', {clientX: where[0], clientY: where[1], bubbles: true, button: 0}));
  const check = () => {
    if (state() !== before && !g.classList.contains('jp-jaxviz-busy'))
      setTimeout(() => { const first = performance.now() - t0;
        requestAnimationFrame(() => setTimeout(() => resolve([first, performance.now() - t0]), 0)); }, 0);
    else requestAnimationFrame(check);
  };
  requestAnimationFrame(check);  // in frames only: the view draws in the frame that shows the change
})"""

# Frames while the page pans the view: drag events at 60 per second for `ms`.
PAN_JS = """([g, ms]) => new Promise(resolve => {
  const canvas = g.querySelector('.jp-jaxviz-canvas');
  const scene = g.querySelector('canvas.jp-jaxviz-scene');
  const r = canvas.getBoundingClientRect();
  const x0 = r.left + r.width / 2, y0 = r.top + r.height / 2;
  const ev = (type, x, y, buttons) => canvas.dispatchEvent(new PointerEvent(type,
      {clientX: x, clientY: y, buttons, button: 0, bubbles: true, pointerId: 1}));
  const drawn0 = scene ? Number(scene.dataset.frames || 0) : 0;
  const stamps = [];
  ev('pointerdown', x0, y0, 1);
  const t0 = performance.now();
  const step = now => {
    stamps.push(now);
    const t = (now - t0) / ms;
    ev('pointermove', x0 + 300 * Math.sin(6.28 * t), y0 + 200 * Math.sin(3.14 * t), 1);
    if (now - t0 < ms) requestAnimationFrame(step);
    else { ev('pointerup', x0, y0, 0);
      const gaps = stamps.slice(1).map((s, i) => s - stamps[i]).sort((a, b) => a - b);
      resolve({frames: stamps.length, median: gaps[gaps.length >> 1], p90: gaps[Math.floor(gaps.length * 0.9)],
               drawn: scene ? Number(scene.dataset.frames) - drawn0 : 0}); }
  };
  requestAnimationFrame(step);
})"""


# Frames while the page zooms the view: a ctrl+wheel step at every frame for `ms`, in and
# out by turns (ten steps each way).
ZOOM_JS = """([g, ms]) => new Promise(resolve => {
  const canvas = g.querySelector('.jp-jaxviz-canvas');
  const r = canvas.getBoundingClientRect();
  const x = r.left + r.width / 2, y = r.top + r.height / 2;
  const stamps = [];
  const t0 = performance.now();
  let k = 0;
  const step = now => {
    stamps.push(now);
    const deltaY = Math.floor(k++ / 10) % 2 ? 100 : -100;
    canvas.dispatchEvent(new WheelEvent('wheel', {clientX: x, clientY: y, deltaY, ctrlKey: true, bubbles: true,
                                                  cancelable: true}));
    if (now - t0 < ms) requestAnimationFrame(step);
    else { const gaps = stamps.slice(1).map((s, i) => s - stamps[i]).sort((a, b) => a - b);
      resolve({median: gaps[gaps.length >> 1], p90: gaps[Math.floor(gaps.length * 0.9)]}); }
  };
  requestAnimationFrame(step);
})"""

USE_LAYER_JS = "(g, on) => { const s = g.querySelector('canvas.jp-jaxviz-scene'); if (s) s.jaxvizUseLayer(on); }"


def load() -> str:
    """The machine's load average over the last minute, to quote with a time."""
    return f"[load {os.getloadavg()[0]:.1f}]"


def graph(page, cell: int):
    return page.locator(".jp-Notebook .jp-Cell").nth(cell).locator(".jp-jaxviz-output")


def settle(g) -> None:
    g.page.wait_for_function("g => g.dataset.jaxvizItems && !g.classList.contains('jp-jaxviz-busy')",
                             arg=g.element_handle(), timeout=300_000)
    g.page.wait_for_timeout(300)


def fresh_layout_ms(g) -> tuple[float, float]:
    """Ask for the same view afresh (Tidy layout): ms from the click to the paint, and the
    renderer's CPU ms meanwhile (to the frame after it)."""
    cpu0 = renderer_cpu_ms(g.page)
    took, _ = g.page.evaluate(CLICK_TO_PAINT_JS, [g.element_handle(), "button.jp-jaxviz-tidy"])
    return took, renderer_cpu_ms(g.page) - cpu0


def click_to_paints_ms(g, x: float, y: float) -> tuple[float, float]:
    """ms from a click at (x, y) to the first paint of the new state, and to the frame after
    it (-1: the click changed nothing)."""
    first, after = g.page.evaluate(CLICK_TO_PAINT_JS, [g.element_handle(), [x, y]])
    return first, after


def click_to_paint_ms(g, x: float, y: float) -> float:
    """ms from a click at (x, y) to the first paint of the new state."""
    return click_to_paints_ms(g, x, y)[0]


def renderer_cpu_ms(page) -> float:
    """CPU time the page's renderer process (its main thread and the layout worker) has
    used, ms (Chrome's own count): a measure that a loaded machine hardly changes."""
    session = getattr(page, "_jaxviz_cdp", None)
    if session is None:
        session = page.context.new_cdp_session(page)
        session.send("Performance.enable")
        page._jaxviz_cdp = session
    metrics = {m["name"]: m["value"] for m in session.send("Performance.getMetrics")["metrics"]}
    return 1000 * metrics["ProcessTime"]


def bench_size(page, cell: int, blocks: int) -> None:
    """Layout time (first and fresh ones), frame time while panning, draw time per frame."""
    g = graph(page, cell)
    settle(g)
    g.scroll_into_view_if_needed()
    items = int(g.evaluate("g => g.dataset.jaxvizItems"))
    renderer = g.evaluate("g => g.dataset.jaxvizRenderer")
    layouts = [float(g.evaluate("g => g.dataset.jaxvizLayoutMs"))]
    paints, cpus = [], []
    for _ in range(3):
        took, cpu = fresh_layout_ms(g)
        paints.append(took)
        cpus.append(cpu)
        layouts.append(float(g.evaluate("g => g.dataset.jaxvizLayoutMs")))
    pans = [page.evaluate(PAN_JS, [g.element_handle(), 2500]) for _ in range(2)]
    pan = min(pans, key=lambda p: p["median"])
    draw = g.evaluate("""g => { const s = g.querySelector('canvas.jp-jaxviz-scene');
      return s ? s.jaxvizDrawMs() : -1; }""")
    scale = float(g.evaluate("g => g.dataset.jaxvizScale"))
    zoom = min((page.evaluate(ZOOM_JS, [g.element_handle(), 2500]) for _ in range(2)), key=lambda p: p["median"])
    restore_zoom(g, scale)
    g.evaluate(USE_LAYER_JS, False)
    bare = min((page.evaluate(PAN_JS, [g.element_handle(), 2500]) for _ in range(2)), key=lambda p: p["median"])
    g.evaluate(USE_LAYER_JS, True)
    print(f"L = {blocks:3d}: {items:6,d} items ({renderer}): layout {min(layouts):7.0f} ms in the worker "
          f"(ask to paint {min(paints):7.0f} ms, renderer CPU {min(cpus):5.0f} ms) · panning: frame {pan['median']:5.1f} ms median, "
          f"{pan['p90']:5.1f} ms p90 ({1000 / pan['median']:3.0f} fps), canvas draw {draw:5.1f} ms/frame · "
          f"zooming: frame {zoom['median']:5.1f} ms median, {zoom['p90']:5.1f} ms p90 ({1000 / zoom['median']:3.0f} fps)"
          f" · panning, each frame drawn afresh: {bare['median']:5.1f} ms median, {bare['p90']:5.1f} ms p90 {load()}")


# Zoom steps of ctrl+wheel at the canvas's centre (as ZOOM_JS steps), `n` in (< 0: out).
ZOOM_STEPS_JS = """([g, n]) => { const canvas = g.querySelector('.jp-jaxviz-canvas');
  const r = canvas.getBoundingClientRect();
  for (let k = 0; k < Math.abs(n); k++)
    canvas.dispatchEvent(new WheelEvent('wheel', {clientX: r.left + r.width / 2, clientY: r.top + r.height / 2,
      deltaY: n > 0 ? -100 : 100, ctrlKey: true, bubbles: true, cancelable: true})); }"""


def restore_zoom(g, scale: float) -> None:
    """Zoom back to `scale` about the point ZOOM_JS zooms about: the view as before it (what
    the openings measured next find in view)."""
    now = float(g.evaluate("g => g.dataset.jaxvizScale"))
    g.page.evaluate(ZOOM_STEPS_JS, [g.element_handle(), round(math.log(scale / now) / math.log(1.15))])
    g.page.wait_for_timeout(300)


def boxes_in_view(g) -> list[tuple[str, float, float]]:
    """Collapsed group boxes in view (not inputs/outputs): id and centre, SVG or canvas
    (the canvas's own hit-test index says what is in view)."""
    return g.evaluate("""g => {
      const c = g.querySelector('.jp-jaxviz-canvas').getBoundingClientRect();
      const inView = r => r.left > c.left && r.right < c.right && r.top > c.top && r.bottom < c.bottom;
      // On the page's screen, not under another part of it (a click there reaches the view).
      const reached = (x, y) => g.querySelector('.jp-jaxviz-canvas').contains(document.elementFromPoint(x, y));
      const out = [];
      for (const e of g.querySelectorAll('svg.jp-jaxviz-svg g.node.jaxviz-group')) {
        if (/jaxviz-group-(inputs|outputs)/.test(e.className.baseVal)) continue;
        const r = e.getBoundingClientRect();
        const [x, y] = [r.left + r.width / 2, r.top + r.height / 2];
        if (inView(r) && reached(x, y)) out.push([e.id, x, y]);
      }
      const s = g.querySelector('canvas.jp-jaxviz-scene');
      for (const [id, kind, x, y] of s ? s.jaxvizItemsInView() : [])
        if (id[0] === 'g' && kind !== 'inputs' && kind !== 'outputs' && reached(x, y)) out.push([id, x, y]);
      return out; }""")


def label_of(g, item: str) -> tuple[float, float]:
    """Where to click to close the open group that `item` (a box) became."""
    return g.evaluate("""(g, id) => {
      const e = g.querySelector(`.jaxviz-cluster-label[data-cluster="cluster_${id}"]`);
      if (e) { const r = e.getBoundingClientRect(); return [r.left + r.width / 2, r.top + r.height / 2]; }
      const r = g.querySelector('canvas.jp-jaxviz-scene').jaxvizRect(`cluster_${id}`);
      return [r.left + 12, r.top + 8]; }""", item)


# Page rectangle of a canvas item: left, top, width, height.
RECT_JS = ("(g, id) => { const r = g.querySelector('canvas.jp-jaxviz-scene').jaxvizRect(id);"
           " return r && [r.left, r.top, r.width, r.height]; }")


def close_one_group(g, smallest: bool = False, around: tuple[str, ...] = ()) -> str | None:
    """Close an open group whose label is in view (a view with every group open has no box):
    the first one listed, or the smallest drawn (an innermost group: opening it again opens
    that group alone, not all that was open inside it), not one holding the boxes `around`.
    The box it became."""
    canvas = g.locator(".jp-jaxviz-canvas").bounding_box()
    found = []
    held = [g.evaluate(RECT_JS, item) for item in around]
    for gid in g.evaluate("g => g.dataset.jaxvizExpanded").split(","):
        r = g.evaluate("(g, id) => { const r = g.querySelector('canvas.jp-jaxviz-scene').jaxvizRect(id);"
                       " return r && [r.left, r.top, r.width, g.querySelector('.jp-jaxviz-canvas')"
                       ".contains(document.elementFromPoint(r.left + 12, r.top + 8)), r.height]; }",
                       f"cluster_g{gid}")
        holds = any(b and r and r[0] <= b[0] and r[1] <= b[1] and b[0] + b[2] <= r[0] + r[2]
                    and b[1] + b[3] <= r[1] + r[4] for b in held)
        if r and r[3] and not holds and canvas["x"] < r[0] < canvas["x"] + canvas["width"] - 100 \
                and canvas["y"] < r[1] < canvas["y"] + canvas["height"] - 40 and r[2] > 120:
            found.append((r[2] * r[4] if smallest else len(found), gid, r))
    for _, gid, r in sorted(found):
        if click_to_paint_ms(g, r[0] + 12, r[1] + 8) >= 0:
            settle(g)
            return f"g{gid}"
        print(f"  (a click on the label of group {gid} changed nothing)")
    return None


# How many clusters the canvas's layout laid out afresh (the rest taken from before), of how many.
FRESH_JS = "g => { const s = g.querySelector('canvas.jp-jaxviz-scene');" \
           " return s ? `${s.dataset.fresh} of ${s.dataset.clusters}` : null; }"


Opening = tuple[float, float, str, str | None, float, float]


def open_and_close(g, item: str, look_ms: int = 0) -> Opening | None:
    """Open the box `item` where it is in view, `look_ms` after the view settled (a user
    looks before clicking: what the view lays out ahead while idle is ready by then): ms
    from click to paint, the renderer's CPU ms meanwhile (to the frame after the paint),
    how the view came to be, the clusters laid out afresh, ms from click to the frame after
    the paint, ms from the view built (its edges and items) to its scene on the canvas
    (laid out, or taken from before; -1 where the view does not say: Graphviz). Then close it again (the kept drawing back)."""
    g.page.wait_for_timeout(look_ms)
    where = {i: (x, y) for i, x, y in boxes_in_view(g)}.get(item)
    if where is None:
        return None
    cpu0 = renderer_cpu_ms(g.page)
    took, after = click_to_paints_ms(g, *where)
    cpu = renderer_cpu_ms(g.page) - cpu0
    if took < 0:
        print(f"  (a click on {item} changed nothing)")
        return None
    how = g.evaluate("g => g.dataset.jaxvizArranged")
    fresh = g.evaluate(FRESH_JS)
    put = float(g.evaluate("g => g.dataset.jaxvizLayoutMs || -1"))
    settle(g)
    click_to_paint_ms(g, *label_of(g, item))
    settle(g)
    return took, cpu, how, fresh, after, put


def report_openings(what: str, runs: list) -> None:
    """Click to paint by how the view came to be: laid out on the click, laid out ahead
    (canvas), opened in place (Graphviz), or a view shown before brought back."""
    runs = [r for r in runs if r]
    if not runs:
        print(f"open in place, {what}: no box in view")
        return
    fresh = [r[3] for r in runs if r[3]]
    by_how = {h: [r for r in runs if r[2] == h] for h in sorted({r[2] for r in runs})}
    figures = "; ".join(
        f"{how}: {min(r[0] for r in rs):4.0f} ms best of {len(rs)} (median {statistics.median(r[0] for r in rs):.0f} ms;"
        f" renderer CPU {min(r[1] for r in rs):4.0f} ms best; the frame after: {min(r[4] for r in rs):4.0f} ms best"
        + (f"; on the canvas {min(r[5] for r in rs):4.0f} ms after the view was built, best)" if rs[0][5] >= 0 else ")")
        for how, rs in by_how.items())
    print(f"open in place, {what}: click to paint, {figures}"
          + (f"; clusters laid out afresh: {', '.join(map(str, fresh))}" if fresh else "") + f" {load()}")


def bench_open_in_place(page, cell: int, what: str, boxes: int = 3, repeats: int = 3) -> None:
    """Open boxes of a small program's first view (Graphviz) one after another, each
    `repeats` times (each closed again before the next)."""
    g = graph(page, cell)
    settle(g)
    g.evaluate("g => g.querySelector('.jp-jaxviz-canvas').scrollIntoView({block: 'center'})")
    g.page.wait_for_timeout(500)
    items = [item for item, _, _ in boxes_in_view(g)[:boxes]]
    names = [g.evaluate("(g, id) => g.querySelector(`[id='${id}'] text`)?.textContent ?? id", item) for item in items]
    report_openings(f"{what}, boxes {', '.join(names)}",
                    [open_and_close(g, item) for item in items for _ in range(repeats)])


def bench_open_on_canvas(page, cell: int, what: str, boxes: int = 3) -> None:
    """Open innermost groups of a canvas view (every group open: some are closed first),
    each into a view not shown before (never the group closed last: opening it brings back
    the view before): laid out on the click (laying out ahead off), then laid out ahead
    while the user looks, then brought back (the same opening again)."""
    g = graph(page, cell)
    settle(g)
    g.scroll_into_view_if_needed()
    g.evaluate("g => { g.dataset.jaxvizAhead = 'off'; }")
    closed = [close_one_group(g, smallest=True) for _ in range(boxes + 1)]
    opened = [item for item, _, _ in boxes_in_view(g) if item != closed[-1]][:boxes]
    runs = [open_and_close(g, item) for item in opened]
    g.evaluate("g => { delete g.dataset.jaxvizAhead; }")
    last = close_one_group(g, smallest=True)  # a view not shown before: so is each opening
    for item in [item for item, _, _ in boxes_in_view(g) if item != last][:boxes]:
        runs += [open_and_close(g, item, look_ms=3000), open_and_close(g, item, look_ms=3000)]
    report_openings(what, runs)


def main() -> None:
    parser = argparse.ArgumentParser(description="Browser benchmark: big views in a real JupyterLab")
    parser.add_argument("--blocks", type=int, nargs="+", default=[10, 39, 78])
    parser.add_argument("--open-only", action="store_true", help="only the opening in place")
    args = parser.parse_args()
    cells = ["%load_ext jaxviz",
             f"import sys\nsys.path.insert(0, {str(ROOT / 'benchmarks')!r})\nimport models\ntoks = models.tokens()\n"
             + "".join(f"p{b} = models.init_params({b})\n" for b in [*FIRST_VIEW_BLOCKS, *args.blocks]),
             *(f"%%jaxpr --no-run\n_ = models.train_step(p{b}, toks)" for b in FIRST_VIEW_BLOCKS)]
    first_views, expanded = 2, len(cells)  # where those cells start, and where the views with all open do
    cells += [f"%%jaxpr --expand all --no-run\n_ = models.train_step(p{b}, toks)" for b in args.blocks]
    with tempfile.TemporaryDirectory() as tmp:
        lab = start_lab(Path(tmp))
        try:
            write_notebook(lab.root / "bench.ipynb", cells)
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS, headless=True)
                page = browser.new_context(viewport={"width": 1600, "height": 1000}).new_page()
                page.goto(lab.page_url("bench.ipynb"), timeout=90_000)
                page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']").first.wait_for(timeout=90_000)
                command(page, "jaxviz: Show panel")
                page.locator("#jaxviz-panel[data-jaxviz-state='not-loaded']").wait_for(timeout=60_000)
                for i in range(len(cells)):
                    run_cell(page, i, timeout=300_000)
                print(f"Chromium {browser.version}, headless, software rendering; "
                      f"{os.cpu_count()} cores {load()}")
                for k, blocks in enumerate([] if args.open_only else args.blocks):
                    bench_size(page, expanded + k, blocks)
                for k, blocks in enumerate(FIRST_VIEW_BLOCKS):
                    bench_open_in_place(page, first_views + k, f"a {blocks}-block train step's first view (Graphviz, SVG)")
                if len(args.blocks) > 1:
                    bench_open_on_canvas(page, expanded + 1, f"innermost groups of the {args.blocks[1]}-block view "
                                         "(layered, canvas)")
                browser.close()
        finally:
            lab.stop()


if __name__ == "__main__":
    main()
