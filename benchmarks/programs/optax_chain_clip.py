"""optax: a chain of gradient clipping, Adam's scaling, weight decay and a learning-rate
schedule, on an MLP.

Imitates optax's "Gradient clipping" and "Combining optimizers" docs,
https://optax.readthedocs.io/en/latest/api/transformations.html#optax.chain
(``optax.chain(optax.clip_by_global_norm(1.0), optax.scale_by_adam(), optax.add_decayed_weights(...),
optax.scale_by_schedule(...), optax.scale(-1.0))``).
"""

import jax
import jax.numpy as jnp
import optax

from . import Case

schedule = optax.warmup_cosine_decay_schedule(init_value=0.0, peak_value=1e-3, warmup_steps=10,
                                              decay_steps=100)
optimizer = optax.chain(
    optax.clip_by_global_norm(1.0),
    optax.scale_by_adam(),
    optax.add_decayed_weights(1e-4),
    optax.scale_by_schedule(schedule),
    optax.scale(-1.0),
)


def mlp(params, x):
    for layer in params[:-1]:
        x = jax.nn.relu(x @ layer["w"] + layer["b"])
    return x @ params[-1]["w"] + params[-1]["b"]


def loss_fn(params, x, y):
    return jnp.mean((mlp(params, x) - y) ** 2)


@jax.jit
def train_step(params, opt_state, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    updates, opt_state = optimizer.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state, loss


def program() -> Case:
    keys = jax.random.split(jax.random.PRNGKey(0), 3)
    sizes = [4, 16, 16, 1]
    params = [{"w": jax.random.normal(k, (m, n)) / jnp.sqrt(m), "b": jnp.zeros(n)}
              for k, m, n in zip(keys, sizes[:-1], sizes[1:])]
    opt_state = optimizer.init(params)
    n = len(jax.tree_util.tree_leaves((params, opt_state)))
    return Case(train_step, (params, opt_state, jnp.ones((8, 4)), jnp.zeros((8, 1))), outputs=n + 1,
                calls=("clip_by_global_norm", "scale_by_adam"))
