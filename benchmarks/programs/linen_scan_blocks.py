"""Flax Linen: a transformer whose six identical blocks are created stacked and run with
``nn.scan`` (``variable_axes={"params": 0}``) under ``nn.remat``, trained with optax.

Imitates the Flax "scan over layers" pattern of the ``nn.scan`` docs,
https://flax.readthedocs.io/en/latest/api_reference/flax.linen/_autosummary/flax.linen.scan.html
(``nn.scan(nn.remat(Block), variable_axes={'params': 0}, split_rngs={'params': True}, length=...)``).
"""

import flax.linen as nn
import jax
import jax.numpy as jnp
import optax
from flax.training import train_state

from . import Case

LAYERS = 6


class Block(nn.Module):
    width: int

    @nn.compact
    def __call__(self, x, _):
        h = nn.LayerNorm()(x)
        h = nn.SelfAttention(num_heads=2, qkv_features=self.width)(h)
        x = x + h
        x = x + nn.Dense(self.width)(nn.gelu(nn.Dense(4 * self.width)(nn.LayerNorm()(x))))
        return x, None


class Encoder(nn.Module):
    width: int = 16

    @nn.compact
    def __call__(self, tokens):
        x = nn.Embed(32, self.width)(tokens)
        Stack = nn.scan(nn.remat(Block), variable_axes={"params": 0}, split_rngs={"params": True},
                        length=LAYERS)
        x, _ = Stack(self.width, name="blocks")(x, None)
        return nn.Dense(32)(nn.LayerNorm()(x))


@jax.jit
def train_step(state, tokens):
    def loss_fn(params):
        logits = state.apply_fn({"params": params}, tokens)
        return optax.softmax_cross_entropy_with_integer_labels(logits[:, :-1], tokens[:, 1:]).mean()

    loss, grads = jax.value_and_grad(loss_fn)(state.params)
    return state.apply_gradients(grads=grads), loss


def program() -> Case:
    model = Encoder()
    tokens = jnp.zeros((2, 8), jnp.int32)
    params = model.init(jax.random.PRNGKey(0), tokens)["params"]
    state = train_state.TrainState.create(apply_fn=model.apply, params=params, tx=optax.adamw(1e-3))
    n_state = len(jax.tree_util.tree_leaves(state))
    return Case(train_step, (state, tokens), outputs=n_state + 1, loops=("Block",), folds=(("Block", LAYERS),),
                calls=("TrainState.apply_gradients",))
