"""Scale benchmark: real train steps with thousands of equations stay instant.

Prints, for a plain-JAX transformer train step at L = 2, 12, 48 blocks and a Flax model:
  - make_jaxpr alone vs jaxviz.trace + graph model + the first view a user sees (laid out
    by dot to SVG), best of 3 each, as a ratio of wall and of CPU time (target <= 1.5x at
    L = 12);
  - expanding single groups (model -> DOT -> SVG of the new view) at L = 48 (< 0.3 s);
  - the repeated blocks, folded into one "block ×48" group: the time to expand it and one
    block inside it (< 0.5 s each), and how stable the layout is when that block opens
    (dot -Tjson before and after): the share of pairs of items that keep their order along
    the rank direction (1.0 = nothing reshuffled) and how far the other blocks move;
  - the browser payload size for the first view (< 1 MB at L = 48);
  - the graph model's memory next to the ClosedJaxpr's (target <= 2x);
and for an unrolled chain of 10k / 30k / 100k equations, graph build and first-view times
with the time per equation (linear growth: flat per-equation cost).

Usage: .venv/bin/python benchmarks/bench_scale.py [--quick]
"""

from __future__ import annotations

import argparse
import functools
import gc
import json
import math
import os
import resource
import subprocess
import sys
import time
import tracemalloc

sys.path.insert(0, os.path.dirname(__file__))

import jax  # noqa: E402
import models  # noqa: E402

import jaxviz  # noqa: E402
from jaxviz.render.dot import dot_available, render_svg, view_to_dot  # noqa: E402
from jaxviz.render.payload import program_payload  # noqa: E402


def fresh(fn):
    """A new function object, so that JAX's trace cache never answers for it."""

    @functools.wraps(fn)
    def wrapper(*a, **k):
        return fn(*a, **k)

    return wrapper


def timed(fn, *args, **kwargs):
    t0 = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - t0


def first_view_seconds(program, expand=None):
    """Model → DOT → SVG of a view: by default the one a user first sees (``program.expand``,
    the automatic first view)."""
    def render():
        dot = view_to_dot(program.graph.view(program.expand if expand is None else expand))
        return render_svg(dot) if dot_available() else dot.source

    return timed(render)[1]


REPEATS = 3


def trace_and_first_view(step, args):
    program = jaxviz.trace(step, *args)
    first_view_seconds(program)
    return program


def cpu_timed(fn):
    """``fn()`` and the CPU seconds it took, ``dot`` subprocesses included. As ``timeit``
    does, the garbage collector is off while it runs (after collecting what the previous
    run left): otherwise a full collection of every live object (JAX's included, ~0.07 s)
    lands in whichever side happens to cross the threshold."""
    def cpu():
        kids = resource.getrusage(resource.RUSAGE_CHILDREN)
        return time.process_time() + kids.ru_utime + kids.ru_stime

    gc.collect()
    gc.disable()
    try:
        c0 = cpu()
        out = fn()
        return out, cpu() - c0
    finally:
        gc.enable()


def retained_bytes(build):
    """Bytes still allocated after ``build()`` returns (what its result keeps alive)."""
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    result = build()
    gc.collect()
    size = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    return result, size


def bench_train_step(label, step, args, expand_groups=True):
    # Each twice: the first jaxviz trace in a process also traces the library's jitted
    # helpers (jnp.where, a Flax Dense ...) once in jaxviz's own JAX cache context.
    _, t_jaxpr_first = timed(jax.make_jaxpr(fresh(step)), *args)
    _, t_trace_first = timed(jaxviz.trace, step, *args)
    # Then best of ``REPEATS`` for both sides (on a shared 2-core machine one run is noise),
    # each with the garbage collector off, as timeit does (``cpu_timed``).
    t_jaxpr = t_total = cpu_jaxpr = cpu_total = math.inf
    for _ in range(REPEATS):
        (_, t), c = cpu_timed(lambda: timed(jax.make_jaxpr(fresh(step)), *args))
        t_jaxpr, cpu_jaxpr = min(t_jaxpr, t), min(cpu_jaxpr, c)
        (program, t), c = cpu_timed(lambda: timed(trace_and_first_view, step, args))
        if t < t_total:
            t_total, timings = t, dict(program.timings)
        cpu_total = min(cpu_total, c)
    t_view = first_view_seconds(program)
    total = t_total
    payload = json.dumps(program_payload(program), separators=(",", ":"))
    print(f"{label:>14}: {program.eqn_count:6d} eqns | make_jaxpr {t_jaxpr:6.2f} s | trace "
          f"{timings['trace']:5.2f} + graph {timings['graph']:5.2f} + first view "
          f"{t_view:5.2f} = {total:5.2f} s | ratio {total / t_jaxpr:4.2f}x (target <= 1.5; "
          f"CPU time {cpu_total / cpu_jaxpr:4.2f}x) | payload {len(payload) / 1e6:5.2f} MB")
    print(f"{'':>14}  first time in this process: make_jaxpr {t_jaxpr_first:5.2f} s, jaxviz "
          f"{t_trace_first + t_view:5.2f} s, ratio {(t_trace_first + t_view) / t_jaxpr_first:4.2f}x")
    if expand_groups:
        graph = program.graph
        worst = 0.0
        # The groups a user opens first: the passes, the loss, a few blocks, an input pytree.
        # (Not the 2-equation ``where`` boxes jnp makes: nobody opens those first.)
        calls = [g.id for g in graph.groups if g.kind in ("phase", "call", "inputs")
                 and (g.kind != "call" or g.n_eqns >= 10)]
        targets = calls[:4] + calls[4::max(1, len(calls) // 8)]
        for gid in targets:
            worst = max(worst, first_view_seconds(program, expand=[gid]))
        print(f"{'':>14}  expanding one group: worst of {len(targets)} {worst:5.3f} s (target < 0.3 s)")
    return program


def layout(view):
    """``dot -Tjson`` of a view: item name ("g12", "n3", "cluster_g5") → its box (left,
    top, right, bottom in pt, y from the top), and the drawing's (width, height)."""
    source = view_to_dot(view, legend=False).source
    laid = json.loads(subprocess.run(["dot", "-Tjson"], input=source, capture_output=True, text=True,
                                     check=True).stdout)
    x0, y0, x1, y1 = map(float, laid["bb"].split(","))
    boxes = {}
    for o in laid.get("objects", []):
        name = o.get("name", "")
        if "bb" in o and name.startswith("cluster_g"):
            left, bottom, right, top = map(float, o["bb"].split(","))
        elif "pos" in o and "nodes" not in o and name[:1] in "ng" and name[1:].isdigit():
            x, y = map(float, o["pos"].split(","))
            w, h = float(o["width"]) * 36, float(o["height"]) * 36  # inches, halved, in pt
            left, bottom, right, top = x - w, y - h, x + w, y + h
        else:
            continue
        boxes[name] = (left - x0, y1 - top, right - x0, y1 - bottom)  # Graphviz's y grows upwards
    return boxes, (x1 - x0, y1 - y0)


def centre(box):
    return ((box[0] + box[2]) / 2, (box[1] + box[3]) / 2)


def order_kept(before, after, names):
    """Share of pairs (on different ranks before) still in the same order along the
    rank direction (top to bottom) after."""
    ys = [(before[n][1], after[n][1]) for n in names]
    kept = total = 0
    for i in range(len(ys)):
        for j in range(i + 1, len(ys)):
            db = ys[i][0] - ys[j][0]
            if abs(db) < 1:  # same rank before: no order to keep
                continue
            total += 1
            kept += (ys[i][1] - ys[j][1]) * db > 0
    return kept / max(total, 1), total


def bench_repeats(program):
    """The forward "block ×L" group: expanding it and one block in it, and how much of the
    layout survives opening that block."""
    graph = program.graph
    forward = next(g for g in graph.groups if g.kind == "phase" and g.name == "forward")
    fold = next(g for g in graph.groups if g.kind == "repeat" and g.name.startswith("block ×")
                and forward.id in set(_ancestors(graph, g.id)))
    middle = fold.groups[len(fold.groups) // 2 - 1]
    t_fold = first_view_seconds(program, expand=[fold.id])
    t_block = first_view_seconds(program, expand=[middle])
    print(f"{'':>14}  expanding {fold.name} ({len(fold.groups)} boxes): {t_fold:5.3f} s, then one block in it "
          f"({graph.groups[middle].repeat}): {t_block:5.3f} s (target < 0.5 s per expansion)")
    if not dot_available():
        print(f"{'':>14}  layout stability: skipped (dot missing)")
        return
    before, (w, h) = layout(graph.view([fold.id]))
    after, (w2, h2) = layout(graph.view([middle]))
    common = sorted(n for n in set(before) & set(after) if not n.startswith("cluster"))
    kept, pairs = order_kept({n: centre(before[n]) for n in common}, {n: centre(after[n]) for n in common}, common)
    print(f"{'':>14}  layout stability, opening {graph.groups[middle].repeat} inside the open {fold.name}: "
          f"order along the rank direction kept for {kept:.3f} of {pairs} pairs of the {len(common)} items "
          f"drawn in both (1.0 = nothing reshuffled)")
    # How far the other blocks move on screen: the browser keeps the clicked box's top-left
    # corner where it was (the opened cluster's corner takes its place).
    ax, ay = before[f"g{middle}"][:2]
    bx, by = after[f"cluster_g{middle}"][:2]
    diag = math.hypot(w, h)
    others = [f"g{c}" for c in fold.groups if c != middle]
    grown = after[f"cluster_g{middle}"][3] - by - (before[f"g{middle}"][3] - ay)
    moved, beyond = {}, {}
    for n in others:
        (x, y), (x2, y2) = centre(before[n]), centre(after[n])
        moved[n] = math.dist((x - ax, y - ay), (x2 - bx, y2 - by)) / diag
        if before[n][1] > ay:  # below the opened block: pushed down by what it grew
            beyond[n] = math.dist((x - ax, y - ay + grown), (x2 - bx, y2 - by)) / diag
    above = [moved[n] for n in others if before[n][1] < ay]
    below = [moved[n] for n in beyond]
    mean = lambda xs: sum(xs) / max(len(xs), 1)  # noqa: E731
    print(f"{'':>14}  the {len(others)} other blocks move {mean(list(moved.values())):.3f} of the layout's "
          f"diagonal ({diag:.0f} pt) on average, the opened block held in place: above it {mean(above):.3f}, "
          f"below it {mean(below):.3f}, or {mean(list(beyond.values())):.3f} beyond the {grown:.0f} pt it grew "
          f"(layout {w:.0f} x {h:.0f} pt -> {w2:.0f} x {h2:.0f} pt)")


def _ancestors(graph, gid):
    g = graph.groups[gid].parent
    while g is not None:
        yield g
        g = graph.groups[g].parent


def bench_memory(step, args):
    jaxpr_closed, jaxpr_bytes = retained_bytes(lambda: jax.make_jaxpr(fresh(step))(*args))
    program = jaxviz.trace(step, *args)
    _, graph_bytes = retained_bytes(lambda: jaxviz.tracing.GraphBuilder(
        "m", {}, None).build(program.jaxpr, [], [f"a{i}" for i in range(len(program.jaxpr.jaxpr.invars))],
                             [f"o{i}" for i in range(len(program.jaxpr.jaxpr.outvars))], {}))
    print(f"{'memory':>14}: ClosedJaxpr {jaxpr_bytes / 1e6:6.2f} MB, graph model "
          f"{graph_bytes / 1e6:6.2f} MB, ratio {graph_bytes / max(jaxpr_bytes, 1):4.2f}x (target <= 2)")


def bench_retrace_memory(step, args, times=10):
    """A notebook cell calling a jitted step, traced again and again (the user re-runs it):
    what stays allocated must not grow with each trace (JAX's trace caches included)."""
    from jaxviz.cells import stage_cell

    jitted = jax.jit(step)
    jitted(*args)  # the user ran it before
    names = [f"a{i}" for i in range(len(args))]
    namespace = {"step": jitted, **dict(zip(names, args))}
    source = f"out = step({', '.join(names)})\n"
    stage_cell(source, namespace)
    _, jaxpr_bytes = retained_bytes(lambda: jax.make_jaxpr(fresh(step))(*args))

    def retrace():
        for _ in range(times):
            stage_cell(source, namespace)

    _, grown = retained_bytes(retrace)
    print(f"{'re-tracing':>14}: a cell calling a jitted step, {times} more times: {grown / 1e6:6.2f} MB "
          f"still allocated (one jaxpr of the step: {jaxpr_bytes / 1e6:5.2f} MB; target: no growth per trace)")


def flax_train_step():
    import flax.linen as nn
    import jax.numpy as jnp
    import optax

    class CNN(nn.Module):
        @nn.compact
        def __call__(self, x):
            x = nn.relu(nn.Conv(16, (3, 3))(x))
            x = nn.avg_pool(x, (2, 2), (2, 2))
            x = nn.relu(nn.Conv(32, (3, 3))(x))
            x = x.reshape(x.shape[0], -1)
            x = nn.relu(nn.Dense(64)(x))
            return nn.Dense(10)(x)

    model, tx = CNN(), optax.adam(1e-3)
    x = jnp.ones((8, 8, 8, 1))
    params = model.init(jax.random.PRNGKey(0), x)["params"]
    opt_state = tx.init(params)

    def train_step(params, opt_state, x, y):
        def loss_fn(p):
            logits = model.apply({"params": p}, x)
            return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()

        loss, grads = jax.value_and_grad(loss_fn)(params)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    return train_step, (params, opt_state, x, jnp.zeros(8, jnp.int32))


def bench_unrolled(sizes):
    per_eqn = []
    for n in sizes:
        fn = models.unrolled(n)
        program, _ = timed(jaxviz.trace, fn, jax.numpy.ones(4))
        t_view = first_view_seconds(program)
        per = program.timings["graph"] / program.eqn_count * 1e6
        per_eqn.append(per)
        print(f"{'unrolled':>14}: {program.eqn_count:6d} eqns | trace {program.timings['trace']:6.2f} s | "
              f"graph model {program.timings['graph']:5.2f} s ({per:5.1f} µs/eqn; target < 5 s at 100k) | "
              f"first view {t_view:5.2f} s (target < 2 s)")
    print(f"{'':>14}  graph build µs/eqn from smallest to largest: ratio {per_eqn[-1] / per_eqn[0]:4.2f} "
          "(1.0 = linear)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="smaller sizes (a smoke run)")
    args = parser.parse_args()
    print(f"jax {jax.__version__} on {jax.devices()[0].platform}; dot {'found' if dot_available() else 'missing'}")
    layers = (2, 12) if args.quick else (2, 12, 48)
    for n in layers:
        params, tokens = models.init_params(n), models.tokens()
        program = bench_train_step(f"transformer L={n}", models.train_step, (params, tokens),
                                   expand_groups=n == layers[-1])
    bench_repeats(program)
    step, step_args = flax_train_step()
    bench_train_step("flax CNN", step, step_args, expand_groups=False)
    bench_memory(models.train_step, (models.init_params(layers[-1]), models.tokens()))
    bench_retrace_memory(models.train_step, (models.init_params(12), models.tokens()))
    bench_unrolled((2_000, 6_000) if args.quick else (10_000, 30_000, 100_000))


if __name__ == "__main__":
    main()
