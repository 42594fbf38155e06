"""Flax NNX: an ensemble of MLPs created with ``nnx.split_rngs`` + ``nnx.vmap`` (each
member its own random init), run with ``nnx.vmap`` over the members, and trained in one
``nnx.jit`` step that writes the new state back into the ensemble and its optimizer.

Imitates the Flax NNX transforms guide's ensemble ("Transforms", the ``create_model``
under ``@nnx.split_rngs(splits=5)`` / ``@nnx.vmap(in_axes=(0,))`` and the
``forward(model, x)`` under ``@nnx.vmap(in_axes=(0, None))``),
https://flax.readthedocs.io/en/latest/guides/transforms.html, with the MNIST tutorial's
``nnx.Optimizer`` step, https://flax.readthedocs.io/en/latest/mnist_tutorial.html.
"""

import jax
import jax.numpy as jnp
import optax
from flax import nnx

from . import Case

ENSEMBLE = 4


class MLP(nnx.Module):
    def __init__(self, din, dmid, dout, *, rngs: nnx.Rngs):
        self.linear1 = nnx.Linear(din, dmid, rngs=rngs)
        self.dropout = nnx.Dropout(0.1, rngs=rngs)
        self.linear2 = nnx.Linear(dmid, dout, rngs=rngs)

    def __call__(self, x):
        return self.linear2(self.dropout(nnx.gelu(self.linear1(x))))


@nnx.split_rngs(splits=ENSEMBLE)
@nnx.vmap(in_axes=(0,), out_axes=0)
def create_ensemble(rngs: nnx.Rngs):
    return MLP(3, 32, 1, rngs=rngs)


@nnx.vmap(in_axes=(0, None), out_axes=0)
def forward(model: MLP, x):
    return model(x)


@nnx.jit
def train_step(model: MLP, optimizer: nnx.Optimizer, x, y):
    def loss_fn(model):
        return jnp.mean((forward(model, x) - y) ** 2)

    loss, grads = nnx.value_and_grad(loss_fn)(model)
    optimizer.update(model, grads)
    return loss


def state_leaves(*nodes) -> int:
    return len(jax.tree_util.tree_leaves(nnx.state(nodes)))


def program() -> Case:
    model = create_ensemble(nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)
    x = jnp.linspace(-1, 1, 48).reshape(16, 3)
    y = jnp.sum(jnp.sin(x), axis=-1, keepdims=True)
    # the loss, and the state nnx.jit writes back into the ensemble and its optimizer
    return Case(train_step, (model, optimizer, x, y), outputs=1 + state_leaves(model, optimizer),
                written_back=(model, optimizer))
