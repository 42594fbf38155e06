"""Flax NNX: a CNN's MNIST train step with ``nnx.jit``, ``nnx.value_and_grad`` and
``nnx.Optimizer``, metrics in ``nnx.MultiMetric``.

Imitates the Flax NNX MNIST tutorial, https://flax.readthedocs.io/en/latest/mnist_tutorial.html
(``class CNN(nnx.Module)``, ``loss_fn``, ``@nnx.jit def train_step(model, optimizer, metrics, batch)``).
"""

from functools import partial

import jax
import jax.numpy as jnp
import optax
from flax import nnx

from . import Case


class CNN(nnx.Module):
    def __init__(self, *, rngs: nnx.Rngs):
        self.conv1 = nnx.Conv(1, 8, kernel_size=(3, 3), rngs=rngs)
        self.conv2 = nnx.Conv(8, 16, kernel_size=(3, 3), rngs=rngs)
        self.avg_pool = partial(nnx.avg_pool, window_shape=(2, 2), strides=(2, 2))
        self.linear1 = nnx.Linear(16 * 4 * 4, 32, rngs=rngs)
        self.linear2 = nnx.Linear(32, 10, rngs=rngs)

    def __call__(self, x):
        x = self.avg_pool(nnx.relu(self.conv1(x)))
        x = self.avg_pool(nnx.relu(self.conv2(x)))
        x = x.reshape(x.shape[0], -1)
        x = nnx.relu(self.linear1(x))
        return self.linear2(x)


def loss_fn(model: CNN, batch):
    logits = model(batch["image"])
    loss = optax.softmax_cross_entropy_with_integer_labels(logits=logits, labels=batch["label"]).mean()
    return loss, logits


@nnx.jit
def train_step(model: CNN, optimizer: nnx.Optimizer, metrics: nnx.MultiMetric, batch):
    grad_fn = nnx.value_and_grad(loss_fn, has_aux=True)
    (loss, logits), grads = grad_fn(model, batch)
    metrics.update(loss=loss, logits=logits, labels=batch["label"])
    optimizer.update(model, grads)


def state_leaves(*nodes) -> int:
    return len(jax.tree_util.tree_leaves(nnx.state(nodes)))


def program() -> Case:
    model = CNN(rngs=nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adamw(1e-3, 0.9), wrt=nnx.Param)
    metrics = nnx.MultiMetric(accuracy=nnx.metrics.Accuracy(), loss=nnx.metrics.Average("loss"))
    batch = {"image": jnp.ones((4, 16, 16, 1)), "label": jnp.array([1, 2, 3, 4])}
    # train_step returns None: what comes back is the state nnx.jit writes back into the
    # model, the optimizer and the metrics
    return Case(train_step, (model, optimizer, metrics, batch),
                outputs=state_leaves(model, optimizer, metrics), written_back=(model, optimizer, metrics))
