"""What the trace diff keeps and costs.

1. Memory kept per function for ``%jaxviz diff``: the last ``KEEP`` compiles of each
   function, as the function and its abstract arguments (shapes, dtypes, static values),
   measured with tracemalloc as what is freed when the history is cleared; compared with
   keeping each compile's traced ``Program`` instead (the ratio).
2. Memory held after a watch is dropped, after 20 and 50 recompiles of one function: what
   jaxviz keeps (the diff history and the tracker's, bounded per function) must not grow
   with the number of recompiles once the log is gone. JAX's own caches grow with every
   compile: they are measured the same way without a watch and subtracted.
3. Time of ``recompile_diff`` (two re-traces and the diff) and of the diff alone, on an
   L-block transformer train step whose batch size changed.

Usage: ``.venv/bin/python benchmarks/bench_diff.py [--layers L]``. Prints its figures; not
a unit test.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time
import tracemalloc
import warnings

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))
import models  # noqa: E402

import jaxviz  # noqa: E402
from jaxviz.diff import HISTORY, KEEP, diff_programs  # noqa: E402


def retained(make) -> tuple[int, object]:
    """Bytes still allocated after ``make()`` returns (the object kept alive)."""
    gc.collect()
    before = tracemalloc.get_traced_memory()[0]
    obj = make()
    gc.collect()
    return tracemalloc.get_traced_memory()[0] - before, obj


# One function per measurement, each its own code: a function made again (by a factory)
# is a cause jaxviz explains by reading the caller's frame, whose locals snapshot (CPython
# 3.11) would hold the dropped watch until that frame returns.
@jax.jit
def grow_warm(x):
    return jnp.tanh(x * 2.0).sum()


@jax.jit
def grow_20(x):
    return jnp.tanh(x * 3.0).sum()


@jax.jit
def grow_50(x):
    return jnp.tanh(x * 4.0).sum()


JAXVIZ_FRAMES = [tracemalloc.Filter(True, os.path.join(os.path.dirname(jaxviz.__file__), "*"),
                                    all_frames=True)]


def held_after(grow, recompiles: int) -> int:
    """Bytes allocated by jaxviz (a jaxviz frame in the allocation's stack) and still held
    once a new function compiled ``recompiles + 1`` times under a watch, the watch dropped.
    JAX's own caches (allocated outside jaxviz's frames) are not counted."""
    inputs = [np.ones(n, np.float32) for n in range(1, recompiles + 2)]  # numpy: no eager JAX op
    gc.collect()
    before = tracemalloc.take_snapshot().filter_traces(JAXVIZ_FRAMES)
    log = jaxviz.watch().start()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", jaxviz.recompiles.RecompileWarning)  # the storm warning, expected
        for x in inputs:
            grow(x)
    log.stop()
    del log
    gc.collect()
    after = tracemalloc.take_snapshot().filter_traces(JAXVIZ_FRAMES)
    return sum(stat.size_diff for stat in after.compare_to(before, "traceback"))


def memory_after_the_watch() -> None:
    HISTORY.clear()
    tracemalloc.start(64)
    held_after(grow_warm, 3)  # jaxviz's and JAX's one-time structures
    for grow, recompiles in ((grow_20, 20), (grow_50, 50)):
        print(f"  {recompiles} recompiles, the log dropped: jaxviz still holds "
              f"{held_after(grow, recompiles) / 1024:.1f} KiB for the function")
    gc.collect()
    before = tracemalloc.get_traced_memory()[0]
    HISTORY.clear()
    gc.collect()
    print(f"  of which the diff history (the last {KEEP} compiles of each function): "
          f"{(before - tracemalloc.get_traced_memory()[0]) / 1024:.1f} KiB")
    tracemalloc.stop()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--layers", type=int, default=12)
    args = parser.parse_args()
    print("memory held after the watch ends")
    memory_after_the_watch()
    params = models.init_params(args.layers)
    step = jax.jit(models.train_step)
    batches = [jax.random.randint(jax.random.PRNGKey(1), (b, models.SEQ), 0, models.VOCAB)
               for b in (2, 4, 8, 16)]
    n_leaves = len(jax.tree_util.tree_leaves(params))

    HISTORY.clear()
    tracemalloc.start()
    log = jaxviz.watch().start()
    for batch in batches:  # 4 compiles; the history keeps the last KEEP
        step(params, batch)
    del batch
    log.stop()
    n_kept = len(HISTORY.records("train_step"))
    gc.collect()
    before = tracemalloc.get_traced_memory()[0]
    HISTORY.clear()  # the events stay in ``log``: only what the history adds is freed
    gc.collect()
    kept = before - tracemalloc.get_traced_memory()[0]
    per_compile = kept / max(n_kept, 1)
    print(f"train step of {args.layers} blocks ({n_leaves} parameter arrays): "
          f"{len(log.events)} compiles, {n_kept} kept (KEEP={KEEP})")
    print(f"  memory kept for the diff: {kept / 1024:.1f} KiB per function "
          f"({per_compile / 1024:.1f} KiB per compile)")

    program_bytes, program = retained(lambda: jaxviz.trace(models.train_step, params, batches[0]))
    program.costs()
    print(f"  a traced Program of the same step ({program.eqn_count} equations) holds "
          f"{program_bytes / 1024:.0f} KiB: keeping abstract arguments is "
          f"{program_bytes / max(per_compile, 1):.0f}× smaller per compile")
    tracemalloc.stop()
    del program

    with jaxviz.watch():  # two more compiles remembered
        for b in (32, 64):
            step(params, jax.random.randint(jax.random.PRNGKey(1), (b, models.SEQ), 0, models.VOCAB))
    t0 = time.perf_counter()
    result = jaxviz.recompile_diff("train_step")
    total = time.perf_counter() - t0
    t0 = time.perf_counter()
    diff_programs(result.a, result.b)
    alone = time.perf_counter() - t0
    print(f"  recompile_diff (re-trace both, then diff): {total:.2f} s; the diff alone "
          f"({result.a.eqn_count} vs {result.b.eqn_count} equations): {alone * 1000:.0f} ms")
    print(f"  {result.summary()[:160]}")
    n_nodes, n_groups = result.graph.view(result.expand).visible_counts()
    print(f"  view opened: {n_nodes + n_groups} visible items, {len(result.expand)} open groups")


if __name__ == "__main__":
    main()
