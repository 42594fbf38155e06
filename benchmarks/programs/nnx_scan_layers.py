"""Flax NNX: four identical layers created stacked with ``nnx.vmap`` and run with
``nnx.scan``, inside an ``nnx.jit`` train step.

Imitates the Flax NNX transforms guide, "scan over layers",
https://flax.readthedocs.io/en/latest/guides/transforms.html
(``@nnx.vmap(in_axes=0, out_axes=0) def create_model(rngs)``, ``@nnx.scan(in_axes=(nnx.Carry, 0), out_axes=nnx.Carry)``).
"""

import jax
import jax.numpy as jnp
import optax
from flax import nnx

from . import Case

NUM_LAYERS = 4


class DotReluDot(nnx.Module):
    def __init__(self, dim: int, rngs: nnx.Rngs):
        self.linear1 = nnx.Linear(dim, dim, rngs=rngs)
        self.linear2 = nnx.Linear(dim, dim, rngs=rngs)

    def __call__(self, x):
        return self.linear2(nnx.relu(self.linear1(x)))


class StackedMLP(nnx.Module):
    def __init__(self, dim: int, rngs: nnx.Rngs):
        @nnx.split_rngs(splits=NUM_LAYERS)
        @nnx.vmap(in_axes=(0,), out_axes=0)
        def create_layer(rngs: nnx.Rngs):
            return DotReluDot(dim, rngs=rngs)

        self.layers = create_layer(rngs)
        self.head = nnx.Linear(dim, 1, rngs=rngs)

    def __call__(self, x):
        @nnx.scan(in_axes=(nnx.Carry, 0), out_axes=nnx.Carry)
        def forward(x, layer):
            return layer(x)

        return self.head(forward(x, self.layers))


@nnx.jit
def train_step(model, optimizer, x, y):
    def loss_fn(model):
        return jnp.mean((model(x) - y) ** 2)

    loss, grads = nnx.value_and_grad(loss_fn)(model)
    optimizer.update(model, grads)
    return loss


def program() -> Case:
    model = StackedMLP(8, rngs=nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.sgd(0.01), wrt=nnx.Param)
    n_state = len(jax.tree_util.tree_leaves(nnx.state((model, optimizer))))
    return Case(train_step, (model, optimizer, jnp.ones((4, 8)), jnp.zeros((4, 1))),
                outputs=1 + n_state, written_back=(model, optimizer), loops=("forward",), folds=(("DotReluDot", NUM_LAYERS),))
