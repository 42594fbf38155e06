"""A zoo of JAX programs covering every kind of sub-jaxpr, shared by several tests."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.experimental import pallas as pl

from jaxviz import _jax_internals as internals


def mlp_loss(params, x, y):
    h = jnp.tanh(x @ params["w1"] + params["b1"])
    out = h @ params["w2"]
    return ((out - y) ** 2).mean()


def make_params(key=0):
    k1, k2 = jax.random.split(jax.random.PRNGKey(key))
    return {"w1": jax.random.normal(k1, (4, 8)), "b1": jnp.zeros(8), "w2": jax.random.normal(k2, (8, 2))}


@jax.custom_jvp
def softplus(x):
    return jnp.log1p(jnp.exp(x))


@softplus.defjvp
def _softplus_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return softplus(x), t * jax.nn.sigmoid(x)


@jax.custom_vjp
def clip_gradient(x):
    return x


def _clip_fwd(x):
    return x, None


def _clip_bwd(_, g):
    return (jnp.clip(g, -1, 1),)


clip_gradient.defvjp(_clip_fwd, _clip_bwd)


def inner(x):
    return jnp.sin(x) * 2


def jit_in_jit(x):
    return jax.jit(inner)(x) + jax.jit(lambda y: jnp.cos(jax.jit(inner)(y)))(x)


def with_scan(x):
    def body(carry, xi):
        carry = carry + jnp.sin(xi)
        return carry, carry * 2

    return jax.lax.scan(body, 0.0, x)


def with_cond(x, flag):
    return jax.lax.cond(flag, lambda v: v + 1, lambda v: jnp.exp(v), x)


def with_while(x):
    return jax.lax.while_loop(lambda c: c[0] < 10, lambda c: (c[0] + 1, c[1] * 1.5), (0, x))


def with_fori(x):
    return jax.lax.fori_loop(0, 5, lambda i, v: v + i * jnp.tanh(v), x)


def convolve(x, w):
    return jnp.array([jnp.dot(x[i - 1:i + 2], w) for i in range(1, len(x) - 1)])


def with_checkpoint(x):
    f = jax.checkpoint(lambda v: jnp.sin(jnp.sin(v)))
    return jax.grad(lambda v: f(v).sum())(x)


def with_custom(x):
    return jax.grad(lambda v: (softplus(v) * clip_gradient(v)).sum())(x)


def switch3(i, x):
    return jax.lax.switch(i, [jnp.sin, jnp.cos, lambda v: -v], x)


def layer(x, w):
    return jnp.tanh(x @ w)


def stacked(ws, x):
    """Four calls of the same layer: folded into one "layer ×4" group per pass."""
    for w in ws:
        x = layer(x, w)
    return (x ** 2).sum()


def flax_apply():
    """A Flax linen MLP's apply function, its variables and an input."""
    nn = pytest.importorskip("flax.linen")

    class MLP(nn.Module):
        @nn.compact
        def __call__(self, x):
            x = nn.relu(nn.Dense(16)(x))
            return nn.Dense(3)(x)

    model = MLP()
    x = jnp.ones((2, 5))
    variables = model.init(jax.random.PRNGKey(0), x)
    return model.apply, variables, x


def two_gradients(d, g, x):
    """A GAN's step in plain JAX: the discriminator's gradient taken and applied, then the
    generator's: two differentiations, each pass named after its loss."""
    def d_loss_fn(d):
        return jnp.sum(jnp.tanh(x @ d))

    d = d - 0.1 * jax.grad(d_loss_fn)(d)

    def g_loss_fn(g):
        return jnp.sum(jnp.tanh((x @ g) @ d))

    return d, g - 0.1 * jax.grad(g_loss_fn)(g)


X3 = jnp.arange(3.0)
X8 = jnp.linspace(-1.0, 1.0, 8)

# name → (function, args, kwargs for jaxviz.trace)
ZOO = {
    "jit_in_jit": (jit_in_jit, (X3,), {}),
    "scan": (with_scan, (X8,), {}),
    "cond": (with_cond, (X3, True), {}),
    "while_loop": (with_while, (X3,), {}),
    "fori_loop": (with_fori, (X3,), {}),
    "vmap_convolve": (jax.vmap(convolve, in_axes=[0, None]), (jnp.ones((4, 8)), jnp.ones(3)), {}),
    "grad": (jax.grad(mlp_loss), (make_params(), jnp.ones((5, 4)), jnp.ones((5, 2))), {}),
    "value_and_grad_jit": (jax.jit(jax.value_and_grad(mlp_loss)), (make_params(), jnp.ones((5, 4)), jnp.ones((5, 2))), {}),
    "custom_jvp_vjp": (with_custom, (X3,), {}),
    "checkpoint": (with_checkpoint, (X3,), {}),
    "switch": (switch3, (1, X3), {}),
    "static_neg": (lambda x, neg: -x if neg else x, (X3, True), {"static_argnums": 1}),
    "numpy_const": (lambda x: x + np.arange(3.0), (X3,), {}),
    "partial": (functools.partial(with_cond, flag=False), (X3,), {}),
    "two_gradients": (two_gradients, (jnp.eye(4), jnp.eye(4), jnp.ones((2, 4))), {}),
    "repeated_layers": (jax.value_and_grad(stacked, argnums=(0, 1)), ([jnp.eye(3) * 0.5] * 4, jnp.ones((2, 3))), {}),
}


def recursive_eqn_count(jaxpr) -> int:
    """Reference count, through JAX's own sub-jaxpr finder (public from JAX 0.10)."""
    return sum(1 + sum(recursive_eqn_count(sub) for sub in internals.jaxprs_in_params(e.params))
               for e in jaxpr.eqns)


# A 12-block model: a call per block, each calling ln (the call groups of test_tracing, test_render).
def block(x, w):
    return jnp.tanh(ln(x) @ w)


def ln(x):
    return (x - x.mean(-1, keepdims=True)) / (x.std(-1, keepdims=True) + 1e-5)


def deep_loss(ws, x):
    for w in ws:
        x = block(x, w)
    return (x ** 2).mean()


def pallas_matmul(x, y, grid):
    """The Pallas quickstart's blocked matmul (interpret mode: runs on the CPU)."""
    def kernel(x_ref, y_ref, z_ref):
        z_ref[...] = x_ref[...] @ y_ref[...]

    bm, bn = x.shape[0] // grid[0], y.shape[1] // grid[1]
    return pl.pallas_call(
        kernel, out_shape=jax.ShapeDtypeStruct((x.shape[0], y.shape[1]), x.dtype), grid=grid,
        in_specs=[pl.BlockSpec((bm, x.shape[1]), lambda i, j: (i, 0)),
                  pl.BlockSpec((y.shape[0], bn), lambda i, j: (0, j))],
        out_specs=pl.BlockSpec((bm, bn), lambda i, j: (i, j)), interpret=True)(x, y)
