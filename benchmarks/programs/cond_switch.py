"""``lax.cond`` and ``lax.switch``: an activation picked by an index at run time, and a
Huber loss choosing its branch by the residual's size, differentiated.

Imitates JAX's "Control flow and logical operators with JIT",
https://docs.jax.dev/en/latest/control-flow.html (``lax.cond(pred, true_fun, false_fun, operand)``,
``lax.switch(index, branches, operand)``).
"""

import jax
import jax.numpy as jnp

from . import Case


def relu(x):
    return jnp.maximum(x, 0.0)


def swish(x):
    return x * jax.nn.sigmoid(x)


def softplus(x):
    return jnp.logaddexp(x, 0.0)


def huber(r):
    def quadratic(r):
        return 0.5 * r**2

    def linear(r):
        return jnp.abs(r) - 0.5

    return jax.lax.cond(jnp.abs(r) < 1.0, quadratic, linear, r)


def model(w, x, which):
    h = jax.lax.switch(which, [relu, swish, softplus], x @ w)
    return h.sum(-1)


@jax.jit
def loss_and_grad(w, x, y, which):
    def loss(w):
        return jax.vmap(huber)(model(w, x, which) - y).mean()

    return jax.value_and_grad(loss)(w)


def program() -> Case:
    w = jax.random.normal(jax.random.PRNGKey(0), (3, 4))
    return Case(loss_and_grad, (w, jnp.ones((5, 3)), jnp.zeros(5), jnp.int32(1)), outputs=2,
                loops=("huber",))
