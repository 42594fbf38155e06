"""Devices, RunReport and profile(): on the CPU here; device selection on two CPU devices
(``--xla_force_host_platform_device_count=2``) in a subprocess. Nothing needs a GPU."""

import json
import os
import re
import subprocess
import sys
import textwrap

import background
import jax
import jax.numpy as jnp
import pytest
from IPython.core.interactiveshell import InteractiveShell
from zoo import pallas_matmul

import jaxviz
from jaxviz import devices, profiling
from jaxviz.costs import Cost, program_costs
from jaxviz.devices import DeviceNotFound, resolve_device
from jaxviz.ipython import commands
from jaxviz.profiling import RunReport, profile

NO_GPU = not any(d.platform == "gpu" for d in devices.list_devices())


def mlp(w1, w2, x):
    return jnp.tanh(x @ w1) @ w2


ARGS = (jnp.ones((64, 128)), jnp.ones((128, 32)), jnp.ones((16, 64)))
MLP_FLOPS = 2 * 16 * 64 * 128 + 2 * 16 * 128 * 32


# ---------------------------------------------------------------------- devices
def test_list_and_resolve_devices():
    found = devices.list_devices()
    assert found and found[0] == jax.devices()[0]
    assert resolve_device(None) == devices.default_device()
    assert resolve_device("cpu").platform == "cpu"
    assert resolve_device("CPU:0") == jax.devices("cpu")[0]
    dev = jax.devices("cpu")[0]
    assert resolve_device(dev) is dev


@pytest.mark.skipif(not NO_GPU, reason="a GPU is present")
def test_missing_device_lists_the_devices():
    with pytest.raises(DeviceNotFound) as info:
        resolve_device("gpu:0")
    msg = str(info.value)
    assert "no device 'gpu:0'" in msg and "cpu:0" in msg and "(default)" in msg
    assert len(msg.splitlines()) < 15  # one screen
    assert info.value._render_traceback_()[0].startswith("DeviceNotFound")
    with pytest.raises(DeviceNotFound, match="cpu:99"):
        resolve_device("cpu:99")
    with pytest.raises(DeviceNotFound, match="not a device number"):
        resolve_device("cpu:x")


def test_device_table():
    table = commands.devices_command(None, [])
    text = repr(table)
    assert "cpu:0" in text and "*" in text
    assert "cpu:0" in table._repr_html_()
    rows = table.to_json()
    assert rows[0]["device"] == devices.device_label(jax.devices()[0])
    json.dumps(rows)
    if NO_GPU:
        assert "No accelerator" in text


# ---------------------------------------------------------------------- profile()
def test_profile_reports_times_costs_memory():
    report = profile(mlp, *ARGS, repeats=3)
    assert isinstance(report, RunReport)
    assert {"trace", "lower", "compile", "run", "steady"} <= set(report.timings)
    assert len(report.runs) == 3 and report.timings["steady"] == sorted(report.runs)[1]
    assert report.device == devices.device_label(jax.devices()[0])
    assert report.xla["flops"] == pytest.approx(MLP_FLOPS, rel=0.01)
    assert report.estimate.flops == MLP_FLOPS
    assert report.estimate.transcendentals == 16 * 128
    assert report.memory["argument"] == 4 * (64 * 128 + 128 * 32 + 16 * 64)
    assert report.memory["output"] == 4 * 16 * 32
    assert report.flops_per_second == pytest.approx(report.flops / report.timings["steady"])
    assert jnp.allclose(report.result, mlp(*ARGS))
    if NO_GPU:
        assert "no accelerator found: ran on the CPU" in report.notes
    text = report.text()
    for word in ("device", "compile", "steady state", "XLA cost", "estimate", "memory", "achieved"):
        assert word in text
    bundle = report._repr_mimebundle_()
    assert "jaxviz-run" in bundle["text/html"] and "Run: mlp" in bundle["text/plain"]
    json.dumps(report.to_json())
    from rich.console import Console

    console = Console(record=True, width=120)
    console.print(report)
    assert "XLA cost" in console.export_text()


def test_one_device_report_says_nothing_of_meshes_or_collectives():
    """One device: no collectives in the HLO, no mesh, memory not "per device", the FLOPs
    XLA's own count; the program's summary unchanged."""
    report = profile(mlp, *ARGS, repeats=0)
    assert report.collectives is not None and report.collectives.items == []
    assert report.n_devices == 1 and report.mesh == ""
    assert report.input_shardings == [None, None, None]  # one device: nothing is split
    assert report.flops == report.xla["flops"]
    labels = [k for k, _ in report.rows()]
    assert "collectives" not in labels and "mesh" not in labels and "memory" in labels
    assert "collective" not in report.summary() and "mesh" not in report.summary()
    program = jaxviz.trace(mlp, *ARGS)
    profiling.attach_report(program, report)
    assert program.device and program.mesh == "" and "all-" not in program.summary()
    assert not any(n.params.get("sharding") for n in program.graph.nodes)
    assert all(g.collectives == 0 for g in program.graph.groups)


def test_profile_static_arguments_and_jitted_functions():
    def scaled(x, n, *, k):
        return x * n * k

    x = jnp.ones(4)
    r = profile(scaled, x, 3, k=2, static_argnums=1, static_argnames="k", repeats=1)
    assert jnp.allclose(r.result, 6.0)
    jitted = jax.jit(scaled, static_argnums=1, static_argnames="k")
    r = profile(jitted, x, 5, k=2, repeats=0)
    assert jnp.allclose(r.result, 10.0) and "steady" not in r.timings


def test_profile_negative_static_argnums_count_from_the_end():
    """As in jit (and ``jaxviz.trace``): -1 is the last positional argument."""
    def tiled(x, reps, n):
        return jnp.tile(x, reps) * n

    x = jnp.ones(2)
    for device in (None, "cpu"):  # also when the traced arguments are placed on a device
        r = profile(tiled, x, 3, 2.0, static_argnums=-2, repeats=1, device=device)
        assert r.result.shape == (6,) and jnp.allclose(r.result, 2.0)
        r = profile(jax.jit(tiled, static_argnums=(-2,)), x, 3, 2.0, repeats=1, device=device)
        assert r.result.shape == (6,)
    r = profile(lambda x, n: jnp.zeros(n) + x.sum(), x, 4, static_argnums=-1, repeats=0)
    assert r.result.shape == (4,) and jnp.allclose(r.result, 2.0)


def test_loops_use_the_estimate():
    w = jnp.ones((32, 32))

    def rnn(h):
        return jax.lax.scan(lambda c, _: (c @ w, None), h, None, length=10)[0]

    r = profile(rnn, w, repeats=0)
    assert r.loops == 1 and r.flops_source == "jaxviz estimate"
    assert r.flops == 10 * 2 * 32 ** 3
    assert "loop" in r.text()


def test_an_xla_count_of_one_flop_per_matmul_multiply_add_is_named_and_not_used():
    """XLA's GPU cost analysis counts a matrix product it hands to cuBLAS at one FLOP per
    multiply-add (jax-ml/jax#22249). The figures are demo 05's MLP as run on an H200
    (JAX 0.11.2): XLA 540,016,640 FLOPs against 1,074,397,184 by hand and by jaxviz, whose
    matmuls are 1,073,741,824. FLOP/s must then use jaxviz's count, and say why."""
    def report(xla_flops: float, matmul_flops: float = 1_073_741_824) -> RunReport:
        return RunReport("mlp", "gpu:0", "NVIDIA H200", "gpu", timings={"steady": 1e-3},
                         xla={"flops": xla_flops}, estimate=Cost(1_074_397_184, 655_360, 0),
                         matmul_flops=matmul_flops)

    on_gpu = report(540_016_640)
    assert on_gpu.xla_counts_multiply_adds_once and on_gpu.flops_source == "jaxviz estimate"
    assert on_gpu.flops == 1_074_397_184
    assert "XLA counts each matmul multiply-add as one FLOP here" in on_gpu.text()
    as_on_cpu = report(1_074_397_184)  # the CPU's count: two per multiply-add
    assert not as_on_cpu.xla_counts_multiply_adds_once and as_on_cpu.flops_source == "XLA"
    # A count that is merely different (not half the matmuls short) is XLA's to give.
    assert report(300_000_000).flops_source == "XLA"
    assert report(540_016_640, matmul_flops=0).flops_source == "XLA"


class CompiledOnH200:
    """What ``compiled.cost_analysis()`` gave for two Pallas matmul kernels compiled for an
    H200 (JAX 0.11.2, 2026-11-26): XLA gives -1 per custom call it cannot see into. Only
    a GPU compiles Pallas to such calls, so the figures stand in for it here."""

    def cost_analysis(self):
        return {"flops": -2.0, "bytes accessed": -2.0, "optimal_seconds": -1.0}


def test_negative_xla_counts_are_uncounted_not_counts():
    xla, uncounted = profiling.xla_cost(CompiledOnH200())
    assert xla == {} and uncounted == {"flops": -2.0, "bytes accessed": -2.0}
    r = RunReport("two_layers", "gpu:0", "NVIDIA H200", "gpu", timings={"steady": 173e-6}, xla=xla,
                  estimate=Cost(12_582_912, 0, 802_816), notes=[profiling.uncounted_note(uncounted)])
    assert r.flops_source == "jaxviz estimate" and r.flops == 12_582_912
    assert r.flops_per_second and r.flops_per_second > 0 and r.bytes_per_second is None
    text = r.text()
    assert "FLOPs not counted" in text and "-2" not in text.replace("flops -2, bytes accessed -2", "")
    assert "XLA could not count part of this program (flops -2, bytes accessed -2" in text
    assert "× XLA's count" not in text


def test_matmul_flops_are_the_products_share_of_the_estimate():
    def layer(x, w):
        return jnp.tanh(x @ w).sum()

    costs = program_costs(jax.make_jaxpr(layer)(jnp.ones((8, 16)), jnp.ones((16, 4))))
    assert costs.matmul_flops == 2 * 8 * 16 * 4 < costs.flops


def test_fmt_seconds_is_the_one_time_format():
    """Run reports, the compile log and the live monitor all write times with it."""
    from jaxviz import text, widgets
    from jaxviz.render import recompiles

    assert [profiling.fmt_seconds(s) for s in (None, 12e-6, 3.44e-3, 1.254)] == \
        ["—", "12 µs", "3.4 ms", "1.25 s"]
    assert recompiles.fmt_seconds is profiling.fmt_seconds is widgets.fmt_seconds is text.fmt_seconds


def test_profile_is_exported():
    assert jaxviz.profile is profile and "profile" in jaxviz.__all__


# ---------------------------------------------------------------------- the magic
@pytest.fixture(scope="module")
def shell():
    """The shared IPython shell; what these tests bind is removed afterwards."""
    ip = InteractiveShell.instance()
    before = dict(ip.user_ns)
    loaded = "jaxviz" in ip.extension_manager.loaded
    if not loaded:
        ip.run_line_magic("load_ext", "jaxviz")
    ip.run_cell("import jax, jax.numpy as jnp\nx = jnp.ones((8, 16)); w = jnp.ones((16, 4))\n")
    yield ip
    for name in set(ip.user_ns) - set(before):
        del ip.user_ns[name]
    for name, value in before.items():
        if not name.startswith("_") and name not in ("In", "Out") and ip.user_ns.get(name) is not value:
            ip.user_ns[name] = value
    if not loaded:
        ip.run_line_magic("unload_ext", "jaxviz")


def test_cell_time_option_and_run_section(shell, capsys):
    r = shell.run_cell("%%jaxpr --time --repeat 3 --text -o prog\nh = jnp.tanh(x @ w)\ns = h.sum()\n")
    assert r.error_in_exec is None
    prog = shell.user_ns["prog"]
    report = prog.run_report
    assert report is not None and len(report.runs) == 3
    assert {"steady", "run", "compile"} <= set(prog.timings)
    out = capsys.readouterr().out
    assert "steady" in out.splitlines()[0]  # the summary line
    assert re.fullmatch(r"In\[\d+\]", prog.name)  # named after the cell's prompt
    assert f"Run: {prog.name}" in out and "XLA cost" in out
    assert report.estimate.flops == 2 * 8 * 16 * 4 + (8 * 4 - 1)
    html = prog._repr_mimebundle_()["text/html"]
    assert "jaxviz-run" in html


def test_cell_without_time_has_no_steady_state(shell, capsys):
    r = shell.run_cell("%%jaxpr --quiet -o prog2\nh2 = x * 2\n")
    assert r.error_in_exec is None
    prog = shell.user_ns["prog2"]
    assert "steady" not in prog.timings and prog.run_report.runs == []
    assert "FLOP" in capsys.readouterr().out


@pytest.mark.skipif(not NO_GPU, reason="a GPU is present")
def test_cell_on_missing_device_binds_nothing(shell):
    shell.user_ns.pop("nope", None)
    r = shell.run_cell("%%jaxpr --device gpu:0\nnope = x + 1\n")
    assert isinstance(r.error_in_exec, DeviceNotFound)
    assert "nope" not in shell.user_ns


def test_line_magic_time(shell):
    shell.run_cell("def f(a, b):\n    return a @ b\n")
    r = shell.run_cell("%jaxpr --time --repeat 2 --quiet -o pf f(x, w)")
    assert r.error_in_exec is None
    assert shell.user_ns["pf"].run_report.estimate.flops == 2 * 8 * 16 * 4


def test_jaxviz_devices_command(shell):
    r = shell.run_cell("%jaxviz devices")
    assert r.error_in_exec is None and "cpu:0" in repr(r.result)


# ---------------------------------------------------------------------- two CPU devices
TWO_DEVICES = textwrap.dedent("""
    import json
    import jax, jax.numpy as jnp
    from IPython.core.interactiveshell import InteractiveShell
    import jaxviz
    from jaxviz.cells import stage_cell
    from jaxviz.devices import DeviceNotFound

    out = {"devices": [str(d) for d in jax.devices()]}
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "jaxviz")
    ip.run_cell("import jax.numpy as jnp\\nx = jnp.ones((8, 16)); w = jnp.ones((16, 4)); n = 2\\n")
    r = ip.run_cell("%%jaxpr --device cpu:1 --time --repeat 2 --quiet -o prog\\nh = jnp.tanh(x @ w) * n\\n")
    ns = ip.user_ns
    out["cell_error"] = repr(r.error_in_exec)
    out["h_devices"] = sorted(str(d) for d in ns["h"].devices())
    out["x_devices"] = sorted(str(d) for d in ns["x"].devices())  # the user's x is not moved
    out["report_device"] = ns["prog"].run_report.device
    out["program_device"] = ns["prog"].device
    out["steady"] = "steady" in ns["prog"].timings
    out["notes"] = ns["prog"].run_report.notes

    r = ip.run_cell("%%jaxpr --device cpu:1 --quiet\\nz = jnp.arange(4.0) * 2\\n")  # no array inputs
    out["z_devices"] = sorted(str(d) for d in ns["z"].devices())

    r = ip.run_cell("%%jaxpr --quiet -o prog0\\nh0 = x + 1\\n")  # JAX's default device
    out["default_devices"] = sorted(str(d) for d in ns["h0"].devices())
    out["default_report"] = ns["prog0"].run_report.device

    r = ip.run_cell("%%jaxpr --device cpu:2\\nmissing = x + 1\\n")
    out["missing_error"] = type(r.error_in_exec).__name__
    out["missing_message"] = str(r.error_in_exec)
    out["missing_bound"] = "missing" in ns

    staged = stage_cell("y = x @ w", ns, device="cpu:1")
    out["staged_args"] = sorted(str(d) for a in staged.args for d in a.devices())

    report = jaxviz.profile(lambda a, b: a @ b, ns["x"], ns["w"], device="cpu:1", repeats=2)
    out["profile_device"] = report.device
    out["profile_result"] = sorted(str(d) for d in report.result.devices())
    out["table"] = repr(ip.run_line_magic("jaxviz", "devices"))
    print("RESULT " + json.dumps(out))
""")


@pytest.fixture(scope="module")
def two_devices():
    env = dict(os.environ)
    env["JAX_PLATFORMS"] = "cpu"
    env["XLA_FLAGS"] = background.with_host_devices(2)
    proc = subprocess.run([sys.executable, "-c", TWO_DEVICES], env=env, capture_output=True, text=True,
                          timeout=180)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    assert lines, proc.stdout[-3000:] + proc.stderr[-3000:]
    return json.loads(lines[-1][len("RESULT "):])


def test_two_devices_device_option(two_devices):
    out = two_devices
    assert len(out["devices"]) == 2
    assert out["cell_error"] == "None"
    assert out["h_devices"] == ["cpu:1"]  # str(jax.Device)
    assert out["x_devices"] == ["cpu:0"]  # the namespace's x stays where it was
    assert out["report_device"] == "cpu:1" and out["program_device"].startswith("cpu:1")
    assert out["steady"]
    # cpu:1 was asked for explicitly: no "no accelerator found" note (nor any other: the CPU
    # backend gives a cost analysis and the cell has no loops)
    assert out["notes"] == []
    assert out["z_devices"] == ["cpu:1"]
    assert out["default_report"] == "cpu:0" and out["default_devices"] == ["cpu:0"]
    assert out["staged_args"] == ["cpu:1", "cpu:1"]


def test_two_devices_missing_device_and_profile(two_devices):
    out = two_devices
    assert out["missing_error"] == "DeviceNotFound" and not out["missing_bound"]
    assert "cpu:0" in out["missing_message"] and "cpu:1" in out["missing_message"]
    assert out["profile_device"] == "cpu:1" and out["profile_result"] == ["cpu:1"]
    assert "cpu:0" in out["table"] and "cpu:1" in out["table"]


def test_a_pallas_kernel_in_interpret_mode_is_a_loop_xla_counts_once():
    """Interpret mode compiles the kernel into a loop over its grid, whose body XLA counts
    once: the report's FLOPs are jaxviz's, which count every grid point."""
    x, y = jnp.ones((16, 32)), jnp.ones((32, 8))
    r = profile(lambda x, y: pallas_matmul(x, y, (2, 2)), x, y, repeats=0)
    assert r.loops == 1 and r.flops_source == "jaxviz estimate" and r.flops == 2 * 16 * 8 * 32
