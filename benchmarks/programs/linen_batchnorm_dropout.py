"""Flax Linen: BatchNorm and Dropout in a train step, the batch statistics carried in a
custom TrainState and the dropout key passed through ``rngs``.

Imitates the Flax guides https://flax.readthedocs.io/en/latest/guides/training_techniques/batch_norm.html
and https://flax.readthedocs.io/en/latest/guides/training_techniques/dropout.html
(``class TrainState(train_state.TrainState): batch_stats``, ``mutable=['batch_stats']``,
``rngs={'dropout': dropout_train_key}``).
"""

from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import optax
from flax.training import train_state

from . import Case


class MLP(nn.Module):
    hidden: int = 32

    @nn.compact
    def __call__(self, x, train: bool):
        x = nn.Dense(self.hidden)(x)
        x = nn.BatchNorm(use_running_average=not train)(x)
        x = nn.relu(x)
        x = nn.Dropout(rate=0.2, deterministic=not train)(x)
        x = nn.Dense(self.hidden)(x)
        x = nn.BatchNorm(use_running_average=not train)(x)
        x = nn.relu(x)
        return nn.Dense(3)(x)


class TrainState(train_state.TrainState):
    batch_stats: Any
    key: jax.Array


@jax.jit
def train_step(state, batch, dropout_key):
    dropout_train_key = jax.random.fold_in(key=dropout_key, data=state.step)

    def loss_fn(params):
        logits, updates = state.apply_fn(
            {"params": params, "batch_stats": state.batch_stats},
            x=batch["image"], train=True,
            rngs={"dropout": dropout_train_key}, mutable=["batch_stats"])
        loss = optax.softmax_cross_entropy_with_integer_labels(logits, batch["label"]).mean()
        return loss, (logits, updates)

    grad_fn = jax.value_and_grad(loss_fn, has_aux=True)
    (loss, (logits, updates)), grads = grad_fn(state.params)
    state = state.apply_gradients(grads=grads)
    state = state.replace(batch_stats=updates["batch_stats"])
    return state, loss


def program() -> Case:
    model = MLP()
    key = jax.random.PRNGKey(0)
    x = jnp.ones((8, 5))
    variables = model.init(key, x, train=False)
    state = TrainState.create(apply_fn=model.apply, params=variables["params"], tx=optax.adam(1e-3),
                              batch_stats=variables["batch_stats"], key=key)
    batch = {"image": x, "label": jnp.arange(8) % 3}
    # params: 3 dense (kernel, bias) + 2 bn (scale, bias) = 10; batch_stats 4; adam: count,
    # mu 10, nu 10; step; key: 1 + 10 + 21 + 4 + 1 = 37 state leaves; loss
    return Case(train_step, (state, batch, jax.random.PRNGKey(1)), outputs=37 + 1)
