"""``jax.pmap``: a small Flax ResNet's data-parallel train step on 8 devices, gradients
and batch statistics averaged across devices with ``lax.pmean``.

Imitates Flax's ImageNet example, https://github.com/google/flax/blob/main/examples/imagenet/train.py
(``train_step`` with ``grads = lax.pmean(grads, axis_name='batch')``,
``jax.pmap(train_step, axis_name='batch')``, ``jax_utils.replicate(state)``) and its
``models.py`` (``ResNetBlock``).
"""

from functools import partial
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import optax
from flax import jax_utils
from flax.training import train_state

from . import Case

DEVICES = 8
BLOCKS = 3


class ResNetBlock(nn.Module):
    filters: int

    @nn.compact
    def __call__(self, x):
        residual = x
        y = nn.Conv(self.filters, (3, 3), use_bias=False)(x)
        y = nn.BatchNorm(use_running_average=False, momentum=0.9)(y)
        y = nn.relu(y)
        y = nn.Conv(self.filters, (3, 3), use_bias=False)(y)
        y = nn.BatchNorm(use_running_average=False, momentum=0.9, scale_init=nn.initializers.zeros)(y)
        return nn.relu(residual + y)


class ResNet(nn.Module):
    num_classes: int = 10

    @nn.compact
    def __call__(self, x):
        x = nn.Conv(8, (3, 3), use_bias=False, name="conv_init")(x)
        x = nn.relu(nn.BatchNorm(use_running_average=False, name="bn_init")(x))
        for _ in range(BLOCKS):
            x = ResNetBlock(8)(x)
        x = jnp.mean(x, axis=(1, 2))
        return nn.Dense(self.num_classes)(x)


class TrainState(train_state.TrainState):
    batch_stats: Any


@partial(jax.pmap, axis_name="batch")
def train_step(state, batch):
    def loss_fn(params):
        logits, new_model_state = state.apply_fn(
            {"params": params, "batch_stats": state.batch_stats}, batch["image"], mutable=["batch_stats"])
        one_hot = jax.nn.one_hot(batch["label"], 10)
        loss = jnp.mean(optax.softmax_cross_entropy(logits, one_hot))
        return loss, (new_model_state, logits)

    grad_fn = jax.value_and_grad(loss_fn, has_aux=True)
    (loss, (new_model_state, logits)), grads = grad_fn(state.params)
    grads = jax.lax.pmean(grads, axis_name="batch")
    batch_stats = jax.lax.pmean(new_model_state["batch_stats"], axis_name="batch")
    new_state = state.apply_gradients(grads=grads, batch_stats=batch_stats)
    metrics = {"loss": jax.lax.pmean(loss, "batch"),
               "accuracy": jax.lax.pmean(jnp.mean(jnp.argmax(logits, -1) == batch["label"]), "batch")}
    return new_state, metrics


def program() -> Case:
    model = ResNet()
    variables = model.init(jax.random.PRNGKey(0), jnp.ones((1, 8, 8, 3)))
    state = TrainState.create(apply_fn=model.apply, params=variables["params"], tx=optax.sgd(0.1, 0.9),
                              batch_stats=variables["batch_stats"])
    state = jax_utils.replicate(state)
    batch = {"image": jnp.ones((DEVICES, 2, 8, 8, 3)), "label": jnp.zeros((DEVICES, 2), jnp.int32)}
    n = len(jax.tree_util.tree_leaves(state))
    return Case(train_step, (state, batch), outputs=n + 2, folds=(("ResNetBlock", BLOCKS),))
