"""optax.contrib: schedule-free AdamW wrapped around a logistic regression, with the
evaluation parameters read off the optimizer state.

Imitates optax's schedule-free docs,
https://optax.readthedocs.io/en/latest/api/contrib.html#schedule-free
(``optax.contrib.schedule_free_adamw``, ``optax.contrib.schedule_free_eval_params``).
"""

import jax
import jax.numpy as jnp
import optax

from . import Case

optimizer = optax.contrib.schedule_free_adamw(learning_rate=1e-2, warmup_steps=5)


def loss_fn(params, x, y):
    logits = x @ params["w"] + params["b"]
    return optax.sigmoid_binary_cross_entropy(logits, y).mean()


@jax.jit
def train_step(params, opt_state, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    updates, opt_state = optimizer.update(grads, opt_state, params)
    params = optax.apply_updates(params, updates)
    eval_params = optax.contrib.schedule_free_eval_params(opt_state, params)
    return params, opt_state, loss, eval_params


def program() -> Case:
    params = {"w": jnp.zeros((5,)), "b": jnp.zeros(())}
    opt_state = optimizer.init(params)
    x = jax.random.normal(jax.random.PRNGKey(0), (32, 5))
    y = (x[:, 0] > 0).astype(jnp.float32)
    n = len(jax.tree_util.tree_leaves((params, opt_state)))
    return Case(train_step, (params, opt_state, x, y), outputs=n + 1 + 2, calls=("schedule_free_adamw",))
