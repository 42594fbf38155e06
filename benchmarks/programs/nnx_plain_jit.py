"""Flax NNX: a model and its optimizer passed to a plain ``jax.jit`` (NNX modules are
pytrees), the optimizer updated inside and never returned, so its update is lost. A bug
users write (flax issues on "optimizer state not updated under jax.jit"); the graph
should show the update as lost.

Imitates the Flax NNX docs "Flax NNX and JAX transforms",
https://flax.readthedocs.io/en/latest/guides/jax_and_nnx_transforms.html, where a
``jax.jit`` step must ``nnx.split``/``nnx.merge`` and return the new state.
"""

import jax
import jax.numpy as jnp
import optax
from flax import nnx

from . import Case


class Regressor(nnx.Module):
    def __init__(self, rngs: nnx.Rngs):
        self.hidden = nnx.Linear(4, 16, rngs=rngs)
        self.out = nnx.Linear(16, 1, rngs=rngs)

    def __call__(self, x):
        return self.out(nnx.tanh(self.hidden(x)))


@jax.jit
def train_step(model, optimizer, x, y):
    def loss_fn(model):
        pred = model(x)
        return jnp.mean((pred - y) ** 2), pred

    (loss, pred), grads = nnx.value_and_grad(loss_fn, has_aux=True)(model)
    optimizer.update(model, grads)  # updates traced copies: lost when the call returns
    return loss, pred, jnp.abs(pred - y).max()


def program() -> Case:
    model = Regressor(nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)
    x = jnp.linspace(-1, 1, 32).reshape(8, 4)
    return Case(train_step, (model, optimizer, x, jnp.sin(x[:, :1])), outputs=3)
