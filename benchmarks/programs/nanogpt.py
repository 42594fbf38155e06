"""nanoGPT in Flax Linen: GPT with causal self-attention blocks, AdamW with weight decay
on the matrices only, and the train step.

Imitates nanoGPT's JAX port, https://github.com/cgarciae/nanoGPT-jax/blob/master/model.py and
``train.py`` (``CausalSelfAttention``, ``MLP``, ``Block``, ``GPT``, ``train_step`` with
``jax.value_and_grad``), itself after https://github.com/karpathy/nanoGPT/blob/master/model.py.
"""

from dataclasses import dataclass

import flax.linen as nn
import jax
import jax.numpy as jnp
import optax
from flax.training.train_state import TrainState

from . import Case


@dataclass(frozen=True)
class GPTConfig:
    block_size: int = 16
    vocab_size: int = 64
    n_layer: int = 6
    n_head: int = 2
    n_embd: int = 32
    dropout: float = 0.0


class CausalSelfAttention(nn.Module):
    config: GPTConfig

    @nn.compact
    def __call__(self, x, train=False):
        B, T, C = x.shape
        n_head = self.config.n_head
        q, k, v = jnp.split(nn.Dense(3 * C, name="c_attn")(x), 3, axis=-1)
        q = q.reshape(B, T, n_head, C // n_head).swapaxes(1, 2)
        k = k.reshape(B, T, n_head, C // n_head).swapaxes(1, 2)
        v = v.reshape(B, T, n_head, C // n_head).swapaxes(1, 2)
        att = (q @ k.swapaxes(-2, -1)) * (1.0 / jnp.sqrt(k.shape[-1]))
        mask = jnp.tril(jnp.ones((T, T))).reshape((1, 1, T, T))
        att = jnp.where(mask == 0, float("-inf"), att)
        att = jax.nn.softmax(att, axis=-1)
        att = nn.Dropout(self.config.dropout)(att, deterministic=not train)
        y = (att @ v).swapaxes(1, 2).reshape(B, T, C)
        return nn.Dropout(self.config.dropout)(nn.Dense(C, name="c_proj")(y), deterministic=not train)


class MLP(nn.Module):
    config: GPTConfig

    @nn.compact
    def __call__(self, x, train=False):
        x = nn.Dense(4 * self.config.n_embd, name="c_fc")(x)
        x = nn.gelu(x, approximate=True)
        x = nn.Dense(self.config.n_embd, name="c_proj")(x)
        return nn.Dropout(self.config.dropout)(x, deterministic=not train)


class Block(nn.Module):
    config: GPTConfig

    @nn.compact
    def __call__(self, x, train=False):
        x = x + CausalSelfAttention(self.config, name="attn")(nn.LayerNorm(name="ln_1")(x), train)
        return x + MLP(self.config, name="mlp")(nn.LayerNorm(name="ln_2")(x), train)


class GPT(nn.Module):
    config: GPTConfig

    @nn.compact
    def __call__(self, idx, train=False, targets=None):
        b, t = idx.shape
        pos = jnp.arange(0, t)[None]
        wte = nn.Embed(self.config.vocab_size, self.config.n_embd, name="wte")
        x = wte(idx) + nn.Embed(self.config.block_size, self.config.n_embd, name="wpe")(pos)
        for i in range(self.config.n_layer):
            x = Block(self.config, name=str(i))(x, train)
        x = nn.LayerNorm(name="ln_f")(x)
        logits = wte.attend(x)
        loss = optax.softmax_cross_entropy_with_integer_labels(logits, targets).mean()
        return logits, loss


CONFIG = GPTConfig()
MODEL = GPT(CONFIG)


def configure_optimizers(params, weight_decay=0.1, learning_rate=6e-4):
    decay_mask = jax.tree_util.tree_map(lambda p: p.ndim >= 2, params)
    return optax.chain(optax.clip_by_global_norm(1.0),
                       optax.adamw(learning_rate, b1=0.9, b2=0.95, weight_decay=weight_decay, mask=decay_mask))


@jax.jit
def train_step(state: TrainState, tokens, dropout_key):
    x, y = tokens[:, :-1], tokens[:, 1:]

    def loss_fn(params):
        _, loss = state.apply_fn({"params": params}, x, train=True, targets=y, rngs={"dropout": dropout_key})
        return loss

    loss, grads = jax.value_and_grad(loss_fn)(state.params)
    state = state.apply_gradients(grads=grads)
    return loss, state


def program() -> Case:
    tokens = jax.random.randint(jax.random.PRNGKey(0), (2, CONFIG.block_size + 1), 0, CONFIG.vocab_size)
    params = MODEL.init(jax.random.PRNGKey(1), tokens[:, :-1], targets=tokens[:, 1:])["params"]
    state = TrainState.create(apply_fn=MODEL.apply, params=params, tx=configure_optimizers(params))
    n = len(jax.tree_util.tree_leaves(state))
    return Case(train_step, (state, tokens, jax.random.PRNGKey(2)), outputs=1 + n,
                folds=(("Block", CONFIG.n_layer),))
