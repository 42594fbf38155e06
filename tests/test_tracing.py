"""The graph model is complete (every equation of every nested jaxpr is a node) and
hierarchical (sub-jaxprs and user calls are groups)."""

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax
from zoo import ZOO, deep_loss, flax_apply, mlp_loss, recursive_eqn_count

import jaxviz


@pytest.mark.parametrize("name", sorted(ZOO))
def test_every_equation_is_a_node(name):
    fn, args, kwargs = ZOO[name]
    program = jaxviz.trace(fn, *args, **kwargs)
    expected = recursive_eqn_count(program.jaxpr.jaxpr)
    assert expected > 0
    assert len(program.graph.eqn_nodes()) == expected == program.eqn_count
    # Every edge joins existing nodes; every node sits in an existing group.
    n = len(program.graph.nodes)
    assert all(0 <= e.src < n and 0 <= e.dst < n for e in program.graph.edges)
    assert all(0 <= node.group < len(program.graph.groups) for node in program.graph.nodes)


def test_flax_model_apply():
    apply, variables, x = flax_apply()
    program = jaxviz.trace(apply, variables, x)
    assert len(program.graph.eqn_nodes()) == recursive_eqn_count(program.jaxpr.jaxpr)
    names = [i.name for i in program.inputs if i.kind == "traced"]
    assert "variables['params']['Dense_0']['kernel']" in names
    # Flax names its modules in the name stack: they become groups.
    group_names = {g.name for g in program.graph.groups}
    assert {"Dense_0", "Dense_1"} <= group_names, group_names


def test_sub_jaxprs_are_groups():
    fn, args, kwargs = ZOO["scan"]
    graph = jaxviz.trace(fn, *args, **kwargs).graph
    # named after the function it runs, with its trip count
    scan = next(g for g in graph.groups if g.kind == "eqn" and g.name == "body ×8 (scan)")
    scan_node = next(n for n in scan.nodes if graph.nodes[n].primitive == "scan")
    assert graph.nodes[scan_node].group == scan.id
    body_nodes = [n for g in graph.descendants(scan.id) for n in graph.groups[g].nodes]
    assert {graph.nodes[n].primitive for n in body_nodes} >= {"sin", "add", "mul", "scan"}

    fn, args, kwargs = ZOO["switch"]
    graph = jaxviz.trace(fn, *args, **kwargs).graph
    # named after the functions its branches run (a lambda has no name)
    cond = next(g for g in graph.groups if g.kind == "eqn" and re.fullmatch(r"\w+ \(cond: \w+\)", g.name))
    branches = [graph.groups[c].name for c in cond.groups]
    assert branches == ["branch 0", "branch 1", "branch 2"]


def test_a_loop_over_a_lambda_is_named_after_the_call_that_ran_it():
    """A lambda has no name of its own: the loop reads as the user's call, with its trip
    count (the style of JAX's own docs: ``lax.map(lambda x: ..., xs)``)."""
    def run(xs):
        mapped = jax.lax.map(lambda x: jnp.tanh(x) @ x.T, xs)
        summed = lax.fori_loop(0, 10, lambda i, c: c * 2.0 + i, mapped.sum())
        carry, _ = lax.scan(lambda c, x: (c + x.sum(), None), summed, xs)
        return lax.cond(carry > 0, lambda: carry, lambda: -carry)

    graph = jaxviz.trace(run, jnp.ones((5, 3, 3))).graph
    names = [g.name for g in graph.groups if g.kind == "eqn" and g.holder is not None]
    assert names == ["lax.map ×5 (scan)", "lax.fori_loop ×10 (scan)", "lax.scan ×5", "lax.cond"], names


def test_user_calls_become_groups_forward_and_backward_apart():
    ws = [jnp.eye(4) for _ in range(12)]
    program = jaxviz.trace(jax.jit(jax.value_and_grad(deep_loss)), ws, jnp.ones((2, 4)))
    graph = program.graph
    top = [graph.groups[g] for g in graph.groups[0].groups]
    kinds = [g.kind for g in top]
    # The 12 weights and the 12 gradients are one group each.
    assert kinds == ["inputs", "phase", "phase", "outputs"], [(g.name, g.kind) for g in top]
    assert top[0].name == "ws (12 arrays)" and top[3].name == "out[1] (12 arrays)"
    forward, backward = top[1:3]
    assert (forward.name, backward.name) == ("forward", "backward")
    for part in (forward, backward):
        blocks = forward_blocks(graph, part)
        assert len(blocks) == 12
        # ln is called inside each block: a nested group (the first block's input needs no
        # gradient, so its backward part has no ln).
        assert sum(any(graph.groups[c].name == "ln" for c in b.groups) for b in blocks) >= 11
    assert [b.repeat for b in forward_blocks(graph, forward)] == [f"block {k}/12" for k in range(1, 13)]
    # The backward pass runs the blocks in reverse call order.
    assert [b.repeat for b in forward_blocks(graph, backward)] == [f"block {k}/12" for k in range(12, 0, -1)]
    assert blocks[0].source is not None and blocks[0].source.text == "x = block(x, w)"
    # Blocks 2..12 are the same layer and fold into one "block ×11" group; block 1 differs
    # (its input x needs no derivative: fewer equations) and stays apart, in each pass.
    names = [[(graph.groups[c].kind, graph.groups[c].name) for c in part.groups if graph.groups[c].kind != "line"]
             for part in (forward, backward)]
    assert names[0][:2] == [("call", "block"), ("repeat", "block ×11")]
    assert names[1][:2] == [("repeat", "block ×11"), ("call", "block")]


def forward_blocks(graph, part):
    """The part's block groups in order, those folded into a "block ×N" group included."""
    out = []
    for c in part.groups:
        g = graph.groups[c]
        out += [graph.groups[m] for m in g.groups] if g.kind == "repeat" else [g]
    return [g for g in out if g.name == "block"]


def test_sources_point_at_user_lines():
    program = jaxviz.trace(mlp_loss, *ZOO["grad"][1])
    tanh = next(n for n in program.graph.eqn_nodes() if n.primitive == "tanh")
    assert tanh.source.function.endswith("mlp_loss")
    assert "jnp.tanh" in tanh.source.text


def test_collapsed_view_is_small_and_complete():
    ws = [jnp.eye(4) for _ in range(12)]
    graph = jaxviz.trace(jax.grad(deep_loss), ws, jnp.ones((2, 4))).graph
    view = graph.view(0)
    nodes, groups = view.visible_counts()
    assert groups == 4 and nodes == len(graph.groups[0].nodes) == 1  # x; ws and grads are groups
    # Expanding everything shows every node and no group box.
    full = graph.view("all")
    assert full.visible_counts() == (len(graph.nodes), 0)
    # Aggregated edges never point inside a collapsed group.
    for e in view.edges:
        for item in (e.src, e.dst):
            if item[0] == "n":
                assert graph.nodes[item[1]].group in view.expanded
            else:
                assert item[1] not in view.expanded


def test_auto_expansion_respects_budget():
    ws = [jnp.eye(4) for _ in range(12)]
    graph = jaxviz.trace(jax.grad(deep_loss), ws, jnp.ones((2, 4))).graph
    expanded = graph.expansion("auto", budget=60)
    view = graph.view(expanded)
    assert sum(view.visible_counts()) <= 60
    assert 0 in expanded and len(expanded) > 1


def test_long_runs_from_one_line_are_grouped():
    def update(params, grads):
        return jax.tree_util.tree_map(lambda p, g: p - 0.1 * g, params, grads)

    params = {f"w{i}": jnp.ones(3) for i in range(10)}
    graph = jaxviz.trace(update, params, params).graph
    lines = [g for g in graph.groups if g.kind == "line"]
    assert len(lines) == 1 and lines[0].n_eqns == 20
    assert "tree_map" in lines[0].name
    assert {g.kind for g in graph.groups[1:]} == {"inputs", "outputs", "line"}



def feature(x):
    y = jnp.sin(x) * 2.0 + 1.0 - x
    return jnp.cos(y) * 3.0 + 2.0 - y


def test_every_long_line_of_a_function_is_a_box_whatever_its_length():
    """Two lines of four equations each, in a function's group: each is a box (a run is
    "all the group does" only where it is, not where it is as long as the run before)."""
    graph = jaxviz.trace(lambda x: feature(x) * 2.0, jnp.ones(3)).graph
    group = next(g for g in graph.groups if g.name == "feature")
    lines = [graph.groups[c] for c in group.groups]
    assert [g.kind for g in lines] == ["line", "line"] and not group.nodes
    assert [g.n_eqns for g in lines] == [4, 4]
    assert "jnp.sin" in lines[0].name and "jnp.cos" in lines[1].name

def test_keyword_arguments_are_named_in_jit_order_and_static_by_name():
    def f(x, *, scale, bias, train=True):
        return x * scale + bias if train else x

    program = jaxviz.trace(f, jnp.ones(2), bias=jnp.zeros(2), scale=jnp.array([2.0, 3.0]),
                           train=True, static_argnames="train")
    kinds = {i.name: i.kind for i in program.inputs}
    assert kinds == {"x": "traced", "bias": "traced", "scale": "traced", "train": "static"}
    # jit flattens keyword arguments by sorted name: bias before scale.
    mul = next(n for n in program.graph.eqn_nodes() if n.primitive == "mul")
    add = next(n for n in program.graph.eqn_nodes() if n.primitive == "add")
    inputs = {n.id: n.label for n in program.graph.nodes if n.kind == "input"}
    into = {e.dst: [] for e in program.graph.edges}
    for e in program.graph.edges:
        into[e.dst].append(inputs.get(e.src))
    assert set(into[mul.id]) == {"x", "scale"} and "bias" in into[add.id]


def test_typed_prng_key_argument():
    program = jaxviz.trace(lambda k: jax.random.normal(k, (2,)), jax.random.key(0))
    assert program.inputs[0].kind == "traced" and "key" in program.inputs[0].aval.dtype


def test_trace_in_a_script_explains_tracer_errors(tmp_path):
    import subprocess
    import sys

    script = tmp_path / "script.py"
    script.write_text("import jax.numpy as jnp, jaxviz\n"
                      "def f(x, neg):\n"
                      "    return -x if neg else x\n"
                      "jaxviz.trace(f, jnp.ones(3), True)\n")
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert out.returncode != 0 and "TracerBoolConversionError" in out.stderr
    assert "`neg` is traced because it is argument 1 of `f`" in out.stderr
    assert "static_argnames=('neg',)" in out.stderr


def test_arguments_jit_cannot_trace_are_made_static_and_said_so():
    class Net:  # a plain Python object (hashable by identity), as many users pass a model
        def __init__(self, w):
            self.w = w

        def __call__(self, x):
            return jnp.tanh(x @ self.w)

    def step(net, x, mode="train", *, act=jnp.tanh):
        return act(net(x)) if mode == "train" else net(x)

    net = Net(jnp.ones((3, 3)))
    program = jaxviz.trace(step, net, jnp.ones((2, 3)), "train", act=jax.nn.relu)
    kinds = {i.name: i.kind for i in program.inputs if i.source == "argument"}
    assert kinds == {"net": "static", "x": "traced", "mode": "static", "act": "static"}
    assert "note: net, mode, act not arrays: traced as static" in program.summary()
    assert [n.primitive for n in program.graph.eqn_nodes()][-1] == "max"  # relu ran: act was used
    # An argument that is neither traceable nor hashable: one line naming it (a TypeError).
    with pytest.raises(jaxviz.UnsplittableArgument, match=r"argument 'cfg': cfg\['layers'\]\[0\] \(object\)"):
        jaxviz.trace(lambda cfg, x: x * len(cfg["layers"]), {"layers": [object()]}, jnp.ones(2))


def test_negative_static_argnums():
    program = jaxviz.trace(lambda x, n: x * n, jnp.ones(2), 3, static_argnums=-1)
    assert {i.name: i.kind for i in program.inputs} == {"x": "traced", "n": "static"}


def test_equal_captured_arrays_keep_their_own_names():
    a, b = jnp.ones(3), jnp.ones(3)  # equal values, distinct arrays

    def f(x):
        return x * a + b

    program = jaxviz.trace(f, jnp.ones(3))
    labels = sorted(n.label for n in program.graph.nodes if n.kind == "const")
    assert labels == ["a", "b"]


SAMPLE_POINTS = np.linspace(0.0, 1.0, 5)  # NumPy's default dtypes: float64, int64
GROUP_OF_POINT = np.arange(5) % 2


def test_numpy_globals_of_64_bits_are_captured_under_their_names():
    """JAX holds a float64/int64 NumPy global as a 32-bit constant (x64 off): a new array,
    equal to the global as converted, named after it like any captured array."""
    def f(w):
        return (w * SAMPLE_POINTS).sum() + w[GROUP_OF_POINT].sum()

    program = jaxviz.trace(f, jnp.ones(5))
    captured = {n.label for n in program.graph.nodes if n.kind == "const" and n.input_kind == "captured"}
    assert {"SAMPLE_POINTS", "GROUP_OF_POINT"} <= captured, captured


def test_callee_traced_and_cached_by_an_earlier_trace_still_groups():
    @jax.jit
    def inner(v):
        return jnp.sin(v) * 2

    def outer(v):
        return inner(v) + 1

    jaxviz.trace(outer, jnp.ones(2))
    program = jaxviz.trace(outer, jnp.ones(2))  # JAX reuses inner's cached jaxpr
    names = [g.name for g in program.graph.groups]
    assert not any(n.startswith("jv") for n in names), names
