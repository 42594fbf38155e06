"""Flax NNX: ``nnx.jit`` on modules and optimizers, their static attributes."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import optax
from flax import nnx

from .record import history


# https://github.com/google/flax/issues/4329 (nnx.jit recompiles: a module attribute changed)
@history("nnx.jit: a module attribute changed", "loss", "pytree_structure", "model.step_count",
         url="https://github.com/google/flax/issues/4329", says=("0", "1"), requires="flax")
def attribute_changed() -> None:
    class MLP(nnx.Module):
        def __init__(self, rngs):
            self.linear = nnx.Linear(20, 1, rngs=rngs)
            self.step_count = 0

        def __call__(self, x):
            return self.linear(x)

    @nnx.jit
    def loss(model, xs):
        return jnp.mean(model(xs))

    model = MLP(nnx.Rngs(0))
    loss(model, jnp.ones((4, 20)))
    model.step_count += 1
    loss(model, jnp.ones((4, 20)))


# https://github.com/google/flax/issues/5116 (an nnx.jit train step on batches)
@history("nnx.jit: batch size", "loss", "shape", "xs",
         url="https://github.com/google/flax/issues/5116", says=("(32, 20)", "(4, 20)"),
         requires="flax")
def batch_size() -> None:
    @nnx.jit
    def loss(model, xs):
        return jnp.mean(model(xs))

    model = nnx.Linear(20, 1, rngs=nnx.Rngs(0))
    loss(model, jnp.ones((32, 20)))
    loss(model, jnp.ones((4, 20)))


# https://github.com/google/flax/issues/5548 (the discriminator and its nnx.Optimizer made
# again each epoch: train_one_epoch recompiles every epoch)
@history("nnx.Optimizer rebuilt each epoch", "train_one_epoch", "pytree_structure", "dis_opt.tx",
         url="https://github.com/google/flax/issues/5548", says=("identity",), requires="flax")
def optimizer_rebuilt_each_epoch() -> None:
    class Discriminator(nnx.Module):
        def __init__(self, rngs):
            self.linear = nnx.Linear(8, 1, rngs=rngs)

        def __call__(self, x):
            return self.linear(x)

    @nnx.jit
    def train_one_epoch(dis, dis_opt, x):
        loss, grads = nnx.value_and_grad(lambda d: jnp.mean(d(x) ** 2))(dis)
        dis_opt.update(dis, grads)
        return loss

    rngs = nnx.Rngs(0)
    for _ in range(2):
        dis = Discriminator(rngs=rngs)
        dis_opt = nnx.Optimizer(dis, optax.adam(1e-3), wrt=nnx.Param)
        train_one_epoch(dis, dis_opt, jnp.ones((4, 8)))


# https://github.com/google/flax/issues/4329 (a comment: "non-nnx objects that hash by identity")
@history("nnx module rebuilt with an activation object", "forward", "pytree_structure",
         "model.activation", url="https://github.com/google/flax/issues/4329",
         says=("identity",), requires="flax")
def activation_object() -> None:
    class Swish:
        def __call__(self, x):
            return x * jax.nn.sigmoid(x)

    class MLP(nnx.Module):
        def __init__(self, activation, rngs):
            self.linear = nnx.Linear(4, 4, rngs=rngs)
            self.activation = activation

        def __call__(self, x):
            return self.activation(self.linear(x))

    @nnx.jit
    def forward(model, x):
        return model(x)

    for seed in range(2):  # stability across initialisations: a new model per run
        forward(MLP(Swish(), nnx.Rngs(seed)), jnp.ones((2, 4)))


# https://github.com/google/flax/pull/4316 (the MNIST tutorial: ``model.eval()`` before the
# jitted ``pred_step``, which the training loop already compiled in train mode)
@history("nnx model.eval() before the same jitted step", "pred_step", "pytree_structure",
         "model.dropout.deterministic", url="https://github.com/google/flax/pull/4316",
         says=("False", "True"), requires="flax")
def eval_mode() -> None:
    class CNN(nnx.Module):
        def __init__(self, rngs):
            self.linear = nnx.Linear(8, 4, rngs=rngs)
            self.dropout = nnx.Dropout(0.1, rngs=rngs)

        def __call__(self, x):
            return self.dropout(self.linear(x))

    @nnx.jit
    def pred_step(model, x):
        return model(x).argmax(axis=1)

    model = CNN(nnx.Rngs(0))
    pred_step(model, jnp.ones((2, 8)))  # called during training (a metrics pass)
    model.eval()  # Switch to evaluation mode.
    pred_step(model, jnp.ones((2, 8)))


# https://github.com/google/flax/issues/3863 ("nnx static fields not part of static tree
# structure": an nnx.Module passed to plain jax.jit, a plain attribute x=1 then x=2)
@history("nnx module under jax.jit, plain attribute changed", "forward", "pytree_structure",
         "c.x", url="https://github.com/google/flax/issues/3863", says=("1", "2"),
         requires="flax")
def nnx_module_plain_jit() -> None:
    class C(nnx.Module):
        def __init__(self, x, rngs):
            self.linear = nnx.Linear(2, 2, rngs=rngs)
            self.x = x

    @jax.jit
    def forward(c, v):
        return c.linear(v) * c.x

    forward(C(1, nnx.Rngs(0)), jnp.ones(2))
    forward(C(2, nnx.Rngs(0)), jnp.ones(2))
