"""What the trace diff keeps and costs.

1. Memory kept per function for ``%jaxviz diff``: the last ``KEEP`` compiles of each
   function, as the function and its abstract arguments (shapes, dtypes, static values),
   measured with tracemalloc as what is freed when the history is cleared; compared with
   keeping each compile's traced ``Program`` instead (the ratio).
2. Time of ``recompile_diff`` (two re-traces and the diff) and of the diff alone, on an
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

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402

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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--layers", type=int, default=12)
    args = parser.parse_args()
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
