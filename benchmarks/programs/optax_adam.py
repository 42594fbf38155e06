"""optax: fitting a linear model with ``optax.adam``, the update step jitted.

Imitates optax's "Getting started", https://optax.readthedocs.io/en/latest/getting_started.html
(``optimizer = optax.adam(learning_rate)``, ``updates, opt_state = optimizer.update(grads, opt_state)``,
``params = optax.apply_updates(params, updates)``).
"""

import jax
import jax.numpy as jnp
import optax

from . import Case

optimizer = optax.adam(learning_rate=1e-2)


def compute_loss(params, xs, ys):
    y_pred = xs @ params["w"] + params["b"]
    return jnp.mean(optax.l2_loss(y_pred, ys))


@jax.jit
def step(params, opt_state, xs, ys):
    loss_value, grads = jax.value_and_grad(compute_loss)(params, xs, ys)
    updates, opt_state = optimizer.update(grads, opt_state, params)
    params = optax.apply_updates(params, updates)
    return params, opt_state, loss_value


def program() -> Case:
    params = {"w": jnp.zeros((3, 1)), "b": jnp.zeros((1,))}
    opt_state = optimizer.init(params)
    xs = jax.random.normal(jax.random.PRNGKey(0), (16, 3))
    ys = xs @ jnp.array([[1.0], [-2.0], [0.5]])
    # params 2; adam state: count, mu 2, nu 2 (+ EmptyState); loss
    return Case(step, (params, opt_state, xs, ys), outputs=2 + 5 + 1, calls=("adam",))
