"""Shardings and collectives on the user's own graph, on 8 host CPU devices
(``--xla_force_host_platform_device_count=8``) in a subprocess: explicit and auto mesh
axes, shard_map with each collective, the collectives XLA's partitioner inserted (counted
against the compiled HLO text) on the user's groups, per-device memory, pmap with pmean.
The texts of ``jaxviz.sharding`` are checked in this process."""

import json
import os
import re
import subprocess
import sys

import background
import jax
import jax.numpy as jnp
import pytest
from jax.sharding import PartitionSpec as P

import jaxviz
from jaxviz import sharding
from jaxviz.graph import Aval
from jaxviz.visual import COLLECTIVE_PRIMITIVES, COMM_STYLE, LEGEND

EIGHT_DEVICES = r'''
import json, re
import jax, jax.numpy as jnp
from jax.sharding import AxisType, NamedSharding, PartitionSpec as P
from IPython.core.interactiveshell import InteractiveShell
import jaxviz
from jaxviz.profiling import attach_report

out = {}
HLO_KIND = re.compile(r"= .*? (all-reduce|all-gather|reduce-scatter|all-to-all|collective-permute)(?:-start)?\(")


def nodes(program):
    return [{"kind": n.kind, "label": n.label, "primitive": n.primitive, "group": n.group,
             "sharding": n.params.get("sharding"), "avals": [a.text for a in n.outputs]}
            for n in program.graph.nodes]


# explicit axes: the types carry the sharding
explicit = jax.make_mesh((4, 2), ("data", "model"), axis_types=(AxisType.Explicit,) * 2)
x = jax.device_put(jnp.ones((16, 784)), NamedSharding(explicit, P("data", None)))
w = jax.device_put(jnp.ones((784, 32)), NamedSharding(explicit, P(None, "model")))


def project(x, w):
    h = x @ w
    h = jax.sharding.reshard(h, P("data", None))
    return h.sum(axis=1)


with jax.set_mesh(explicit):
    p = jaxviz.trace(project, x, w)
out["explicit"] = {"summary": p.summary(), "nodes": nodes(p), "edges": sorted({e.aval.text for e in p.graph.edges}),
                   "jaxpr": str(p.jaxpr), "dot": p.to_dot(expand="all")}

# auto axes: the compiler chooses what the user left open
auto = jax.make_mesh((4, 2), ("data", "model"), axis_types=(AxisType.Auto,) * 2)
xa = jax.device_put(jnp.ones((16, 784)), NamedSharding(auto, P("data", None)))
wa = jax.device_put(jnp.ones((784, 32)), NamedSharding(auto, P(None, "model")))


def layer(x, w):
    h = jnp.tanh(x @ w)
    return jax.lax.with_sharding_constraint(h, NamedSharding(auto, P("data", None)))


p = jaxviz.trace(layer, xa, wa)
report = jaxviz.profile(layer, xa, wa, repeats=1)
attach_report(p, report)
compiled = jax.jit(layer).lower(xa, wa).compile()
out["auto"] = {"summary": p.summary(), "nodes": nodes(p),
               "compiled_out": str(compiled.output_shardings.spec),
               "report": report.to_json(), "text": report.text()}


# shard_map with every collective
def ffn(x, w):
    y = x @ w
    y = jax.lax.psum(y, "model")
    z = jax.lax.all_gather(y, "data", tiled=True)
    shifted = jax.lax.ppermute(y, "data", [(i, (i + 1) % 4) for i in range(4)])
    mean = jax.lax.pmean(shifted, "data")
    scattered = jax.lax.psum_scatter(y, "model", scatter_dimension=1, tiled=True)
    swapped = jax.lax.all_to_all(y, "data", 0, 0, tiled=True)
    return mean + swapped, jax.lax.psum(z.sum() + scattered.sum(), ("data", "model"))


def sharded_ffn(x, w):
    return jax.shard_map(ffn, mesh=auto, in_specs=(P("data", None), P(None, "model")),
                         out_specs=(P("data"), P()))(x, w)


p = jaxviz.trace(sharded_ffn, xa, wa)
report = jaxviz.profile(sharded_ffn, xa, wa, repeats=1)
text = jax.jit(sharded_ffn).lower(xa, wa).compile().as_text()
out["shard_map"] = {"groups": [(g.kind, g.name) for g in p.graph.groups], "nodes": nodes(p),
                    "dot": p.to_dot(expand="all"), "hlo": HLO_KIND.findall(text),
                    "report": report.to_json()}


# data parallel training: the partitioner inserts the gradient all-reduces, in each block's backward
def block(x, w):
    return jnp.tanh(x @ w)


def loss_fn(ws, x):
    for w in ws:
        x = block(x, w)
    return (x ** 2).mean()


def train_step(ws, x):
    grads = jax.grad(loss_fn)(ws, x)
    return [w - 0.1 * g for w, g in zip(ws, grads)]


ws = [jax.device_put(jnp.eye(64) * 0.5, NamedSharding(auto, P())) for _ in range(3)]
xb = jax.device_put(jnp.ones((32, 64)), NamedSharding(auto, P("data", None)))
report = jaxviz.profile(train_step, ws, xb, repeats=1)
traced = jaxviz.trace(train_step, ws, xb)  # traced apart: its groups found by the calls' names
attach_report(traced, report)
out["traced_apart"] = {"summary": traced.summary(),
                       "groups": [(g.kind, g.name, g.collectives) for g in traced.graph.groups]}
compiled = jax.jit(train_step).lower(ws, xb).compile()
mem = compiled.memory_analysis()
out["train"] = {"report": report.to_json(), "text": report.text(), "summary": report.summary(),
                "hlo": HLO_KIND.findall(compiled.as_text()),
                "memory": {"argument": mem.argument_size_in_bytes, "output": mem.output_size_in_bytes,
                           "temp": mem.temp_size_in_bytes},
                "shard_bytes": sum(a.addressable_shards[0].data.nbytes for a in [*ws, xb])}

# layers scanned over (nnx.scan, flax's nn.scan, a lax.scan by hand): the collectives of
# the loop body are in the HLO once
def scanned_loss(stack, x):
    def layer(h, w):
        return jnp.tanh(h @ w), None
    return (jax.lax.scan(layer, x, stack)[0] ** 2).mean()


stack = jax.device_put(jnp.stack([jnp.eye(64) * 0.5] * 4), NamedSharding(auto, P()))
scan_step = jax.grad(scanned_loss)
report = jaxviz.profile(scan_step, stack, xb, repeats=0)
out["scan"] = {"report": report.to_json(), "text": report.text(),
               "hlo": HLO_KIND.findall(jax.jit(scan_step).lower(stack, xb).compile().as_text())}

# the same in a notebook cell: the collectives land on the user's groups
ip = InteractiveShell.instance()
ip.run_line_magic("load_ext", "jaxviz")
ip.user_ns.update(ws=ws, xb=xb, block=block, loss_fn=loss_fn, jax=jax, jnp=jnp)
ip.run_cell("def block(x, w):\n    return jnp.tanh(x @ w)\n\n"
            "def loss_fn(ws, x):\n    for w in ws:\n        x = block(x, w)\n    return (x ** 2).mean()\n")
r = ip.run_cell("%%jaxpr --quiet -o prog\ngrads = jax.grad(loss_fn)(ws, xb)\n")
prog = ip.user_ns["prog"]
out["cell"] = {"error": repr(r.error_in_exec), "summary": prog.summary(),
               "groups": [(g.kind, g.name, g.collectives, g.comm_bytes, g.parent) for g in prog.graph.groups],
               "dot": prog.to_dot(expand=0), "inputs": nodes(prog)[:4]}

# pmap with pmean (traced as pmap: a group with its axis), and a pmap whose axis the user did not name
try:
    unnamed = jaxviz.trace(jax.pmap(lambda v: v * 2), jnp.ones((8, 3)))
    out["pmap_unnamed"] = [g.name for g in unnamed.graph.groups]
except Exception as exc:
    out["pmap_unnamed"] = [f"{type(exc).__name__}: {exc}"[:300]]
try:
    pm = jaxviz.trace(jax.pmap(lambda v: jax.lax.pmean(v * 2, "i"), axis_name="i"), jnp.ones((8, 3)))
    out["pmap"] = {"groups": [(g.kind, g.name) for g in pm.graph.groups], "nodes": nodes(pm), "error": None}
except Exception as exc:
    out["pmap"] = {"error": f"{type(exc).__name__}: {exc}"[:300]}
print("RESULT " + json.dumps(out))
'''


def run_on_eight_devices() -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["JAX_PLATFORMS"] = "cpu"
    env["XLA_FLAGS"] = background.with_host_devices(8)
    return background.run([sys.executable, "-c", EIGHT_DEVICES], env=env, timeout=280)


EIGHT = background.job(__file__, run_on_eight_devices)  # beside the tests before these


@pytest.fixture(scope="module")
def eight():
    proc = EIGHT.result()
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    assert lines, proc.stdout[-3000:] + proc.stderr[-3000:]
    return json.loads(lines[-1][len("RESULT "):])


def by_label(nodes, label):
    found = [n for n in nodes if n["label"] == label]
    assert found, [n["label"] for n in nodes]
    return found[0]


# ---------------------------------------------------------------------- explicit axes
def test_explicit_axes_keep_their_sharded_types(eight):
    out = eight["explicit"]
    nodes = out["nodes"]
    x, w = by_label(nodes, "x"), by_label(nodes, "w")
    assert x["sharding"] == "P('data', None)" and w["sharding"] == "P(None, 'model')"
    # the edges read as JAX's jaxpr prints the types
    assert x["avals"] == ["f32[16@data,784]"] and "a:f32[16@data,784]" in out["jaxpr"]
    assert {"f32[16@data,784]", "f32[784,32@model]", "f32[16@data,32@model]", "f32[16@data,32]"} <= set(out["edges"])
    for text in out["edges"]:
        assert re.search(rf":{re.escape(text)}[ .]", out["jaxpr"]), text
    assert by_label(nodes, "out")["sharding"] == "P('data')"  # the result's type says it: the user's
    assert by_label(nodes, "reshard P('data', None)")["primitive"] == "reshard"
    assert "mesh data=4 × model=2 (explicit) · 8 cpu devices" in out["summary"]
    # the drawing shows the spec under each input, and the sharded type
    assert re.search(r"label=\"x\s+f32\[16@data,784\]\s+P\('data', None\)\"", out["dot"]), out["dot"][:2000]


# ---------------------------------------------------------------------- auto axes
def test_auto_axes_input_specs_and_the_compilers_choice(eight):
    out = eight["auto"]
    nodes = out["nodes"]
    assert by_label(nodes, "x")["sharding"] == "P('data', None)"
    assert by_label(nodes, "x")["avals"] == ["f32[16,784]"]  # auto axes: JAX's types carry none
    assert by_label(nodes, "sharding_constraint P('data', None)")
    # the output's sharding was the compiler's: read from the executable, marked as chosen
    assert out["compiled_out"] == "P('data', None)"
    assert by_label(nodes, "out")["sharding"] == "P('data', None) (chosen)"
    assert "mesh data=4 × model=2 (auto) · 8 cpu devices" in out["summary"]
    assert out["report"]["input_shardings"] == ["P('data', None)", "P(None, 'model')"]


# ---------------------------------------------------------------------- shard_map
def test_shard_map_is_named_with_its_specs_and_draws_each_collective(eight):
    out = eight["shard_map"]
    name = "shard_map ffn (data: 4, model: 2; in: P('data', None), P(None, 'model') → out: P('data'), replicated)"
    assert ("eqn", name) in [tuple(g) for g in out["groups"]]
    labels = [n["label"] for n in out["nodes"] if n["primitive"] in COLLECTIVE_PRIMITIVES]
    # f32[4,16] per device: 256 bytes sent by each into every collective but the last
    assert labels == ["psum · model · 256 B", "all_gather · data · 256 B", "ppermute · data · 256 B",
                      "psum · data · 256 B", "psum_scatter · model · 256 B", "all_to_all · data · 256 B",
                      "psum · (data,model) · 4 B"]
    # communication nodes: the legend's colour, and the legend names them
    color = LEGEND["collective"]["color"]
    assert out["dot"].count(f'fillcolor="{color}"') >= len(labels) + 1  # + the legend's chip
    assert "legend_collective" in out["dot"]


def hlo_counts(kinds):
    counts = {}
    for k in kinds:
        counts[k] = counts.get(k, 0) + 1
    return counts


def test_profile_counts_the_collectives_of_the_compiled_hlo(eight):
    for case in ("shard_map", "train", "scan"):
        out = eight[case]
        assert out["hlo"], case  # each program communicates
        assert out["report"]["collectives"]["counts"] == hlo_counts(out["hlo"]), case
    counts = eight["shard_map"]["report"]["collectives"]
    assert set(counts["counts"]) == {"all-reduce", "all-gather", "reduce-scatter", "all-to-all", "collective-permute"}
    # sizes of the results on one device: f32[4,16], f32[16,16] gathered, f32[4,8] scattered
    sizes = {(c["kind"], c["bytes"]) for c in counts["items"]}
    assert {("all-gather", 1024), ("reduce-scatter", 128), ("collective-permute", 256)} <= sizes


def test_collectives_in_a_loop_body_are_counted_once_and_said_so(eight):
    out = eight["scan"]
    assert "all-reduce" in out["hlo"]
    assert "from the compiled HLO (a loop body's counted once)" in out["text"]


def test_inserted_collectives_in_the_report_and_summary(eight):
    out = eight["train"]
    # data parallel: the partitioner all-reduces the gradients of the replicated weights
    assert "all-reduce" in out["hlo"]
    n = out["hlo"].count("all-reduce")
    assert re.search(rf"collectives +{n} all-reduces? · ", out["text"])
    assert f"{n} all-reduce" in out["summary"] and "per device and run" in out["summary"]
    assert "mesh data=4 × model=2 (auto) · 8 cpu devices" in out["summary"]


def test_memory_per_device(eight):
    out = eight["train"]
    memory = out["report"]["memory"]
    for key in ("argument", "output", "temp"):
        assert memory[key] == out["memory"][key]
    # what one device holds of the arguments: the weights whole, a quarter of the batch
    assert memory["argument"] == out["shard_bytes"]
    assert re.search(r"memory per device +arguments 50 KiB · outputs ", out["text"])


def test_collectives_land_on_the_users_groups(eight):
    out = eight["cell"]
    assert out["error"] == "None"
    groups = out["groups"]
    root = groups[0]
    assert root[2] == eight["train"]["hlo"].count("all-reduce") and root[3] > 0
    # XLA fused the three blocks' gradient all-reduces into one: it lands on the group they
    # share, the backward pass of loss_fn (and its ancestors), never on the forward pass
    carriers = [(g[0], g[1], groups[g[4]][1] if g[4] is not None else None) for g in groups if g[2]]
    assert carriers == [("root", "In[1]", None), ("phase", "backward", "In[1]"), ("call", "loss_fn", "backward")]
    assert "1 all-reduce in `loss_fn`" in out["summary"]
    # the communication line and outline on the box that carries it (the backward pass), none on the forward's
    backward = re.search(r'label="backward[^"]*"[^\]]*', out["dot"]).group()
    forward = re.search(r'label="forward[^"]*"[^\]]*', out["dot"]).group()
    assert "⇄ 1 collective · 48 KiB · 100%" in backward and f'color="{COMM_STYLE["color"]}"' in backward
    assert "⇄" not in forward and COMM_STYLE["color"] not in forward
    assert [i["sharding"] for i in out["inputs"]] == ["replicated"] * 3 + ["P('data', None)"]


def test_profile_names_the_users_calls_and_a_program_traced_apart_finds_them(eight):
    # jaxviz.profile traces with the user's calls as scopes: its report says where
    assert eight["train"]["report"]["collectives"]["places"] == {"all-reduce": "loss_fn"}
    assert "1 all-reduce · 48 KiB in `loss_fn`" in eight["train"]["text"]
    # a program traced apart (%jaxpr --time) finds its groups by the calls' names
    out = eight["traced_apart"]
    assert [(kind, name) for kind, name, n in out["groups"] if n] == [
        ("root", "train_step"), ("phase", "backward"), ("call", "loss_fn")]
    assert "1 all-reduce in `loss_fn` · 48 KiB per device and run" in out["summary"]


def test_pmap_with_pmean(eight):
    out = eight["pmap"]
    assert out["error"] is None, out["error"]
    assert "pmap <lambda> (i: 8)" in [name for _, name in out["groups"]]  # a group with its axis
    # pmean: a psum over the pmapped axis (f32[3] per device), then a division
    labels = [n["label"] for n in out["nodes"]]
    assert "psum · i · 12 B" in labels and "div" in labels[labels.index("psum · i · 12 B"):]
    unnamed = eight["pmap_unnamed"]
    assert any(name.startswith("pmap ") for name in unnamed), unnamed
    assert not [name for name in unnamed if "_internal" in name or "_fun" in name]


# ---------------------------------------------------------------------- this process
def test_call_groups_are_the_groups_of_the_calls():
    """What collectives are put on by their op-names' call scopes: each scope number's
    groups are its call's, also where the graph dropped and renumbered groups (a jitted
    function's equation merged into its call)."""
    def dense(w, x):
        return jnp.tanh(x @ w)

    @jax.jit
    def step(w, x):
        return dense(w, dense(w, x)).sum()

    def outer(w, x):
        return jax.grad(step)(w, x)

    program = jaxviz.trace(outer, jnp.ones((4, 4)), jnp.ones((2, 4)))
    named = {(program.graph.groups[g].name, program.graph.groups[g].kind)
             for gids in program.call_groups.values() for g in gids}
    assert ("dense", "call") in named and named <= {("step", "call"), ("dense", "call")}, named
    assert sum(len(g) for g in program.call_groups.values()) >= 4  # dense twice, forward and backward



def test_spec_texts():
    assert sharding.spec_text(P("data")) == "P('data')"
    assert sharding.spec_text(P(("data", "model"), None)) == "P(('data', 'model'), None)"
    assert sharding.spec_text(P()) == sharding.spec_text(P(None, None)) == "replicated"
    assert sharding.sharding_text(None) is None


def test_names_jax_made_up_are_not_shown_as_the_users():
    assert sharding.collective_axes({"axes": ("data", "model")}) == "(data,model)"
    assert sharding.collective_axes({"axis_name": "data"}) == "data"
    assert sharding.collective_axes({"axes": ("_internal_pmap_axis_name",)}) == "unnamed axis"
    assert sharding.collective_axes({}) == ""
    assert sharding.is_jax_name("_fun") and not sharding.is_jax_name("ffn")


def test_sharded_aval_text():
    assert Aval((16, 784), "float32", False, ("data", "")).text == "f32[16@data,784]"
    assert Aval((8, 4), "float32", False, ("(data,model)", "")).text == "f32[8@(data,model),4]"
    assert Aval((3,), "float32", True).text == "~f32[3]"


def test_hlo_collectives_parse_sync_async_and_tuples():
    text = "\n".join([
        '  %all-reduce.1 = f32[4,16]{1,0} all-reduce(%a), channel_id=1, metadata={op_name="jit(f)/jv3:block/dot_general"}',
        '  %ags = (f32[2]{0}, f32[8]{0}) all-gather-start(%b), dimensions={0}',
        '  %agd = f32[8]{0} all-gather-done(%ags)',
        '  ROOT %a2a = (bf16[1,16]{1,0}, bf16[1,16]{1,0}) all-to-all(%c, %d), metadata={op_name="jit(f)/x"}',
        '  %cp = pred[10]{0} collective-permute(%e), source_target_pairs={{0,1}}',
        '  %cps = (f32[4]{0}, f32[4]{0}, u32[], u32[]) collective-permute-start(%f), source_target_pairs={{0,1}}',
        '  %cpd = f32[4]{0} collective-permute-done(%cps)',
        '  %add = f32[4] add(%p, %q), metadata={op_name="jit(f)/all-reduce"}',
    ])
    found = sharding.hlo_collectives(text)
    # an async all-gather's tuple holds its operand and its result: the result is what it moves
    assert [(c.kind, c.bytes) for c in found] == [("all-reduce", 256), ("all-gather", 32), ("all-to-all", 64),
                                                  ("collective-permute", 10), ("collective-permute", 16)]
    assert found[0].op_name == "jit(f)/jv3:block/dot_general"
    assert sharding.call_numbers(found[0].op_name) == [3]
    counts = sharding.CollectiveCounts(found)
    assert counts.text() == "1 all-reduce; 1 all-gather; 1 all-to-all; 2 collective-permutes · 378 B per device and run"
    counts.places = sharding.scope_places(counts)
    assert counts.places["all-reduce"] == "block"


def test_a_fused_op_name_stands_for_each_operation():
    fused = ("jit(step)/(transpose(jvp(jv1:loss_fn))/jv2:dense/dot_general:"
             "transpose(jvp(jv1:loss_fn))/jv3:dense/reduce_sum:jvp(jv1:loss_fn)/reduce_sum)")
    assert sharding.fused_op_names(fused) == [
        "jit(step)/transpose(jvp(jv1:loss_fn))/jv2:dense/dot_general",
        "jit(step)/transpose(jvp(jv1:loss_fn))/jv3:dense/reduce_sum",
        "jit(step)/jvp(jv1:loss_fn)/reduce_sum"]
    assert sharding.fused_op_names("jit(f)/jv3:block/dot_general") == ["jit(f)/jv3:block/dot_general"]
    counts = sharding.CollectiveCounts([sharding.HloCollective("all-reduce", 4, fused)])
    assert sharding.scope_places(counts) == {"all-reduce": "loss_fn"}


def test_scope_names_read_as_the_user_wrote_them():
    assert sharding.scope_path("jit(f)/transpose(jvp(jv3:block))/dot_general") == ["transpose(jvp(jv3:block))"]
    counts = sharding.CollectiveCounts([sharding.HloCollective("all-reduce", 4, "jit(f)/transpose(jvp(jv3:block))/mul"),
                                        sharding.HloCollective("all-reduce", 4, "jit(f)/jvp()/mul")])
    assert sharding.scope_places(counts) == {}  # nothing in common but JAX's own transforms
