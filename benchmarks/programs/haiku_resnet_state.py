"""Haiku: a small ResNet with batch norm, transformed with state, trained with optax; the
step's gradient and the new batch statistics come out of one ``jax.jit``.

Imitates Haiku's ImageNet example, https://github.com/google-deepmind/dm-haiku/tree/main/examples/imagenet
(``hk.transform_with_state``, ``loss_fn(params, state, inputs)`` returning ``(loss,
state)`` with ``has_aux=True``, ``optax.sgd`` with momentum in ``train_step``).
"""

import haiku as hk
import jax
import jax.numpy as jnp
import optax

from . import Case

BLOCKS = 3


class ResBlock(hk.Module):
    def __init__(self, channels, name=None):
        super().__init__(name=name)
        self.channels = channels

    def __call__(self, x, is_training):
        h = hk.Conv2D(self.channels, 3)(x)
        h = hk.BatchNorm(create_scale=True, create_offset=True, decay_rate=0.9)(h, is_training)
        h = jax.nn.relu(h)
        h = hk.Conv2D(self.channels, 3)(h)
        h = hk.BatchNorm(create_scale=True, create_offset=True, decay_rate=0.9)(h, is_training)
        return jax.nn.relu(x + h)


def forward(images, is_training):
    x = hk.Conv2D(8, 3)(images)
    for _ in range(BLOCKS):
        x = ResBlock(8)(x, is_training)
    return hk.Linear(10)(jnp.mean(x, axis=(1, 2)))


model = hk.transform_with_state(forward)
optimizer = optax.sgd(0.1, momentum=0.9)


def loss_fn(params, state, images, labels):
    logits, state = model.apply(params, state, None, images, is_training=True)
    loss = optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()
    return loss, state


@jax.jit
def train_step(params, state, opt_state, images, labels):
    (loss, state), grads = jax.value_and_grad(loss_fn, has_aux=True)(params, state, images, labels)
    updates, opt_state = optimizer.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), state, opt_state, loss


def program() -> Case:
    images, labels = jnp.ones((4, 8, 8, 3)), jnp.zeros((4,), jnp.int32)
    params, state = model.init(jax.random.PRNGKey(0), images, is_training=True)
    opt_state = optimizer.init(params)
    n = sum(len(jax.tree_util.tree_leaves(t)) for t in (params, state, opt_state)) + 1
    return Case(train_step, (params, state, opt_state, images, labels), outputs=n,
                folds=(("res_block", BLOCKS),))
