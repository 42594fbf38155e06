"""The corpus of real programs (``benchmarks/programs/``) itself: every program imports and
traces with ``jaxviz.trace``, and returns as many arrays as the program states (what
``benchmarks/bench_programs.py`` scores the graph's outputs against; counted by
``jax.eval_shape``, or by a real run where the call writes state back); the graph names
the library calls the program states, cuts no line or call into pieces, and its first
view shows the folds it states (the benchmark's ``library``, ``lines`` and ``folds``
checks); its views, made from edge buckets built per group on first use, draw what its
edges say. The programs run in a subprocess started beside the tests
(``tests/background.py``); those that need 8 devices in another, with
``XLA_FLAGS=--xla_force_host_platform_device_count=8``."""

from __future__ import annotations

import functools
import json
import os
import sys
import traceback
from pathlib import Path
from typing import Any

import jax
import numpy as np
import pytest

# The corpus is written against Flax, Equinox, numpyro… (the test extras): where they are
# not installed (the core suite's venvs), the module is skipped.
nnx = pytest.importorskip("flax.nnx")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import background  # noqa: E402
import bench_programs  # noqa: E402
import programs  # noqa: E402
from views import edges_problem, rows_problem  # noqa: E402

import jaxviz  # noqa: E402
from jaxviz.render.dot import dot_available, first_view_svg  # noqa: E402

SINGLE = [n for n in programs.PROGRAMS if programs.devices_needed(n) <= 1]
SEVERAL = [n for n in programs.PROGRAMS if programs.devices_needed(n) > 1]


def arrays_returned(case: programs.Case) -> int:
    """The arrays the call hands back, with the state ``nnx.jit`` writes back. Counted by
    ``jax.eval_shape``, which traces the call as running it would and compiles nothing
    (real runs cost the corpus 60 CPU-s more), except where the call writes state back
    into its arguments: that one runs."""
    def array_leaves(out: Any) -> list[Any]:
        return [x for x in jax.tree_util.tree_leaves(out) if isinstance(x, (jax.Array, np.ndarray))]

    if not case.written_back:
        return len(jax.eval_shape(lambda: array_leaves(case.fn(*case.args, **case.kwargs))))
    out = case.fn(*case.args, **case.kwargs)
    return len(array_leaves(out)) + len(jax.tree_util.tree_leaves(nnx.state(case.written_back)))


def trace_and_count(name: str) -> str:
    """'' when ``name`` traces and returns what it states, else what went wrong."""
    try:
        case = programs.load(name)
        program = jaxviz.trace(case.fn, *case.args, **case.kwargs)
        assert program.eqn_count > 0, f"{name}: no equation traced"
        returned = arrays_returned(case)
        assert returned == case.outputs, f"{name} returns {returned} arrays, states {case.outputs}"
        # the library calls it makes are named as called, its folds (inside a pmap or a
        # shard_map too) are in the first view: the one a notebook shows, fitted to dot's
        # layout where the kernel has dot; there, its inputs are on the top row and its
        # outputs on the bottom row (a pmap's or a loop's node feeds its body too)
        if dot_available():
            rows = rows_problem(program, first_view_svg(program))
            assert rows is None, f"{name}: {rows}"
        for check in (bench_programs.check_library, bench_programs.check_folds, bench_programs.check_lines):
            verdict, why = check(program, case)
            assert verdict is not False, f"{name}: {check.__name__}: {why}"
        problem = lazy_views_problem(program.graph)
        assert not problem, f"{name}: {problem}"
        opened = jax_helpers_opened(program.graph, program.graph.expansion(program.expand))
        assert not opened, f"{name}: the first view opens JAX's implementation of {opened}"
    except Exception:
        return traceback.format_exc(limit=-4)
    return ""


def jax_helpers_opened(graph, expanded) -> list[str]:
    """The calls of JAX's own helpers (``linspace``, ``normal``) open in ``expanded``
    that run no loop and no branch: nothing of them is the program's but their result."""
    def runs_flow(gid: int) -> bool:
        g = graph.groups[gid]
        held = g.holder is not None and graph.nodes[g.holder].primitive in ("scan", "while", "cond")
        return held or any(map(runs_flow, g.groups))

    return [graph.groups[g].name for g in sorted(expanded) if graph.groups[g].helper and not runs_flow(g)]


LAZY_VIEWS_CHECKED = 12  # groups opened alone per program, spread over all of them


def lazy_views_problem(graph) -> str:
    """'' when the views built from the lazily made edge buckets (the first view, then
    groups opened alone, spread over all of them, each reusing what the views before it
    made) draw what the model's edges and parent chains say; else what differs."""
    openable = [g.id for g in graph.groups if g.id and (g.groups or g.nodes)]
    requests = [None, *([gid] for gid in openable[::max(1, len(openable) // LAZY_VIEWS_CHECKED)])]
    return next((p for p in map(functools.partial(edges_problem, graph), requests) if p), "")


def test_the_corpus_is_big_enough():
    assert len(programs.PROGRAMS) >= 30
    assert len(set(programs.PROGRAMS)) == len(programs.PROGRAMS)


def selected(job: background.Job, names: list[str]) -> list[str]:
    """Those of ``names`` whose test runs in this session."""
    chosen = {getattr(item, "callspec", None) and item.callspec.params.get("name") for item in job.selected}
    return [n for n in names if n in chosen]


def run_programs(names: list[str], devices: int) -> dict[str, str]:
    """``trace_and_count`` of each program in a process of its own, with ``devices`` host
    devices: what went wrong with each ('' when nothing did)."""
    env = dict(os.environ, JAX_PLATFORMS="cpu", XLA_FLAGS=background.with_host_devices(devices))
    done = background.run([sys.executable, __file__, str(devices), *names], env=env, timeout=600)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    assert lines, done.stderr[-3000:]
    return json.loads(lines[-1])


def programs_job(names: list[str], devices: int) -> background.Job:
    """A job that runs those of ``names`` whose tests run, with ``devices`` host devices."""
    job = background.job(__file__, lambda: run_programs(selected(job, names), devices))
    return job


# The programs run in other processes (a few at a time: each test waits for its own
# share, and two shares can run at once), beside the tests before this module's.
SHARE = 9
ONE_DEVICE = {name: job for i in range(0, len(SINGLE), SHARE)
              for job in [programs_job(SINGLE[i:i + SHARE], 1)] for name in SINGLE[i:i + SHARE]}
EIGHT_DEVICES = programs_job(SEVERAL, 8)


@pytest.mark.parametrize("name", SINGLE)
def test_program_traces_and_returns_what_it_states(name):
    problem = ONE_DEVICE[name].result()[name]
    assert not problem, problem


@pytest.mark.parametrize("name", SEVERAL)
def test_program_on_eight_devices_traces_and_returns_what_it_states(name):
    problem = EIGHT_DEVICES.result()[name]
    assert not problem, problem


if __name__ == "__main__":  # the processes of run_programs
    devices, *names = sys.argv[1:]
    assert jax.device_count() >= int(devices), jax.devices()
    print(json.dumps({name: trace_and_count(name) for name in names}))
