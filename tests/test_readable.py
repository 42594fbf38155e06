"""Small things a person reading the graph trips over (issue #13, "seen along the way"),
each with the program that showed it."""

import jax
import jax.numpy as jnp

import jaxviz
from jaxviz import costs


def test_one_value_bound_to_two_names_is_one_output():
    program = jaxviz.trace_cell("loss = (x ** 2).sum()\nresult = loss\n", {"x": jnp.ones(3), "jnp": jnp})
    outputs = [n.label for n in program.graph.nodes if n.kind == "output"]
    assert outputs == ["loss = result"]


def test_small_helper_equations_are_not_numbered_like_layers():
    def net(x):
        for _ in range(3):
            x = jnp.where(x > 0, x, 0.1 * x) @ jnp.eye(3)
        return x

    graph = jaxviz.trace(net, jnp.ones((2, 3))).graph
    helpers = [g for g in graph.groups if g.name == "where"]
    assert len(helpers) == 3
    assert all(g.repeat is None for g in helpers), [g.repeat for g in helpers]


def test_first_view_is_never_one_box():
    def big(x):
        for i in range(30):
            x = jnp.sin(x) * (i + 1.0)
        return x

    graph = jaxviz.trace(lambda x: jax.jit(big)(x), jnp.ones(3)).graph
    (inner,) = [graph.groups[c] for c in graph.groups[0].groups]
    assert inner.n_eqns > 50  # more than the budget: opened as the view would be one box
    n_nodes, n_boxes = graph.view("auto").visible_counts()
    assert inner.id in graph.expansion("auto")
    assert 8 <= n_nodes + n_boxes <= 90


def test_a_cheap_program_is_not_shaded_as_if_it_were_expensive():
    def tiny(xs):
        return jax.lax.scan(lambda c, x: (c + x, c * x), 0.0, xs)

    program = jaxviz.trace(tiny, jnp.ones(3))
    program.costs()
    (body,) = [g for g in program.graph.groups if g.kind == "eqn" and g.name == "lax.scan ×3"]
    heat = costs.group_heat(program.graph, body.id)
    assert heat is not None and heat.share == 1.0  # all of the program's few FLOPs
    assert heat.fill == costs.HEAT_STOPS[0]  # yet the palest, not deep brown


def test_a_loop_s_label_keeps_its_literal_operands_in_the_tooltip():
    program = jaxviz.trace(lambda xs: jax.lax.scan(lambda c, x: (c + x, c), 0.0, xs), jnp.ones(3))
    dot = program.to_dot(expand="all")
    assert 'label="scan' in dot and "scan 0.0" not in dot


def test_jnp_helpers_read_as_the_user_s_call():
    graph = jaxviz.trace(lambda x: jnp.roll(x, 1) + jnp.where(x > 0, x, 0.0), jnp.ones(4)).graph
    names = {g.name for g in graph.groups if g.holder is not None}
    assert names == {"roll", "where"}, names


def test_tooltip_params_leave_out_settings_left_at_nothing():
    graph = jaxviz.trace(lambda x: jax.jit(jnp.sin)(x) @ x, jnp.ones((3, 3))).graph
    shown = {k: v for n in graph.nodes for k, v in n.params.items()}
    assert "in_layouts" not in shown and "donated_invars" not in shown  # all None / all False
    assert all("None" not in v for v in shown.values()), shown
    assert "dimension_numbers" in shown  # what the equation does stays


def test_a_big_argument_opens_into_its_parts_not_a_row_of_leaves():
    params = {"embed": jnp.ones((8, 4)), "blocks": [{"w": jnp.ones((4, 4)), "b": jnp.ones(4)}
                                                    for _ in range(12)], "out": jnp.ones((4, 8))}
    graph = jaxviz.trace(lambda p, x: x @ p["embed"], params, jnp.ones((2, 8))).graph
    (top,) = [g for g in graph.groups if g.name == "p (26 arrays)"]
    (blocks,) = [graph.groups[c] for c in top.groups]
    assert blocks.name == "p['blocks'] (24 arrays)"
    assert [graph.groups[c].name for c in blocks.groups][:2] == ["p['blocks'][0] (2 arrays)",
                                                                 "p['blocks'][1] (2 arrays)"]
    assert sum(graph.view([top.id]).visible_counts()) < 10  # embed, out and one box
