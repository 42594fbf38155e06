"""Property-based: random compositions of jnp ops never crash the tracer or the renderers,
and the graph always accounts for every equation."""

import jax
import jax.numpy as jnp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from zoo import recursive_eqn_count

import jaxviz
from jaxviz.render.html import program_html
from jaxviz.render.notebook import program_mimebundle

UNARY = [jnp.sin, jnp.tanh, jnp.exp, jnp.abs, lambda v: jnp.cumsum(v, axis=0), lambda v: v.T, lambda v: v * 2.0,
         lambda v: jnp.where(v > 0, v, -v), lambda v: v.sum(0, keepdims=True) + v]
BINARY = [jnp.add, jnp.multiply, jnp.maximum, lambda a, b: a @ b.T @ a, jnp.subtract]
WRAPPERS = ["none", "jit", "grad", "vmap", "scan", "cond", "checkpoint"]


def build(ops):
    def f(x, y):
        vals = [x, y]
        for kind, i, j in ops:
            if kind == "u":
                vals.append(UNARY[i % len(UNARY)](vals[j % len(vals)]))
            else:
                a, b = vals[j % len(vals)], vals[(j + i) % len(vals)]
                vals.append(BINARY[i % len(BINARY)](a, b))
        return vals[-1]

    return f


def wrap(f, how):
    if how == "jit":
        return jax.jit(f)
    if how == "grad":
        return jax.grad(lambda x, y: f(x, y).sum())
    if how == "vmap":
        return jax.vmap(f, in_axes=(0, None))
    if how == "scan":
        return lambda x, y: jax.lax.scan(lambda c, _: (f(c, y), None), x, None, length=2)[0]
    if how == "cond":
        return lambda x, y: jax.lax.cond(x.sum() > 0, f, lambda a, b: a * 1.0, x, y)
    if how == "checkpoint":
        return jax.checkpoint(f)
    return f


op = st.tuples(st.sampled_from("ub"), st.integers(0, 20), st.integers(0, 20))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=st.lists(op, min_size=1, max_size=8), how=st.sampled_from(WRAPPERS),
       expand=st.sampled_from([0, 1, "all", None]))
def test_random_programs_trace_and_render(ops, how, expand):
    x = jnp.ones((3, 3)) * 0.5
    fn = wrap(build(ops), how)
    args = (jnp.stack([x, x]), x) if how == "vmap" else (x, x)
    program = jaxviz.trace(fn, *args)
    assert len(program.graph.eqn_nodes()) == recursive_eqn_count(program.jaxpr.jaxpr)
    program.expand = expand
    view = program.graph.view(expand)
    assert sum(view.visible_counts()) >= 1
    dot_source = program.to_dot()
    assert dot_source.startswith("digraph")
    assert "jaxviz-program" in program_html(program)
    bundle = program_mimebundle(program, use_dot=False)
    assert bundle["text/plain"]
