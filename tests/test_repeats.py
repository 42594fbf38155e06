"""Repeated layers (issue #8): runs of identical sibling groups are folded into one
``repeat`` group ("block ×12") that expands into the layers; every equation stays in the
graph exactly once and the ids of the groups the tracer built do not change."""

import json
import os
import sys

import jax
import jax.numpy as jnp
import pydot
import pytest
from zoo import recursive_eqn_count

import jaxviz
from jaxviz import graph as graph_module
from jaxviz.graph import LEGEND, REPEAT_MIN
from jaxviz.render.dot import program_dot
from jaxviz.render.html import program_html
from jaxviz.render.payload import decode_graph, program_payload
from jaxviz.tracing import replay_starts

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "benchmarks"))
import models  # noqa: E402


@pytest.fixture(scope="module")
def transformer():
    return jaxviz.trace(models.train_step, models.init_params(12), models.tokens())


def children(graph, gid, kind=None):
    return [graph.groups[c] for c in graph.groups[gid].groups if kind is None or graph.groups[c].kind == kind]


def repeats(graph):
    return [g for g in graph.groups if g.kind == "repeat"]


def check_tree(graph):
    """Parents, children, depths and equation counts agree; every node is in one group."""
    for g in graph.groups[1:]:
        assert g.id in graph.groups[g.parent].groups
        assert g.depth == graph.groups[g.parent].depth + 1
    seen = [c for g in graph.groups for c in g.groups]
    assert sorted(seen) == list(range(1, len(graph.groups)))  # each group has exactly one parent
    placed = [n for g in graph.groups for n in g.nodes]
    assert sorted(placed) == list(range(len(graph.nodes)))  # each node in exactly one group
    assert all(graph.nodes[n].group == g.id for g in graph.groups for n in g.nodes)
    for g in graph.groups:
        own = sum(graph.nodes[n].kind == "eqn" for n in g.nodes)
        assert g.n_eqns == own + sum(graph.groups[c].n_eqns for c in g.groups)


def test_transformer_blocks_fold_into_one_group_per_pass(transformer):
    graph = transformer.graph
    check_tree(graph)
    fwd, bwd, update = (g for g in children(graph, 0) if g.kind == "phase")
    assert (fwd.name, bwd.name, update.name) == ("forward", "backward", "update")
    folded = []
    for part, order in ((fwd, range(1, 13)), (bwd, range(12, 0, -1))):
        (loss,) = children(graph, part.id, "call")
        (rep,) = children(graph, loss.id, "repeat")
        assert rep.name == "block ×12" and rep.repeat is None
        members = children(graph, rep.id)
        assert [m.name for m in members] == ["block"] * 12
        assert [m.repeat for m in members] == [f"block {k}/12" for k in order]  # labels kept
        assert not any(g.name == "block" for g in children(graph, loss.id))  # no block left outside
        assert rep.n_eqns == 12 * members[0].n_eqns == sum(m.n_eqns for m in members)
        assert rep.source is not None and rep.source.text.strip() == "x = block(x, p)"
        folded.append(rep)
    # The update's per-parameter groups fold too: blocks[0] … blocks[11] are alike.
    (params_fold,) = children(graph, update.id, "repeat")
    assert params_fold.name == "blocks ×12"
    assert [m.name for m in children(graph, params_fold.id)] == [f"blocks[{k}]" for k in range(12)]
    assert len(repeats(graph)) == 3
    # Every equation is still there, exactly once.
    assert graph.eqn_count == len(graph.eqn_nodes()) == recursive_eqn_count(transformer.jaxpr.jaxpr)

    # Collapsed, the fold is one box; expanded, it shows the 12 blocks as boxes.
    rep = folded[0]
    closed = graph.view([rep.parent])
    opened = graph.view([rep.id])
    assert ("g", rep.id) in {e.src for e in closed.edges} | {e.dst for e in closed.edges}
    boxes = [c for g in opened.expanded for c in graph.groups[g].groups if c not in opened.expanded]
    assert [c for c in boxes if graph.groups[c].parent == rep.id] == rep.groups
    assert sum(opened.visible_counts()) == sum(closed.visible_counts()) + 11
    # The blocks are chained, box to box, inside the opened fold.
    chain = {(e.src[1], e.dst[1]) for e in opened.edges if e.src[0] == e.dst[0] == "g"}
    assert all((a, b) in chain for a, b in zip(rep.groups, rep.groups[1:]))
    # Opening one block opens its fold (and what holds it) too.
    middle = rep.groups[5]
    assert {rep.id, rep.parent, middle} <= graph.expansion([middle])


@pytest.mark.parametrize("wrap", [jax.jit, jax.checkpoint])
def test_wrapped_blocks_called_on_one_line_fold_where_plain_ones_do(wrap):
    """Jitted (or checkpointed) blocks are equations of their own, all from the line
    ``x = layer(x, p)``; folded, they are one box, not a box inside that line's box."""
    program = jaxviz.trace(models.train_step_with(wrap), models.init_params(6), models.tokens())
    graph = program.graph
    check_tree(graph)
    for part in (g for g in children(graph, 0) if g.name in ("forward", "backward")):
        (loss,) = children(graph, part.id, "call")
        (rep,) = children(graph, loss.id, "repeat")
        assert rep.name.startswith("block") and rep.name.endswith(" ×6")
        assert not any(g.kind == "line" and g.source and "layer(x, p)" in g.source.text for g in children(graph, loss.id))
    assert not [g for g in graph.groups if g.kind == "line" and not g.nodes and len(g.groups) == 1]
    assert graph.eqn_count == recursive_eqn_count(program.jaxpr.jaxpr)


def test_folding_keeps_the_tracer_s_group_ids(transformer, monkeypatch):
    monkeypatch.setattr(graph_module, "REPEAT_MIN", sys.maxsize)  # no run is long enough to fold
    plain = jaxviz.trace(models.train_step, models.init_params(12), models.tokens()).graph
    assert not repeats(plain)
    graph = transformer.graph
    n = len(plain.groups)
    assert len(graph.groups) == n + 3  # the folds (forward, backward, update) come last
    for a, b in zip(plain.groups, graph.groups[:n]):
        assert (a.id, a.name, a.kind, a.nodes, a.n_eqns, a.repeat) == (b.id, b.name, b.kind, b.nodes, b.n_eqns, b.repeat)
    assert [x.group for x in plain.nodes] == [x.group for x in graph.nodes]
    assert plain.eqn_count == graph.eqn_count


def mlp_block(x, w1, w2):
    return x + jnp.tanh(x @ w1) @ w2


def mlp_stack(ws, x):
    for w1, w2 in ws:
        x = mlp_block(x, w1, w2)
    return x.sum()


def mlp_weights(hidden):
    return [(jnp.ones((4, h)) * 0.1, jnp.ones((h, 4)) * 0.1) for h in hidden]


def test_a_layer_of_another_size_is_not_folded_with_the_others():
    graph = jaxviz.trace(mlp_stack, mlp_weights([8, 8, 8, 16, 8, 8]), jnp.ones((2, 4))).graph
    check_tree(graph)
    top = children(graph, 0)
    kinds = [(g.kind, g.name) for g in top if g.kind not in ("inputs", "outputs")]
    # Blocks 1-3 fold; block 4 (hidden 16: same primitives, other shapes) stays apart;
    # blocks 5-6 are a run of 2: too short to fold.
    assert kinds == [("repeat", "mlp_block ×3"), ("call", "mlp_block"), ("call", "mlp_block"),
                     ("call", "mlp_block")]
    rep = top[[g.kind for g in top].index("repeat")]
    assert [graph.groups[c].repeat for c in rep.groups] == ["mlp_block 1/6", "mlp_block 2/6", "mlp_block 3/6"]
    assert [g.repeat for g in top if g.kind == "call"] == ["mlp_block 4/6", "mlp_block 5/6", "mlp_block 6/6"]
    # Same equation count: only the structure (shapes) tells block 4 apart.
    assert len({graph.groups[c].n_eqns for c in rep.groups} | {top[-1].n_eqns}) == 1


def branchy_block(x, i):
    return jnp.sin(x) * 2.0 if i == 3 else jnp.cos(x) * 2.0


def branchy(x):
    for i in range(7):
        x = branchy_block(x, i)
    return x


def test_an_iteration_taking_another_branch_splits_the_run():
    graph = jaxviz.trace(branchy, jnp.ones(3)).graph
    check_tree(graph)
    top = [(g.kind, g.name) for g in children(graph, 0)]
    assert top == [("repeat", "branchy_block ×3"), ("call", "branchy_block"), ("repeat", "branchy_block ×3")]
    odd = children(graph, 0)[1]
    assert odd.repeat == "branchy_block 4/7"
    assert [graph.nodes[n].primitive for n in odd.nodes] == ["sin", "mul"]


def test_runs_of_two_are_not_folded_and_the_minimum_is_three():
    assert REPEAT_MIN == 3
    two = jaxviz.trace(mlp_stack, mlp_weights([8, 8]), jnp.ones((2, 4))).graph
    assert not repeats(two) and [g.repeat for g in children(two, 0, "call")] == ["mlp_block 1/2", "mlp_block 2/2"]
    three = jaxviz.trace(mlp_stack, mlp_weights([8, 8, 8]), jnp.ones((2, 4))).graph
    assert [g.name for g in repeats(three)] == ["mlp_block ×3"]


def inner_layer(x):
    return jnp.tanh(x) * 0.5


def outer_block(x):
    for _ in range(3):
        x = inner_layer(x)
    return x + 1.0


def nested(x):
    for _ in range(4):
        x = outer_block(x)
    return x


def test_nested_repeats_fold_at_every_level():
    graph = jaxviz.trace(nested, jnp.ones(3)).graph
    check_tree(graph)
    (outer,) = children(graph, 0)
    assert outer.name == "outer_block ×4" and outer.depth == 1
    for block in children(graph, outer.id):
        assert block.depth == 2
        (inner,) = children(graph, block.id)
        assert inner.kind == "repeat" and inner.name == "inner_layer ×3" and inner.depth == 3
        assert [g.depth for g in children(graph, inner.id)] == [4, 4, 4]
    assert graph.eqn_count == 4 * (3 * 2 + 1)
    # Depth-limited expansion counts the folds as levels: at 1 the outer fold is open.
    assert graph.view(1).visible_counts()[1] == 4


def test_finish_is_idempotent():
    graph = jaxviz.trace(nested, jnp.ones(3)).graph
    before = json.dumps(graph.to_json())
    graph.finish()
    assert json.dumps(graph.to_json()) == before


def test_json_round_trip_and_payload(transformer):
    graph = transformer.graph
    data = json.loads(graph.to_json_str())
    assert data["legend"]["repeat"] == LEGEND["repeat"]
    reps = [g for g in data["groups"] if g["kind"] == "repeat"]
    assert [g["name"] for g in reps] == ["block ×12", "block ×12", "blocks ×12"]
    for r in reps:
        assert all(data["groups"][m]["parent"] == r["id"] for m in r["groups"])
        assert r["id"] in data["groups"][r["parent"]]["groups"]
        assert r["n_eqns"] == sum(data["groups"][m]["n_eqns"] for m in r["groups"])
        assert r["repeat"] is None and r["nodes"] == []
    assert data == json.loads(json.dumps(graph.to_json()))
    assert decode_graph(program_payload(transformer)["graph"]) == data


def test_costs_are_summed_through_the_folds(transformer):
    transformer.costs()
    graph = transformer.graph
    for rep in repeats(graph):
        members = [graph.groups[c] for c in rep.groups]
        assert rep.flops > 0 and rep.flops == pytest.approx(sum(m.flops for m in members))
        assert graph.groups[rep.parent].flops >= rep.flops
    assert graph.groups[0].flops == pytest.approx(sum(n.flops for n in graph.nodes))


def test_renderers_show_a_fold_as_n_identical_layers(transformer):
    graph = transformer.graph
    rep = repeats(graph)[0]
    per = graph.groups[rep.groups[0]].n_eqns
    nodes, _ = _attrs(program_dot(transformer, [rep.parent]).source)
    box = nodes[f"g{rep.id}"]
    assert box["label"].startswith(f"block ×12\n12 × {per} eqns") and box["peripheries"] == "2"
    assert box["class"] == "jaxviz-group jaxviz-group-repeat"
    assert "12 identical block layers: expand to see each" in box["tooltip"]
    assert nodes["legend_repeat"]["label"] == "×N identical layers"
    nodes, clusters = _attrs(program_dot(transformer, [rep.id]).source)
    # The open fold's layers are one column (Graphviz's "group": straight edges between them).
    assert {nodes[f"g{c}"].get("group") for c in rep.groups} == {f"repeat_g{rep.id}"}
    cluster = clusters[f"cluster_g{rep.id}"]
    assert cluster["label"].startswith(f"block ×12 (12 × {per} eqns)")
    assert cluster["style"] == "rounded,filled,dashed"
    html = program_html(transformer)
    assert f"(12 identical block layers, 12 × {per} eqns" in html and "jaxviz-chip-repeat" in html


def _attrs(source):
    """(node name → attributes, cluster name → attributes), unquoted, at any depth of the
    DOT source: parsed once (pydot's parser is slow on a big graph)."""
    nodes, clusters = {}, {}
    stack = list(pydot.graph_from_dot_data(source))
    while stack:
        g = stack.pop()
        for sub in g.get_subgraph_list():
            clusters[sub.get_name()] = {k: v.strip('"') for k, v in sub.get_attributes().items()}
        for n in g.get_nodes():
            nodes[n.get_name()] = {k: v.strip('"') for k, v in n.get_attributes().items()}
        stack.extend(g.get_subgraph_list())
    return nodes, clusters


def test_many_repeats_fold_fast():
    def step(x):
        return jnp.sin(x) + 1.0

    def many(x):
        for _ in range(1500):
            x = step(x)
        return x

    program = jaxviz.trace(many, jnp.ones(3))
    graph = program.graph
    (rep,) = repeats(graph)
    assert rep.name == "step ×1500" and graph.eqn_count == 3000
    graph.finish()
    # Collapsed it is one item; the auto view opens it only within the budget.
    assert graph.view(0).visible_counts() == (2, 1)
    assert sum(graph.view("auto").visible_counts()) <= 60


def test_checkpointed_layers_in_a_loop_are_one_call_each_under_grad():
    """``jax.checkpoint(block)`` in a Python loop (how LLM code saves memory): JAX traces
    ``block`` once and, under ``grad``, replays its forward equations once per call, all
    under that one activation. The forward pass still reads ``block ×4``, each a whole
    layer; a Python loop inside one call (the two ``sin``) is not taken for calls."""
    def mlp(x, p):
        return jnp.tanh(x @ p["w1"]) @ p["w2"]

    def block(x, p):
        for _ in range(2):
            x = jnp.sin(x)
        return x + mlp(x, p)

    def loss(params, x):
        for p in params:
            x = jax.checkpoint(block)(x, p)
        return (x ** 2).mean()

    params = [{"w1": jnp.ones((8, 16)), "w2": jnp.ones((16, 8))} for _ in range(4)]
    graph = jaxviz.trace(jax.jit(jax.value_and_grad(loss)), params, jnp.ones((2, 8))).graph
    check_tree(graph)
    (forward,) = [g for g in graph.groups if g.kind == "phase" and g.name == "forward"]
    (fold,) = children(graph, forward.id, "repeat")
    assert fold.name == "block ×4"
    layers = children(graph, fold.id)
    assert [g.name for g in layers] == ["block"] * 4
    sizes = {(g.n_eqns, tuple(graph.nodes[n].primitive for n in g.nodes)) for g in layers}
    assert len(sizes) == 1, sizes  # four whole, identical layers
    (size, primitives) = sizes.pop()
    assert primitives.count("sin") == 2 and size == 2 + 1 + 2 + 1  # sin sin, dot tanh dot, add


def test_replay_starts_follow_traceback_objects_not_their_content():
    a, b, c = object(), object(), object()
    assert replay_starts([a, b, c, a, b, c]) == [0, 3]
    assert replay_starts([a, a, b, a, a, b, a, a, b]) == [0, 3, 6]  # jvp: several per object
    assert replay_starts([a, b, c, a, c]) == [0, 3]  # dead code dropped from a copy
    assert replay_starts([a, b, c, a, c, b]) is None  # not a copy: out of order
    assert replay_starts([a, b, c]) is None
    assert replay_starts([a, b, None, a, b, None]) is None



def test_a_haiku_block_s_repeats_are_named_after_it_in_every_pass_and_in_the_update():
    """Three ``hk.remat`` blocks: the backward pass's repeat is of ``hk.remat
    (checkpoint)`` boxes, each around one block (``res_block`` … ``res_block_2``) beside
    its recomputed forward; the optimizer's update of each block's parameters
    (``res_block/batch_norm``, ``res_block/conv2_d``, …) is a period. Each run is
    ``res_block ×3``, not the wrapper's name nor its parameters' paths."""
    hk = pytest.importorskip("haiku")
    optax = pytest.importorskip("optax")

    class ResBlock(hk.Module):
        """Imitates a block of Haiku's ``examples/imagenet`` ResNet, each rematerialised
        with ``hk.remat`` as its API docs show."""

        def __call__(self, x):
            h = jax.nn.relu(hk.BatchNorm(True, True, 0.9)(hk.Conv2D(4, 3, with_bias=False)(x), True))
            return jax.nn.relu(x + hk.BatchNorm(True, True, 0.9)(hk.Conv2D(4, 3, with_bias=False)(h), True))

    def forward(images):
        x = hk.Conv2D(4, 3)(images)
        for _ in range(3):
            x = hk.remat(lambda x: ResBlock()(x))(x)
        return hk.Linear(2)(jnp.mean(x, axis=(1, 2)))

    net = hk.transform_with_state(forward)
    optimizer = optax.sgd(0.1, momentum=0.9)
    images = jnp.ones((2, 6, 6, 3))
    params, state = net.init(jax.random.PRNGKey(0), images)

    def loss_fn(params, state):
        logits, state = net.apply(params, state, None, images)
        return jnp.mean(logits ** 2), state

    def train_step(params, state, opt_state):
        (_, state), grads = jax.value_and_grad(loss_fn, has_aux=True)(params, state)
        updates, opt_state = optimizer.update(grads, opt_state)
        return optax.apply_updates(params, updates), state, opt_state

    graph = jaxviz.trace(train_step, params, state, optimizer.init(params)).graph
    repeats = sorted(g.name for g in graph.groups if g.kind == "repeat" and g.parent is not None)
    assert repeats == ["res_block ×3"] * 3, repeats
