"""Small things a person reading the graph trips over (issue #13, "seen along the way"),
each with the program that showed it."""

import jax.numpy as jnp

import jaxviz


def test_one_value_bound_to_two_names_is_one_output():
    program = jaxviz.trace_cell("loss = (x ** 2).sum()\nresult = loss\n", {"x": jnp.ones(3), "jnp": jnp})
    outputs = [n.label for n in program.graph.nodes if n.kind == "output"]
    assert outputs == ["loss = result"]
