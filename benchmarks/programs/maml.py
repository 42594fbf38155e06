"""Plain JAX: MAML on sine regression, an inner SGD step differentiated through by the
outer loss, vmapped over a batch of tasks, and an outer SGD update.

Imitates Eric Jang's "Meta-Learning in 50 Lines of JAX",
https://blog.evjang.com/2019/02/maml-jax.html (``inner_update``, ``maml_loss``,
``batch_maml_loss = vmap(maml_loss)``, ``step``).
"""

import jax
import jax.numpy as jnp

from . import Case

INNER_LR, OUTER_LR = 0.1, 1e-3


def net(params, x):
    for w, b in params[:-1]:
        x = jnp.tanh(x @ w + b)
    w, b = params[-1]
    return x @ w + b


def loss(params, x, y):
    return jnp.mean((net(params, x) - y) ** 2)


def inner_update(params, x, y):
    grads = jax.grad(loss)(params, x, y)
    return jax.tree.map(lambda p, g: p - INNER_LR * g, params, grads)


def maml_loss(params, x1, y1, x2, y2):
    return loss(inner_update(params, x1, y1), x2, y2)


@jax.jit
def step(params, x1, y1, x2, y2):
    def batch_loss(p):
        return jnp.mean(jax.vmap(maml_loss, in_axes=(None, 0, 0, 0, 0))(p, x1, y1, x2, y2))

    value, grads = jax.value_and_grad(batch_loss)(params)
    return jax.tree.map(lambda p, g: p - OUTER_LR * g, params, grads), value


def program() -> Case:
    keys = jax.random.split(jax.random.PRNGKey(0), 3)
    sizes = [(1, 40), (40, 40), (40, 1)]
    params = [(jax.random.normal(k, s) * 0.1, jnp.zeros(s[1])) for k, s in zip(keys, sizes)]
    x = jnp.ones((4, 10, 1))
    return Case(step, (params, x, x, x, x), outputs=len(sizes) * 2 + 1)
