"""optax: Adam whose learning rate is a hyperparameter in the optimizer state
(``optax.inject_hyperparams``), decayed by the train step, on a linear regression.

Imitates optax's "inject_hyperparams" docs and its "Learning rate schedules" example,
https://optax.readthedocs.io/en/latest/api/optimizer_schedules.html#optax.inject_hyperparams
(``optax.inject_hyperparams(optax.adam)(learning_rate=...)``, ``opt_state.hyperparams['learning_rate']``).
"""

import jax
import jax.numpy as jnp
import optax

from . import Case

optimizer = optax.inject_hyperparams(optax.adam)(learning_rate=0.1)


def loss(params, x, y):
    return jnp.mean((x @ params["w"] + params["b"] - y) ** 2)


@jax.jit
def step(params, opt_state, x, y):
    value, grads = jax.value_and_grad(loss)(params, x, y)
    opt_state.hyperparams["learning_rate"] = opt_state.hyperparams["learning_rate"] * 0.99
    updates, opt_state = optimizer.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state, value


def program() -> Case:
    params = {"w": jnp.zeros((3, 1)), "b": jnp.zeros(1)}
    opt_state = optimizer.init(params)
    n = len(jax.tree_util.tree_leaves((params, opt_state))) + 1
    return Case(step, (params, opt_state, jnp.ones((8, 3)), jnp.ones((8, 1))), outputs=n,
                calls=("optax.inject_hyperparams",))
