"""Equinox: a small CNN as ``eqx.nn.Sequential`` of convolutions, pooling and linear
layers, trained with optax inside an ``eqx.filter_jit`` step.

Imitates Equinox's "Train a CNN on MNIST" example,
https://docs.kidger.site/equinox/examples/mnist/ (``class CNN(eqx.Module)``, ``loss``,
``make_step`` with ``eqx.filter_value_and_grad`` and ``optim.update(grads, opt_state,
eqx.filter(model, eqx.is_array))``).
"""

import equinox as eqx
import jax
import jax.numpy as jnp
import optax

from . import Case


class CNN(eqx.Module):
    layers: list

    def __init__(self, key):
        k1, k2, k3 = jax.random.split(key, 3)
        self.layers = [
            eqx.nn.Conv2d(1, 3, kernel_size=4, key=k1),
            eqx.nn.MaxPool2d(kernel_size=2),
            jax.nn.relu,
            jnp.ravel,
            eqx.nn.Linear(3 * 24 * 24, 32, key=k2),
            jax.nn.sigmoid,
            eqx.nn.Linear(32, 10, key=k3),
            jax.nn.log_softmax,
        ]

    def __call__(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def loss(model, x, y):
    pred_y = jax.vmap(model)(x)
    return -jnp.mean(jnp.take_along_axis(pred_y, y[:, None], axis=1))


optim = optax.adamw(3e-4)


@eqx.filter_jit
def make_step(model, opt_state, x, y):
    loss_value, grads = eqx.filter_value_and_grad(loss)(model, x, y)
    updates, opt_state = optim.update(grads, opt_state, eqx.filter(model, eqx.is_array))
    model = eqx.apply_updates(model, updates)
    return model, opt_state, loss_value


def program() -> Case:
    model = CNN(jax.random.PRNGKey(0))
    opt_state = optim.init(eqx.filter(model, eqx.is_array))
    x, y = jnp.zeros((4, 1, 28, 28)), jnp.zeros((4,), jnp.int32)
    n = len(jax.tree_util.tree_leaves(eqx.filter(model, eqx.is_array))) + len(jax.tree_util.tree_leaves(opt_state)) + 1
    return Case(make_step, (model, opt_state, x, y), outputs=n,
                reference=lambda: eqx.filter_make_jaxpr(make_step)(model, opt_state, x, y)[0])
