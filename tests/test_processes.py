"""Several processes under JAX's distributed runtime (jax.distributed): the program each
process compiles is compared at compile time, and the one that differs is named.

Two real processes on this machine (CPU, gloo collectives, a free local port), as a
multi-process job runs (https://docs.jax.dev/en/latest/multi_process.html)."""

import socket
import subprocess
import sys
import textwrap

import background
import pytest

from jaxviz import _jax_internals as internals
from jaxviz.recompiles import processes

PROCESS = textwrap.dedent("""
    import functools, os, sys
    os.environ["JAX_PLATFORMS"] = "cpu"
    import jax
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    port, pid = sys.argv[1], int(sys.argv[2])
    jax.distributed.initialize(f"127.0.0.1:{port}", num_processes=2, process_id=pid)
    import jax.numpy as jnp
    import jaxviz

    @jax.jit
    def step(params, batch):
        return (batch @ params["w"]).sum()

    @functools.partial(jax.jit, static_argnames=("mode",))
    def evaluate(x, mode):
        return x.mean() if mode == "mean" else x.max()

    params = {"w": jnp.ones((8, 4))}
    with jaxviz.watch() as log:
        step(params, jnp.ones((32 if pid == 0 else 30, 8)))  # process 1's batch differs
        evaluate(jnp.ones(3), mode="mean")                     # the same program everywhere
        evaluate(jnp.ones(3), mode="mean" if pid == 0 else "max")  # a hit on 0, new on 1
    print(log)
    print(log.view()._repr_html_().split("</div>")[0])
    print("distributed process:", jaxviz._jax_internals.distributed_process().process_id)
    jax.distributed.shutdown()
""")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_two_processes() -> list[subprocess.CompletedProcess]:
    """Both processes of the job, run to their end (a time limit: nothing may hang)."""
    port = str(free_port())
    procs = [background.popen([sys.executable, "-c", PROCESS, port, str(pid)], text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT) for pid in (0, 1)]
    outputs = []
    try:
        for p in procs:
            outputs.append(p.communicate(timeout=180)[0])
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    return [subprocess.CompletedProcess(p.args, p.returncode, out) for p, out in zip(procs, outputs)]


TWO_PROCESSES = background.job(__file__, run_two_processes)  # beside the tests before these


@pytest.fixture(scope="module")
def two_processes():
    """The output of both processes."""
    done = TWO_PROCESSES.result()
    for p in done:
        assert p.returncode == 0, p.stdout
    return [p.stdout for p in done]


def test_each_process_names_the_process_that_compiled_another_shape(two_processes):
    said = ("`step` compiled with `batch: f32[30,8]` on process 1 but `f32[32,8]` on process 0: "
            "processes that compile different programs hang in their collectives")
    for pid, out in enumerate(two_processes):
        assert f"jaxviz: compiles on process {pid} of 2" in out, out
        assert f'<div class="jaxviz-process" style="font-size:12px">compiles on process {pid} of 2' in out
        assert f"warning: {said}" in out, out
        assert "RecompileWarning: step compiled with batch: f32[30,8] on process 1" in out
        assert f"distributed process: {pid}" in out


def test_a_process_that_compiles_alone_is_compared_with_what_process_0_runs(two_processes):
    """Process 0 runs ``evaluate`` from its cache (no compile: it cannot tell); process 1
    compiles another static value and compares it with process 0's latest compile."""
    process_0, process_1 = two_processes
    said = ("`evaluate` compiled with `mode: 'max' (static)` on process 1 but `'mean' (static)` "
            "on process 0")
    assert said in process_1, process_1
    assert said not in process_0
    # evaluate's first compile is the same program on both: nothing said of it
    assert process_0.count("on process 1 but") == 2, process_0  # step, in the log and warned


def test_without_jax_distributed_nothing_is_compared():
    assert internals.distributed_process() is None
    assert processes.current_process() is None
