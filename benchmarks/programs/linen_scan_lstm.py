"""Flax Linen: an LSTM run over a sequence with ``nn.scan``, its loss differentiated.

Imitates the Flax ``nn.scan`` docs, https://flax.readthedocs.io/en/latest/api_reference/flax.linen/_autosummary/flax.linen.scan.html
(``nn.scan(nn.LSTMCell, variable_broadcast='params', split_rngs={'params': False}, in_axes=1, out_axes=1)``).
"""

import flax.linen as nn
import jax
import jax.numpy as jnp

from . import Case


class SimpleScan(nn.Module):
    features: int

    @nn.compact
    def __call__(self, xs):
        LSTM = nn.scan(nn.LSTMCell, variable_broadcast="params", split_rngs={"params": False},
                       in_axes=1, out_axes=1)
        lstm = LSTM(self.features)
        carry = lstm.initialize_carry(jax.random.key(0), xs[:, 0].shape)
        carry, ys = lstm(carry, xs)
        return nn.Dense(1)(ys[:, -1])


MODEL = SimpleScan(features=8)


def loss_fn(params, xs, ys):
    pred = MODEL.apply({"params": params}, xs)
    return jnp.mean((pred - ys) ** 2)


@jax.jit
def grads(params, xs, ys):
    return jax.value_and_grad(loss_fn)(params, xs, ys)


def program() -> Case:
    xs = jnp.ones((2, 6, 3))
    params = MODEL.init(jax.random.PRNGKey(0), xs)["params"]
    n_params = len(jax.tree_util.tree_leaves(params))  # 8 gate kernels/biases + dense 2
    return Case(grads, (params, xs, jnp.zeros((2, 1))), outputs=1 + n_params,
                loops=("LSTMCell",))
