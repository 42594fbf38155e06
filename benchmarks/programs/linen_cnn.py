"""Flax Linen: a CNN classifier's train step with optax, on a TrainState.

Imitates flax's MNIST example, https://github.com/google/flax/blob/main/examples/mnist/train.py
(``CNN``, ``apply_model`` with ``jax.value_and_grad(has_aux=True)``, ``update_model``).
"""

import flax.linen as nn
import jax
import jax.numpy as jnp
import optax
from flax.training import train_state

from . import Case


class CNN(nn.Module):
    @nn.compact
    def __call__(self, x):
        x = nn.Conv(features=8, kernel_size=(3, 3))(x)
        x = nn.relu(x)
        x = nn.avg_pool(x, window_shape=(2, 2), strides=(2, 2))
        x = nn.Conv(features=16, kernel_size=(3, 3))(x)
        x = nn.relu(x)
        x = nn.avg_pool(x, window_shape=(2, 2), strides=(2, 2))
        x = x.reshape((x.shape[0], -1))
        x = nn.Dense(features=32)(x)
        x = nn.relu(x)
        return nn.Dense(features=10)(x)


@jax.jit
def apply_model(state, images, labels):
    def loss_fn(params):
        logits = state.apply_fn({"params": params}, images)
        one_hot = jax.nn.one_hot(labels, 10)
        loss = jnp.mean(optax.softmax_cross_entropy(logits=logits, labels=one_hot))
        return loss, logits

    grad_fn = jax.value_and_grad(loss_fn, has_aux=True)
    (loss, logits), grads = grad_fn(state.params)
    accuracy = jnp.mean(jnp.argmax(logits, -1) == labels)
    return grads, loss, accuracy


@jax.jit
def train_step(state, images, labels):
    grads, loss, accuracy = apply_model(state, images, labels)
    state = state.apply_gradients(grads=grads)
    return state, loss, accuracy


def program() -> Case:
    cnn = CNN()
    params = cnn.init(jax.random.PRNGKey(0), jnp.ones([1, 16, 16, 1]))["params"]
    state = train_state.TrainState.create(apply_fn=cnn.apply, params=params, tx=optax.sgd(0.1, 0.9))
    images = jax.random.normal(jax.random.PRNGKey(1), (4, 16, 16, 1))
    labels = jnp.array([0, 1, 2, 3])
    # state: step + 8 params + 8 momenta (sgd with momentum: trace of params) = 17; loss, accuracy
    return Case(train_step, (state, images, labels), outputs=17 + 2)
