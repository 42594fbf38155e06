"""Score jaxviz on the corpus of real programs (``benchmarks/programs/``): for each, a
rubric of pass/fail checks, printed per program and totalled.

Checks (each stated from the program or from JAX's own trace, never from jaxviz's output):
- ``traced``: ``jaxviz.trace`` does not raise.
- ``nodes``: the graph's equation nodes are exactly the equations of the library's own
  trace (``jax.make_jaxpr``, ``eqx.filter_make_jaxpr``…), counting the equations of every
  sub-jaxpr held in an equation's params (a scan's body, each branch of a cond, a
  pallas kernel), as the graph draws them; a jitted function is its body (a ``jit``
  equation of the traced function itself is the call, not a step of it).
- ``outputs``: the graph's output nodes are as many as the arrays the call returns.
- ``size``: the first view, laid out by Graphviz's ``dot`` with its legend, is at most
  3,000 pt wide and tall.
- ``folds``: the repeated layers the program states (``Block ×6``) are visible in the first
  view (a box or an open group labelled with the layer's name and its count).
- ``screen``: each of them stands on the first screen of dot's layout, both ways: its title
  within the top 700 pt, and within the 1,000 pt wide columns a notebook shows (the
  program's own structure, centred when it fits that width, else from its left edge).
- ``lines``: no source line is cut into pieces (sibling ``line`` groups of one name), nor
  a library call (a piece of it under a scope or transformation beside it).
- ``loops``: the loops the program runs (scan, while, fori_loop bodies) are groups named
  after their function, and no box in the first view is a bare ``scan``/``while``/
  ``custom_vjp_call``… where JAX's trace names the function it runs.
- ``library``: the library calls the program makes are groups named after the function.
- ``consts``: every array constant in the graph has a name (no ``const f32[8]``).
- ``captured``: the globals the program reads are drawn under their own names.
- ``speed``: trace + first view (DOT source, costs included) within 1.5x of the library's
  own trace, in CPU time (``time.process_time``); best of ``--repeats`` each (more for a
  program whose trace is short: ``repeats_for``), the two interleaved, each run from
  cleared JAX caches, ``gc`` collected then off, as ``timeit`` does.
- ``view``: the first view ready for a frontend to lay out (``jaxviz.trace``, then the
  first view's items and edges: ``bench_scale.py``'s FIRST VIEW) within 1.2x of the
  library's own trace, measured as ``speed`` is, in the same runs.

A check that does not apply to a program (no folds stated, say) shows ``-`` and is not
counted. Programs that need several devices run in a subprocess with
``XLA_FLAGS=--xla_force_host_platform_device_count=8``.

Run: ``PYTHONPATH=$PWD .venv/bin/python benchmarks/bench_programs.py [-v] [names...]``.
"""

from __future__ import annotations

import argparse
import gc
import inspect
import json
import math
import os
import re
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from typing import Any
from xml.etree import ElementTree

import jax
import jax.extend.core as jcore

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import programs  # noqa: E402

import jaxviz  # noqa: E402
from jaxviz.render.dot import (  # noqa: E402
    FIRST_SCREEN_PT,
    first_screen_span,
    first_view_svg,
    svg_items,
    svg_size_pt,
)

CHECKS = ("traced", "nodes", "outputs", "size", "folds", "screen", "lines", "loops", "library", "consts",
          "captured", "speed", "view")
MAX_VIEW_PT = 3000
SPEED_TARGET = 1.5
FIRST_VIEW_TARGET = 1.2
JIT_PRIMITIVES = ("pjit", "jit")
NAME_STACK_KINDS = ("scope", "transform")  # groups a name stack opens
# Names JAX gives a function that has none of its own.
ANONYMOUS = ("<lambda>", "<unnamed function>", "<unnamed wrapped function>")
SVG = "{http://www.w3.org/2000/svg}"
JAX_SOURCE = os.path.join(os.path.dirname(os.path.abspath(jax.__file__)), "")


# ---------------------------------------------------------------------- JAX's own trace
def sub_jaxprs(params: dict[str, Any]) -> Iterator[Any]:
    """Every jaxpr an equation holds in its params (alone, or in a tuple or list)."""
    for value in params.values():
        for v in value if isinstance(value, (tuple, list)) else (value,):
            if isinstance(v, jcore.ClosedJaxpr):
                yield v.jaxpr
            elif isinstance(v, jcore.Jaxpr):
                yield v


def walk_eqns(jaxpr: Any) -> Iterator[Any]:
    """Each equation, then the equations of the jaxprs it holds, in program order."""
    for eqn in jaxpr.eqns:
        yield eqn
        for sub in sub_jaxprs(eqn.params):
            yield from walk_eqns(sub)


def body_of_call(closed: Any) -> Any:
    """The jaxpr of a jitted function's body: its trace is one ``jit`` equation. (A
    ``jax.pmap`` traces as a ``jit`` holding one ``shard_map``: that is the pmap, an
    equation of the program, not the call.)"""
    jaxpr = closed.jaxpr
    if len(jaxpr.eqns) == 1 and jaxpr.eqns[0].primitive.name in JIT_PRIMITIVES \
            and list(jaxpr.eqns[0].outvars) == list(jaxpr.outvars):
        body = jaxpr.eqns[0].params["jaxpr"].jaxpr
        if not (len(body.eqns) == 1 and body.eqns[0].primitive.name == "shard_map"):
            return body
    return jaxpr


def function_names(eqn: Any) -> list[str]:
    """The names of the user's or a library's functions an equation runs, as JAX's trace
    records them (a jit's name, a scan's body, a while loop's condition and body, a
    custom_vjp's function); JAX's private wrappers (``_fun`` in ``jax/_src``) are no name,
    its public functions (``relu``) are."""
    names = []
    for sub in sub_jaxprs(eqn.params):
        info = getattr(sub, "debug_info", None)
        name = eqn.params.get("name")
        name = name if isinstance(name, str) else getattr(info, "func_name", None)
        private_to_jax = bool(name) and name.startswith("_") \
            and JAX_SOURCE in str(getattr(info, "func_src_info", "") or "")
        if name and name not in ANONYMOUS and not private_to_jax:
            names.append(name)
    return names


def names_the_function(label: str, names: list[str], primitive: str) -> bool:
    """Whether a box's label names what it runs: the function, or the layers a loop runs
    with their count (``DotReluDot ×4 (scan)``, where the body is ``forward``). A closure a
    library's factory returns is named as jaxviz names a library call, without its ``_fn``
    (optax's ``zoom_linesearch(...)``'s ``step_fn`` is ``optax.zoom_linesearch.step``)."""
    if any(name.lstrip("_") in label for name in names):
        return True
    if any(re.search(rf"\.{re.escape(name.removesuffix('_fn'))}\b", label) for name in names if name.endswith("_fn")):
        return True
    fold = re.match(r"\s*(\S+)\s+×\s*\d+", label)
    return bool(fold) and fold.group(1) != primitive


# ---------------------------------------------------------------------- the first view
def first_view_groups(program: Any) -> tuple[frozenset[int], list[int]]:
    """The open groups of the first view, and every group it shows (open or a box)."""
    graph = program.graph
    expanded = graph.expansion(program.expand)
    shown = set(expanded)
    for gid in expanded:
        shown.update(graph.groups[gid].groups)
    return expanded, sorted(shown)


def group_label(graph: Any, gid: int) -> str:
    g = graph.groups[gid]
    return f"{g.name} | {g.repeat or ''}"


def view_size_pt(program: Any) -> tuple[float, float]:
    """Width and height of the first view as ``dot`` lays it out, legend included."""
    return svg_size_pt(first_view_svg(program))


# ---------------------------------------------------------------------- the checks
Result = tuple[bool | None, str]  # pass (None: does not apply), and why


def check_nodes(program: Any, case: programs.Case) -> Result:
    # A library's jit (``nnx.jit``) may run the user's jitted function as a ``jit``
    # equation of its own trace: that equation is the call itself, not a step of it.
    own = getattr(inspect.unwrap(case.fn), "__name__", None)
    expected = sum(1 for eqn in walk_eqns(body_of_call(case.reference_jaxpr()))
                   if not (eqn.primitive.name in JIT_PRIMITIVES and eqn.params.get("name") == own))
    drawn = len(program.graph.eqn_nodes())
    return drawn == expected, f"{drawn} equation nodes, JAX's trace has {expected}"


def check_outputs(program: Any, case: programs.Case) -> Result:
    # State updated and dropped (an NNX module under plain ``jax.jit``) is drawn as lost:
    # computed, not returned.
    drawn = sum(len(n.label.split(" = ")) for n in program.graph.nodes
                if n.kind == "output" and n.input_kind != "lost")
    return drawn == case.outputs, f"{drawn} output nodes, the call returns {case.outputs} arrays"


def check_size(program: Any, case: programs.Case) -> Result:
    width, height = view_size_pt(program)
    return max(width, height) <= MAX_VIEW_PT, f"first view {width:.0f} x {height:.0f} pt"


def check_folds(program: Any, case: programs.Case) -> Result:
    if not case.folds:
        return None, ""
    graph = program.graph
    _, shown = first_view_groups(program)
    labels = [group_label(graph, gid) for gid in shown]
    missing = [f"{name} ×{n}" for name, n in case.folds
               if not any(re.search(rf"{re.escape(name)}\b[^|]*×\s*{n}\b", label, re.I) for label in labels)]
    folded = sorted({graph.groups[g].name for g in shown if graph.groups[g].kind == "repeat"})
    return not missing, f"missing {missing}; folds shown: {folded}" if missing else f"{len(case.folds)} shown"


def check_screen(program: Any, case: programs.Case) -> Result:
    if not case.folds:
        return None, ""
    svg = first_view_svg(program)
    lo, hi = first_screen_span(program.graph, svg_items(svg), svg_size_pt(svg)[0])
    off = []
    for name, n in case.folds:
        fold = re.compile(rf"{re.escape(name)}\b[^|]*×\s*{n}\b", re.I)
        drawn = [(x, y) for text, x, y in svg_texts(svg) if fold.search(text)]
        if not any(lo <= x <= hi and y <= FIRST_SCREEN_PT[1] for x, y in drawn):
            off.append(f"{name} ×{n} at {[(round(x), round(y)) for x, y in drawn]}")
    return not off, f"off the first screen (columns {lo:.0f}..{hi:.0f}): {off}" if off else "on the first screen"


def svg_texts(svg: str) -> list[tuple[str, float, float]]:
    """Each text of a Graphviz SVG and where it stands (pt from the drawing's top left)."""
    root = ElementTree.fromstring(svg)
    shift = re.search(r"translate\(([-\d.]+) ([-\d.]+)\)", next(root.iter(f"{SVG}g")).get("transform", ""))
    dx, dy = (float(shift.group(1)), float(shift.group(2))) if shift else (0.0, 0.0)
    return [(t.text or "", float(t.get("x", "0")) + dx, float(t.get("y", "0")) + dy) for t in root.iter(f"{SVG}text")]


def check_lines(program: Any, case: programs.Case) -> Result:
    graph = program.graph
    cut = []
    for group in graph.groups:
        if group.kind == "repeat":  # a loop's rounds, folded: one box
            continue
        names: dict[str, int] = {}
        for c in group.groups:
            if graph.groups[c].kind == "line":
                names[graph.groups[c].name] = names.get(graph.groups[c].name, 0) + 1
        cut += [f"{name} ({k} pieces)" for name, k in names.items() if k > 1]
        cut += [f"{name} (a piece under {scope})" for name, scope in calls_cut(graph, group)]
    return not cut, "; ".join(cut[:3]) or "no line or call in pieces"


def calls_cut(graph: Any, group: Any) -> list[tuple[str, str]]:
    """(call, scope) for each library call among ``group``'s groups that has another piece
    under a scope or transformation beside it, held through such groups alone."""
    calls = {graph.groups[c].name for c in group.groups if graph.groups[c].kind == "library"}
    found, todo = [], [(c, graph.groups[c].name) for c in group.groups if graph.groups[c].kind in NAME_STACK_KINDS]
    while todo:
        gid, scope = todo.pop()
        for c in graph.groups[gid].groups:
            inner = graph.groups[c]
            if inner.kind == "library" and inner.name in calls:
                found.append((inner.name, scope))
            elif inner.kind in NAME_STACK_KINDS:
                todo.append((c, scope))
    return found


def check_loops(program: Any, case: programs.Case) -> Result:
    graph = program.graph
    names = [g.name for g in graph.groups]
    missing = [loop for loop in case.loops if not any(loop in name for name in names)]
    # The graph's equation nodes are the trace's equations in program order (checked by
    # primitive), so a box's own equation says which function it runs.
    eqns = list(walk_eqns(program.jaxpr.jaxpr))
    order = {node.id: i for i, node in enumerate(graph.eqn_nodes())}
    bare = []
    _, shown = first_view_groups(program)
    for gid in shown:
        g = graph.groups[gid]
        index = order.get(g.holder) if g.holder is not None and g.kind == "eqn" else None
        if index is None or index >= len(eqns) or eqns[index].primitive.name != graph.nodes[g.holder].primitive:
            continue
        names = function_names(eqns[index])
        label = f"{g.name} {g.repeat or ''}"
        if names and not names_the_function(label, names, eqns[index].primitive.name):
            bare.append(f"{g.name!r} runs {' / '.join(names)}")
    if not case.loops and not bare:
        return None, ""
    ok = not missing and not bare
    return ok, "; ".join(filter(None, [f"unnamed loops {missing}" if missing else "",
                                       f"bare boxes: {', '.join(bare[:3])}" if bare else ""])) or "named"


def check_library(program: Any, case: programs.Case) -> Result:
    if not case.calls:
        return None, ""
    names = [g.name for g in program.graph.groups]
    missing = [call for call in case.calls if not any(call in name for name in names)]
    return not missing, f"no group named {missing}" if missing else "named"


def check_consts(program: Any, case: programs.Case) -> Result:
    unnamed = [n.label for n in program.graph.nodes if n.kind == "const" and n.label.startswith("const ")]
    return not unnamed, f"{len(unnamed)} unnamed: {unnamed[:3]}" if unnamed else "all named"


def check_captured(program: Any, case: programs.Case) -> Result:
    if not case.captured:
        return None, ""
    labels = [n.label for n in program.graph.nodes if n.input_kind == "captured"]
    missing = [name for name in case.captured
               if not any(re.match(rf"{re.escape(name)}(\b|$|[\[.( =])", label) for label in labels)]
    return not missing, f"not drawn: {missing}" if missing else "named"


def best_time(run: Callable[[], Any], repeats: int) -> float:
    """Fastest CPU time (``time.process_time``: a shared machine's load does not swing it)
    of ``repeats`` runs, each from cleared JAX caches, gc collected then off (as timeit)."""
    times = []
    for _ in range(repeats):
        jax.clear_caches()
        gc.collect()
        gc.disable()
        try:
            t0 = time.process_time()
            run()
            times.append(time.process_time() - t0)
        finally:
            gc.enable()
    return min(times)


MEASURED_S = 0.5  # the library's trace is timed at least this long in all: a small program
MAX_REPEATS = 25   # is timed more often (its best of 3 swings by 0.2x from run to run)


def repeats_for(reference_s: float, least: int) -> int:
    """How many interleaved runs a program's timing takes: ``least``, or more for a
    program whose library trace (``reference_s``, its best so far) is short."""
    if reference_s == float("inf"):
        return least
    return min(MAX_REPEATS, max(least, math.ceil(MEASURED_S / reference_s)))


def check_speed(case: programs.Case, repeats: int) -> tuple[Result, Result]:
    """``speed`` and ``view``: the drawing's DOT source, and the first view alone."""
    def drawn() -> None:
        jaxviz.trace(case.fn, *case.args, **case.kwargs).to_dot()

    def first_view() -> None:
        program = jaxviz.trace(case.fn, *case.args, **case.kwargs)
        program.graph.view(program.expand)

    reference = mine = view = float("inf")
    done = 0
    while done < repeats_for(reference, repeats):  # interleaved: a burst of load hits all sides
        reference = min(reference, best_time(case.reference_jaxpr, 1))
        mine = min(mine, best_time(drawn, 1))
        view = min(view, best_time(first_view, 1))
        done += 1
    ratio, view_ratio = mine / reference, view / reference
    return ((ratio <= SPEED_TARGET, f"{ratio:.2f}x ({mine * 1e3:.0f} ms vs {reference * 1e3:.0f} ms CPU)"),
            (view_ratio <= FIRST_VIEW_TARGET, f"{view_ratio:.2f}x ({view * 1e3:.0f} ms)"))


def score(name: str, repeats: int) -> dict[str, Result]:
    """Every check of one program."""
    results: dict[str, Result] = {}
    try:
        case = programs.load(name)
        program = jaxviz.trace(case.fn, *case.args, **case.kwargs)
    except Exception as exc:  # the score says so: a crash is a failed check, not the end
        results["traced"] = (False, f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}")
        return results
    results["traced"] = (True, f"{program.eqn_count} equations")
    checks: dict[str, Callable[[Any, programs.Case], Result]] = {
        "nodes": check_nodes, "outputs": check_outputs, "size": check_size, "folds": check_folds,
        "screen": check_screen, "lines": check_lines, "loops": check_loops, "library": check_library, "consts": check_consts,
        "captured": check_captured}
    for key, check in checks.items():
        try:
            results[key] = check(program, case)
        except Exception as exc:
            results[key] = (False, f"check raised {type(exc).__name__}: {exc}"[:200])
            traceback.print_exc()
    results["speed"], results["view"] = check_speed(case, repeats)
    return results


# ---------------------------------------------------------------------- running
def score_elsewhere(names: list[str], repeats: int, devices: int) -> dict[str, dict[str, Result]]:
    """Score ``names`` in a subprocess that sees ``devices`` host devices."""
    env = dict(os.environ, XLA_FLAGS=f"--xla_force_host_platform_device_count={devices}")
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--repeats", str(repeats), *names]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1800)
    for line in done.stdout.splitlines():
        if line.startswith("{"):
            return {k: {c: tuple(r) for c, r in v.items()} for k, v in json.loads(line).items()}
    sys.stderr.write(done.stderr[-3000:])
    return {name: {"traced": (False, f"worker failed ({done.returncode})")} for name in names}


def print_table(scores: dict[str, dict[str, Result]], verbose: bool) -> None:
    print(f"{'program':<26}" + "".join(f"{c[:8]:>9}" for c in CHECKS) + f"{'score':>8}")
    total = passed = perfect = 0
    for name, results in scores.items():
        marks, ok, applicable = [], 0, 0
        for check in CHECKS:
            verdict = results.get(check, (False, "not run: the program did not trace"))[0]
            marks.append("-" if verdict is None else "ok" if verdict else "FAIL")
            if verdict is not None:
                applicable += 1
                ok += bool(verdict)
        total += applicable
        passed += ok
        perfect += ok == applicable
        print(f"{name:<26}" + "".join(f"{m:>9}" for m in marks) + f"{ok:>5}/{applicable}")
        if verbose:
            for check in CHECKS:
                verdict, why = results.get(check, (False, "not run"))
                if verdict is not None and (not verdict or check in ("speed", "view", "size")):
                    print(f"    {check}: {why}")
    print(f"\n{passed}/{total} checks passed; {perfect}/{len(scores)} programs fully right")
    for check in CHECKS:
        verdicts = [r.get(check, (False, ""))[0] for r in scores.values()]
        applied = [v for v in verdicts if v is not None]
        print(f"  {check:<9} {sum(map(bool, applied)):>3}/{len(applied)}")
    for check in ("speed", "view"):
        ratios = sorted((float(r[check][1].split("x")[0]), name) for name, r in scores.items() if check in r)
        if ratios:
            print(f"  {check} ratios: median {ratios[len(ratios) // 2][0]:.2f}x, "
                  f"worst {ratios[-1][0]:.2f}x ({ratios[-1][1]})")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="programs to score (default: all)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("-v", "--verbose", action="store_true", help="say why each check failed")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    opts = parser.parse_args()
    names = opts.names or list(programs.PROGRAMS)
    if opts.worker:
        print(json.dumps({name: score(name, opts.repeats) for name in names}))
        return
    here = [n for n in names if programs.devices_needed(n) <= 1]
    elsewhere = [n for n in names if programs.devices_needed(n) > 1]
    scores = {}
    for name in here:
        scores[name] = score(name, opts.repeats)
        print(f"  scored {name}", file=sys.stderr, flush=True)
    if elsewhere:
        devices = max(programs.devices_needed(n) for n in elsewhere)
        scores.update(score_elsewhere(elsewhere, opts.repeats, devices))
    print(f"jaxviz from {os.path.dirname(os.path.abspath(jaxviz.__file__))}")
    print_table({n: scores[n] for n in names}, opts.verbose)


if __name__ == "__main__":
    main()
