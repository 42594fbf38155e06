"""jaxviz.trace on the framework zoo (tests/frameworks.py) against each library's own
trace of the same program (``jax.make_jaxpr``, ``eqx.filter_make_jaxpr``, ``nnx.split`` +
``jax.make_jaxpr``). Target: jaxviz within 1.5x of the library's trace.

Run: ``.venv/bin/python benchmarks/bench_frameworks.py [--repeats N] [names...]``. Prints one
line per program: equations, the library's trace time, jaxviz's (trace + graph), their
ratio (fastest of N runs each, CPU time). Both are timed after ``jax.clear_caches()``, so each traces from scratch (jaxviz
never reuses a cached trace: it records the user's calls while tracing).
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import jax

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))

import frameworks  # noqa: E402

import jaxviz  # noqa: E402

TARGET = 1.5


def timed(run: Callable[[], Any], repeats: int) -> float:
    """Fastest of ``repeats`` runs, each from empty JAX caches, in this process's CPU time
    (on a shared machine wall time and slower runs measure the neighbours' load)."""
    times = []
    for _ in range(repeats):
        jax.clear_caches()
        t0 = time.process_time()
        run()
        times.append(time.process_time() - t0)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("names", nargs="*")
    opts = parser.parse_args()
    entries = [frameworks.BY_NAME[n] for n in opts.names] or frameworks.ZOO
    print(f"{'program':<20}{'eqns':>7}{'library':>11}{'jaxviz':>11}{'ratio':>8}")
    ratios = []
    for entry in entries:
        fn, args, kwargs = entry.build()
        jaxviz.trace(fn, *args, **kwargs)  # first trace in the process: imports, helpers
        entry.reference(fn, args, kwargs)
        library = timed(functools.partial(entry.reference, fn, args, kwargs), opts.repeats)
        ours = timed(functools.partial(jaxviz.trace, fn, *args, **kwargs), opts.repeats)
        eqns = jaxviz.trace(fn, *args, **kwargs).eqn_count
        ratios.append(ours / library)
        flag = "" if ours / library <= TARGET else f"  > {TARGET}x"
        print(f"{entry.name:<20}{eqns:>7}{library * 1e3:>9.1f}ms{ours * 1e3:>9.1f}ms{ours / library:>7.2f}x{flag}")
    print(f"{'geometric mean':<49}{statistics.geometric_mean(ratios):>7.2f}x (target <= {TARGET}x)")


if __name__ == "__main__":
    main()
