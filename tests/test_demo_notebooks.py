"""The demo notebooks, executed top to bottom in a fresh Jupyter kernel (a separate
process, via nbclient, with demo_notebooks/ as its working directory; started beside
the tests before this module's: ``tests/background.py``), then checked.

A notebook fails if any cell shows an error, except cells tagged ``raises-exception``
(which must then raise the error they demonstrate). Beyond that, each notebook prints a
few machine-checkable lines (``accuracy 0.958``, ``sgd_update compiles 2, recompiles 1``)
and shows graphs whose MIME bundles are checked here.

Each notebook runs once per session (cached); the whole module takes about a minute on
two CPU cores.
"""

from __future__ import annotations

import re
from functools import partial
from pathlib import Path
from typing import Any

import background
import nbformat
import pytest
from execute_notebook import execute_notebook

from jaxviz.graph import MIME_TYPE
from jaxviz.render.payload import decode_graph

DEMO_DIR = Path(__file__).resolve().parent.parent / "demo_notebooks"
NOTEBOOKS = sorted(p.name for p in DEMO_DIR.glob("[0-9][0-9]_*.ipynb"))
EXPECTED = ["01_tour.ipynb", "02_jit_pitfalls.ipynb", "03_training_mlp.ipynb",
            "04_flax_optax.ipynb", "05_accelerators.ipynb", "06_sharding.ipynb"]
RAISES = "raises-exception"


def execute(name: str) -> Any:
    return execute_notebook(nbformat.read(DEMO_DIR / name, as_version=4), timeout=300,
                                       cwd=DEMO_DIR, allow_errors=True)


# Each notebook runs once per session, beside the tests before this module's.
EXECUTED = {name: background.job(__file__, partial(execute, name)) for name in EXPECTED}


def executed(name: str) -> Any:
    """The notebook after running it in a fresh ``python3`` kernel."""
    return EXECUTED[name].result()


# ---------------------------------------------------------------------- helpers
def code_cells(nb: Any) -> list[Any]:
    return [c for c in nb.cells if c.cell_type == "code"]


def cell(nb: Any, marker: str) -> Any:
    """The one code cell whose source contains ``marker``."""
    found = [c for c in code_cells(nb) if marker in c.source]
    assert len(found) == 1, f"{len(found)} cells contain {marker!r}"
    return found[0]


def text(c: Any, streams: tuple[str, ...] = ("stdout",)) -> str:
    """What a cell printed (the given streams) plus the text of its results."""
    parts = []
    for o in c.outputs:
        if o.output_type == "stream" and o.name in streams:
            parts.append(o.text)
        elif o.output_type in ("execute_result", "display_data"):
            parts.append(o.data.get("text/plain", ""))
    return "".join(parts)


def payloads(c: Any) -> list[dict[str, Any]]:
    """The jaxviz graph payloads (``application/vnd.jaxviz+json``) a cell displayed, with
    big graphs inflated as the browser does."""
    return [{**o.data[MIME_TYPE], "graph": decode_graph(o.data[MIME_TYPE]["graph"])}
            for o in c.outputs
            if o.output_type in ("display_data", "execute_result") and MIME_TYPE in o.data
            and o.data[MIME_TYPE].get("schema") == "jaxviz.program"]


def payload(c: Any) -> dict[str, Any]:
    found = payloads(c)
    assert len(found) == 1, f"expected one graph in cell {c.source[:60]!r}, got {len(found)}"
    return found[0]


def group_names(p: dict[str, Any]) -> list[str]:
    return [g["name"] for g in p["graph"]["groups"]]


def parent_name(p: dict[str, Any], name: str) -> str:
    groups = p["graph"]["groups"]
    g = next(g for g in groups if g["name"] == name)
    return groups[g["parent"]]["name"]


def input_kinds(p: dict[str, Any]) -> dict[str, str]:
    return {i["name"]: i["kind"] for i in p["inputs"]}


def number_after(label: str, s: str) -> float:
    m = re.search(re.escape(label) + r"\s*([-+0-9.eE]+)", s)
    assert m, f"no {label!r} line in:\n{s}"
    return float(m.group(1))


def error_of(c: Any) -> Any:
    errs = [o for o in c.outputs if o.output_type == "error"]
    assert errs, f"cell did not raise: {c.source[:80]!r}"
    return errs[-1]


# ---------------------------------------------------------------------- every notebook
def test_all_demos_present():
    assert NOTEBOOKS == EXPECTED


@pytest.mark.parametrize("name", EXPECTED)
def test_committed_without_outputs(name):
    nb = nbformat.read(DEMO_DIR / name, as_version=4)
    nbformat.validate(nb)
    for c in code_cells(nb):
        assert not c.outputs and c.execution_count is None, f"{name}: outputs committed in {c.source[:60]!r}"
    assert nb.metadata["kernelspec"]["name"] == "python3"


@pytest.mark.parametrize("name", EXPECTED)
def test_runs_without_unexpected_errors(name):
    nb = executed(name)
    for c in code_cells(nb):
        errors = [o for o in c.outputs if o.output_type == "error"]
        tagged = RAISES in c.metadata.get("tags", [])
        if tagged:
            assert errors, f"{name}: cell tagged {RAISES} did not raise:\n{c.source}"
        else:
            assert not errors, (f"{name}: error in cell:\n{c.source}\n---\n"
                                f"{errors[0].ename}: {errors[0].evalue}" if errors else "")
    assert all(c.execution_count is not None for c in code_cells(nb)), f"{name}: not every cell ran"


@pytest.mark.parametrize("name", EXPECTED)
def test_every_graph_cell_shows_a_graph(name):
    """Each ``%jaxpr``/``%%jaxpr`` cell that should draw (no --text/--quiet, no error) carries the
    payload for the JupyterLab renderer and an SVG or HTML fallback."""
    nb = executed(name)
    for c in code_cells(nb):
        if ("%jaxpr" not in c.source or "--text" in c.source or "--quiet" in c.source
                or RAISES in c.metadata.get("tags", [])):
            continue
        graphs = [o for o in c.outputs if o.output_type in ("display_data", "execute_result")
                  and MIME_TYPE in o.data]
        assert graphs, f"{name}: no graph in {c.source[:60]!r}"
        assert "text/html" in graphs[0].data and "text/plain" in graphs[0].data


# ---------------------------------------------------------------------- 01 tour
def test_01_tour():
    nb = executed("01_tour.ipynb")
    first = payload(cell(nb, "y = 2*x*x + 3*x + 3\ny"))
    assert first["graph"]["groups"][0]["n_eqns"] == 5  # mul, mul, mul, add, add
    assert input_kinds(first) == {"x": "traced"}
    # The program is named after the cell's prompt; the cell is the root, no wrapper group.
    assert len(group_names(first)) == 1 and re.fullmatch(r"In\[\d+\]", group_names(first)[0])
    prims = sorted(n["primitive"] for n in first["graph"]["nodes"] if n["kind"] == "eqn")
    assert prims == ["add", "add", "mul", "mul", "mul"]
    assert "ArrayImpl 30.0" in text(cell(nb, "print(type(y).__name__, y)"))
    assert "= mul" in text(cell(nb, "%%jaxpr --text"))

    power = payload(cell(nb, "%jaxpr power("))
    assert input_kinds(power)["n"] == "static" and power["graph"]["groups"][0]["n_eqns"] == 3

    grad = payload(cell(nb, "%jaxpr --expand all jax.grad(f2"))
    assert {"forward", "backward"} <= set(group_names(grad))
    assert all(i["aval"]["weak_type"] for i in grad["inputs"])  # Python floats
    assert "(df/dx, df/dy) = (Array(40." in text(cell(nb, "def f2("))

    logreg = payload(cell(nb, "%jaxpr --expand 2 jax.grad(loss"))
    assert input_kinds(logreg) == {"W": "traced", "b": "traced", "inputs": "captured",
                                   "targets": "captured"}
    assert {"predict", "sigmoid"} <= set(group_names(logreg))

    assert "[11. 20. 29.]" in text(cell(nb, "print(convolve(x, w))"))
    unrolled = payload(cell(nb, "%jaxpr convolve(x, w)"))
    assert sum(n["primitive"] == "dot_general" for n in unrolled["graph"]["nodes"]) == 3
    for marker, w_shape in (("%jaxpr auto_batch_convolve(xs, ws)", [2, 3]),
                            ("%jaxpr batch_convolve_v3(xs, w)", [3])):
        p = payload(cell(nb, marker))
        assert "vmap" in group_names(p)
        shapes = {i["name"]: i["aval"]["shape"] for i in p["inputs"]}
        assert shapes == {"x": [2, 5], "w": w_shape}
    assert text(cell(nb, "batch_convolve_v3 = ")).count("[11. 20. 29.]") == 2

    assert "inconsistent sizes" in error_of(cell(nb, "jax.vmap(lambda a1, a2: a1 * a2)(a, b)")).evalue
    conv = payload(cell(nb, "%jaxpr --expand all jnp.convolve("))
    assert "conv_general_dilated" in {n["primitive"] for n in conv["graph"]["nodes"]}
    assert "scatter" in {n["primitive"] for n in payload(cell(nb, "updated = arr.at[0].set(10)"))["graph"]["nodes"]}
    assert text(cell(nb, "print(updated, past_the_end)")).strip() == "[10  1  2  3  4  5  6  7  8  9] 9"

    cond = payload(cell(nb, "%jaxpr --expand all clip_or_negate(v)"))
    assert {"branch 0", "branch 1", "keep", "negate"} <= set(group_names(cond))
    assert [n for n in group_names(cond) if "(cond" in n]  # named after its branches' functions
    nodes = cond["graph"]["nodes"]
    cond_node = next(n["id"] for n in nodes if n["primitive"] == "cond")
    feeding = {nodes[e["src"]]["primitive"] for e in cond["graph"]["edges"] if e["dst"] == cond_node}
    assert "convert_element_type" in feeding  # the predicate is drawn flowing into the cond
    loop = payload(cell(nb, "%jaxpr --expand all double_until(v, 100.0)"))
    assert {"double (while: not_done)", "not_done", "double"} <= set(group_names(loop))  # named after its body
    assert parent_name(loop, "double") == "body_jaxpr"
    fori = payload(cell(nb, "%jaxpr --expand all weighted_sum(v, 4)"))
    assert "add_term" in group_names(fori)
    scan = payload(cell(nb, "%jaxpr --expand 1 cumulative_sum(v)"))
    assert parent_name(scan, "step") == "step ×3 (scan)"
    step_id = group_names(scan).index("step")
    assert step_id not in scan["expanded"]  # --expand 1: the body is one box
    printed = text(cell(nb, 'print("cond      "'))
    assert "while_loop [32. 64. 96.]" in printed and "[1., 3., 6.]" in printed

    listing = text(cell(nb, "print(prog.summary())"))
    assert "params['w']: traced f32[3,2]" in listing and "batch: traced f32[4,3]" in listing


# ---------------------------------------------------------------------- 02 pitfalls
def test_02_jit_pitfalls():
    nb = executed("02_jit_pitfalls.ipynb")
    add_g = payload(cell(nb, "%jaxpr add_g(3.0)"))
    assert input_kinds(add_g)["g"] == "captured"
    stale = cell(nb, "g = 10.0  # update the global")
    assert "jit_add_g(4.0) = 4.0   plain Python add_g(4.0) = 14.0" in text(stale)
    assert "stale: True" in text(stale)
    warning = text(stale, streams=("stderr",))  # the tracker's check after every cell
    # shown under the cell (HTML with <code>, text without raw Markdown backticks)
    assert "add_g was compiled with global g = 0.0" in warning and "10.0" in warning
    assert any("<code>add_g</code> was compiled with global <code>g = 0.0</code>"
               in o.get("data", {}).get("text/html", "") for o in stale.outputs)
    assert "[14.]" in text(cell(nb, "jit_add_g(jnp.array([4.0]))"))
    assert input_kinds(payload(cell(nb, "%jaxpr add(4.0, g)"))) == {"x": "traced", "g": "traced"}

    first_call = text(cell(nb, 'print("first call  ->"'))
    assert "Running f():" in first_call and "JitTracer" in first_call
    assert "Running f()" not in text(cell(nb, 'print("second call ->"'))
    f_program = payload(cell(nb, "%jaxpr -o f_program f(x, y)"))
    assert "Running f():" in f_program["trace_output"]
    assert "Running f():" in text(cell(nb, "trace-time output captured by jaxviz"))
    assert text(cell(nb, "def f_debug(")).count("result = [") == 2
    assert "global_list: [JitTracer" in text(cell(nb, "global_list = []"))

    assert error_of(cell(nb, "def negate_if(x, neg)")).ename == "TracerBoolConversionError"
    explained = error_of(cell(nb, "%jaxpr negate_if(1, True)"))
    assert explained.ename == "TracerBoolConversionError"
    assert any("static" in line for line in explained.traceback)
    explain = text(cell(nb, "explanation = jaxviz.explain(exc)"))
    assert "`neg`" in explain and "[static]" in explain
    # the explainer, shown above the traceback of any cell after %load_ext jaxviz
    assert "JAX needed a Python bool here, but `neg`" in text(cell(nb, "def negate_if(x, neg)"))
    static = payload(cell(nb, "%jaxpr negate_if_static(1, neg=True)"))
    assert input_kinds(static)["neg"] == "static"
    cond = payload(cell(nb, "%jaxpr --expand all negate_if_cond(1, True)"))
    assert input_kinds(cond)["neg"] == "traced" and {"branch 0", "branch 1"} <= set(group_names(cond))

    assert error_of(cell(nb, "def flatten_jnp(x)")).ename == "TypeError"
    size = payload(cell(nb, "%jaxpr size_jnp("))
    assert [n["primitive"] for n in size["graph"]["nodes"] if n["kind"] == "eqn"] == ["reduce_prod"]
    assert "new_sizes=(6,)" in text(cell(nb, "%jaxpr --text flatten_np("))
    assert "[1. 1. 1. 1. 1. 1.]" in text(cell(nb, "def flatten_np(x)"))

    assert error_of(cell(nb, "jax.jit(get_negatives)(x)")).ename == "NonConcreteBooleanIndexError"
    assert error_of(cell(nb, "negatives = x[x < 0]")).ename == "NonConcreteBooleanIndexError"
    assert "sum of negatives: -3.79" in text(cell(nb, 'print("sum of negatives:"'))
    assert "compiled versions of power: 4" in text(cell(nb, "for n in [1, 2, 3, 4, 2, 3]"))
    power_log = text(cell(nb, "%jaxviz recompiles power"))
    assert "compiled for the 4th time" in power_log and "static argument `n` changed 3 → 4" in power_log
    assert input_kinds(payload(cell(nb, "%jaxpr power(")))["n"] == "static"


# ---------------------------------------------------------------------- 03 MLP
def test_03_training_mlp():
    nb = executed("03_training_mlp.ipynb")
    step = payload(cell(nb, "%jaxpr --expand 3 sgd_update("))
    names = group_names(step)
    assert "vmap" in names and "model_forward" in names
    assert input_kinds(step)["params[0][0]"] == "traced"

    monitor = cell(nb, "%jaxviz watch")
    assert any("application/vnd.jupyter.widget-view+json" in o.get("data", {}) for o in monitor.outputs)

    report = text(cell(nb, 'print(f"sgd_update compiles'))
    assert "sgd_update compiles 2, recompiles 1" in report
    cause = next(line for line in report.splitlines() if line.startswith("cause:"))
    assert "`x` changed shape (64, 64) → (29, 64)" in cause and "`y`" in cause
    assert "Ragged last batch" in report and "Pad the last batch" in report
    log = cell(nb, "%jaxviz recompiles sgd_update")
    assert "compiled for the 2nd time" in text(log)

    assert "sgd_update_masked compiles 1, recompiles 0" in text(cell(nb, "def padded_batches("))
    assert number_after("accuracy", text(cell(nb, 'print(f"accuracy {acc:.3f}")'))) > 0.9


# ---------------------------------------------------------------------- 04 Flax
def test_04_flax_optax():
    nb = executed("04_flax_optax.ipynb")
    apply = payload(cell(nb, "%jaxpr --static train --expand 3 evaluate("))
    assert [g for g in group_names(apply) if g.startswith(("layer", "norm"))] == \
        ["layer1", "norm1", "layer2", "norm2", "layer3"]
    assert input_kinds(apply)["train"] == "static"

    assert payload(cell(nb, "%jaxpr -o step_program train_step(")) is not None
    by_layer = payload(cell(nb, "step_program.expand = [forward_model.id]"))
    groups = by_layer["graph"]["groups"]
    visible = [groups[c]["name"] for gid in by_layer["expanded"] for c in groups[gid]["groups"]]
    for module in ("layer1", "dropout1", "norm1", "layer2", "dropout2", "norm2", "layer3"):
        assert module in visible
    listing = text(cell(nb, "def show(gid"))
    assert "module groups: MLP, dropout1, dropout2, layer1, layer2, layer3, norm1, norm2" in listing
    assert "backward (phase" in listing and "update (phase" in listing

    training = text(cell(nb, "EPOCHS = 10"))
    assert "train_step compiled 1 time(s)" in training
    assert number_after("accuracy", training) > 0.9

    new_tx = text(cell(nb, "state_new_tx = state.replace(tx="))
    assert "new tx: train_step recompiles 1" in new_tx and "['pytree_structure']" in new_tx
    python_float = text(cell(nb, "def with_learning_rate("))
    assert "python float: train_step recompiles 1" in python_float
    assert "['weak_type']" in python_float
    assert "state.opt_state.hyperparams['learning_rate']" in python_float
    assert "float32 array: train_step recompiles 0" in text(cell(nb, "jnp.asarray(1e-4, dtype=jnp.float32)"))
    assert "compiled for the 3rd time" in text(cell(nb, "%jaxviz recompiles train_step"))


# ---------------------------------------------------------------------- 05 accelerators
def test_05_accelerators():
    nb = executed("05_accelerators.ipynb")
    table = text(cell(nb, "%jaxviz devices"))
    assert "cpu:0" in table and "default device" in table
    listed = text(cell(nb, "all_devices = list_devices()"))
    n_devices = number_after("devices", listed)
    assert n_devices >= 2 and "cpu:1" in listed  # the two virtual CPU devices at least

    layer = payload(cell(nb, "%%jaxpr --time -o layer_program"))
    assert layer["device"] and {"trace", "lower", "compile", "run", "steady"} <= set(layer["timings"])
    assert "ran on" in text(cell(nb, "report = layer_program.run_report"))
    assert "device: cpu:1" in text(cell(nb, "%%jaxpr --device cpu:1"))
    moved = text(cell(nb, 'print("out1 lives on"'))
    assert "CpuDevice(id=1)" in moved and "same value: True" in moved
    runs = text(cell(nb, "r = jaxviz.profile(layer, x, w, device=d)"))
    assert runs.count("ran on ") == n_devices

    timings = text(cell(nb, "t0 = time.perf_counter(); traced = jax.jit(mlp)"))
    for stage in ("trace", "lower", "compile", "first run", "run (median of 10)"):
        assert re.search(rf"^{re.escape(stage)}\s+[0-9.]+ ms$", timings, re.M), stage
    assert "steady state" in text(cell(nb, "mlp_report = jaxviz.profile("))
    cost = text(cell(nb, "cost = compiled.cost_analysis()"))
    flops, by_hand = (float(v.replace(",", "")) for v in
                      re.search(r"flops\s+([0-9,]+)\s+\(by hand: ([0-9,]+)\)", cost).groups())
    assert abs(flops - by_hand) / by_hand < 0.01
    assert abs(float(re.search(r"jaxviz estimate ([0-9,]+)", cost).group(1).replace(",", "")) - by_hand) / by_hand < 0.01
    m = re.search(r"argument_size_in_bytes\s+([0-9.]+) MiB", cost)
    assert m and abs(float(m.group(1)) - number_after("(parameters + batch by hand)", cost)) < 0.01
    heat = payload(cell(nb, "%jaxpr --expand 0 mlp(params, batch)"))
    dense = [g for g in heat["graph"]["groups"] if g["name"] == "dense"]
    assert [g["repeat"] for g in dense] == ["dense 1/3", "dense 2/3", "dense 3/3"]
    assert number_after("achieved", text(cell(nb, "achieved = mlp_report.flops_per_second"))) > 0


# ---------------------------------------------------------------------- 06 sharding
def test_06_sharding():
    nb = executed("06_sharding.ipynb")
    assert "devices 8" in text(cell(nb, 'cpus = jax.devices("cpu")'))
    assert "x: float32[128@data,784]" in text(cell(nb, "def train_step("))

    step = payload(cell(nb, "%%jaxpr -o step_program"))
    graph = step["graph"]
    placed = {n["label"]: (n["params"].get("sharding"), n["outputs"][0]["text"])
              for n in graph["nodes"] if n["kind"] == "input"}
    # which axis each input is split on: its spec under its sharded type
    assert placed["x"] == ("P('data', None)", "f32[128@data,784]")
    assert placed["params[0][0]"] == ("P(None, 'model')", "f32[784,512@model]")
    assert placed["params[1][1]"] == ("replicated", "f32[10]")
    assert "f32[128@data,512@model]" in {e["aval"]["text"] for e in graph["edges"]}
    assert "mesh data=4 × model=2 (explicit) · 8 cpu devices" in step["summary"]
    assert re.search(r"\d+ all-reduces? .*per device and run", step["summary"])
    assert any(g.get("collectives") for g in graph["groups"] if g["name"] == "dense")  # on the user's layer

    run = text(cell(nb, "report = step_program.run_report"))
    assert re.search(r"collectives +\d+ all-reduce", run) and re.search(r"memory per device +arguments", run)
    counted = text(cell(nb, "compiled = train_step.lower(params, x, y).compile()"))
    hlo, ours = re.search(r"HLO collectives: (\{.*\})\njaxviz counted: +(\{.*\})", counted).groups()
    assert hlo == ours and "all-reduce" in hlo

    ffn = payload(cell(nb, "%jaxpr --expand all -o ffn_program sharded_ffn("))
    names = [g["name"] for g in ffn["graph"]["groups"]]
    assert "shard_map ffn (data: 4, model: 2; in: P('data', None), P(None, 'model'), P('model', None) → out: P('data', None))" in names
    labels = [n["label"] for n in ffn["graph"]["nodes"]]
    assert "psum · model · 1.25 KiB" in labels and "psum · data · 4 B" in labels  # pmean: a psum, then a division

    recompiles = text(cell(nb, "%jaxviz recompiles train_step"))
    assert "compiled for the 2nd time" in recompiles and "`x`" in recompiles  # the resharded input, named
    assert "P('data', None)" in recompiles and "P(None, None)" in recompiles
    split, replicated = re.findall(r"^x (?:split over data|replicated) +(.*) · ([0-9.]+ \w+) per device and run$",
                                   text(cell(nb, '("x replicated", x_replicated)')), re.M)
    assert split[1].endswith("KiB") and float(split[1].split()[0]) > 100 * float(replicated[1].split()[0])
