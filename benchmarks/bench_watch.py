"""What ``jaxviz.watch()`` costs.

1. Steps per second of a small, dispatch-bound jitted step (tens of microseconds per call)
   with and without a watch active, interleaved in one run, as a ratio (target >= 0.98).
   A watch adds nothing to a cache hit: JAX reports only misses to its listeners.
2. The post-cell stale-globals check with 100 tracked functions (target < 5 ms).
3. The recompile notice under cells: what the post-cell hook costs a cell that compiled
   nothing (its jitted step hit the cache), notice on vs off (target: no difference).

Times 1 and 3 are this process's CPU time: on a shared machine wall time swings with
other processes' load far more than the effects measured.

Usage: ``.venv/bin/python benchmarks/bench_watch.py [--steps N] [--rounds R]``.
Prints its figures; not a unit test.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import time

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import jaxviz  # noqa: E402


def _steps_per_second(step, state, batch, steps: int) -> float:
    """Steps per second of this process's CPU time (all its threads): on a machine shared
    with other processes, wall time swings with their load (ratios of 0.95 to 1.28 for
    the same code), CPU time much less."""
    t0 = time.process_time()
    for _ in range(steps):
        state = step(state, batch)
    jax.block_until_ready(state)
    return steps / (time.process_time() - t0)


def bench_dispatch(steps: int, rounds: int) -> float:
    @jax.jit
    def step(state, batch):
        w, b = state
        x, y = batch
        err = x @ w + b - y
        return w - 0.01 * x.T @ err, b - 0.01 * err.mean()

    state = (jnp.zeros((8,)), jnp.zeros(()))
    batch = (jnp.ones((4, 8)), jnp.ones((4,)))
    _steps_per_second(step, state, batch, steps)  # compile and warm up
    plain, watched = [], []
    log = jaxviz.watch()
    for _ in range(rounds):  # interleaved, so that drift hits both sides alike
        plain.append(_steps_per_second(step, state, batch, steps))
        with log:
            watched.append(_steps_per_second(step, state, batch, steps))
    p, w = statistics.median(plain), statistics.median(watched)
    ratio = w / p
    print(f"dispatch-bound step: {1e6 / p:.1f} µs of CPU time/step; without watch {p:,.0f} steps/s, "
          f"with watch {w:,.0f} steps/s (median of {rounds} interleaved rounds of {steps} steps)")
    print(f"  ratio with/without watch: {ratio:.3f} (target >= 0.98) "
          f"{'OK' if ratio >= 0.98 else 'BELOW TARGET'}; compiles seen while watching: {len(log.events)}")
    return ratio


def bench_stale_check(functions: int = 100, repeats: int = 200) -> float:
    ns: dict = {"jax": jax, "jnp": jnp}
    src = "\n".join(
        f"g{i} = {i}\nw{i} = jnp.full((4,), {i}.0)\ndef h{i}(x):\n    return x * g{i} + w{i}\n"
        for i in range(functions))
    exec(compile(src, "<bench-cell>", "exec"), ns)
    jitted = [jax.jit(ns[f"h{i}"]) for i in range(functions)]
    with jaxviz.watch() as log:
        for f in jitted:
            f(jnp.ones(4))  # trace + compile: each bakes in g_i and w_i
        for i in range(0, functions, 10):
            ns[f"g{i}"] = -1  # 10 stale scalars
            ns[f"w{i}"] = jnp.full((4,), -1.0)  # 10 stale arrays
        gc.collect()  # measure the check, not a collection of the compiles' garbage
        t0 = time.perf_counter()
        found = log.check()  # the first check after the changes compares values
        first = (time.perf_counter() - t0) * 1e3
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            log.check(report=False)
            times.append(time.perf_counter() - t0)
    med = statistics.median(times) * 1e3
    p95 = sorted(times)[int(0.95 * len(times))] * 1e3
    print(f"stale-globals check, {functions} tracked functions ({2 * functions} baked values, "
          f"{len(found)} stale): first check after the change {first:.3f} ms, then median "
          f"{med:.3f} ms, p95 {p95:.3f} ms (target < 5 ms) "
          f"{'OK' if max(med, first) < 5 else 'ABOVE TARGET'}")
    return med


def bench_cell_notice(cells: int = 20000, rounds: int = 10) -> float:
    """The session's pre/post-cell hooks around a cell that compiled nothing."""
    from IPython.core.interactiveshell import InteractiveShell

    from jaxviz.ipython import recompiles

    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "jaxviz")
    try:
        shell.run_cell("import jax, jax.numpy as jnp\nstep = jax.jit(lambda x: x + 1)\n"
                       "_ = step(jnp.ones(3))\n")
        pre, post = recompiles._HOOKS[id(shell)]
        step, x = shell.user_ns["step"], jnp.ones(3)

        def per_cell() -> float:  # CPU time of this process: other processes' load aside
            t0 = time.process_time()
            for _ in range(cells):
                pre()
                step(x)  # the cell's work: a cache hit
                post()
            return (time.process_time() - t0) / cells

        on, off = [], []
        for r in range(rounds):  # interleaved, the order alternating: drift hits both alike
            for enabled in ((True, False) if r % 2 else (False, True)):
                recompiles.NOTICE.enabled = enabled
                (on if enabled else off).append(per_cell())
        recompiles.NOTICE.enabled = True
    finally:
        shell.run_line_magic("unload_ext", "jaxviz")
    t_on, t_off = min(on), min(off)  # the least disturbed round of each (a shared machine)
    ratio = t_off / t_on
    print(f"cell that compiled nothing (a cache hit + jaxviz's pre/post-cell hooks): notice on "
          f"{t_on * 1e6:.2f} µs, off {t_off * 1e6:.2f} µs (best of {rounds} rounds of {cells}); "
          f"ratio off/on {ratio:.3f} "
          f"(target >= 0.98) {'OK' if ratio >= 0.98 else 'BELOW TARGET'}")
    return ratio


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    print(f"jax {jax.__version__} on {jax.devices()[0].platform}")
    bench_dispatch(args.steps, args.rounds)
    bench_stale_check()
    bench_cell_notice()


if __name__ == "__main__":
    main()
