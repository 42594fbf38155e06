"""Haiku: a decoder-only transformer language model and its train step (loss,
``jax.value_and_grad``, optax), the model ``hk.transform``ed.

Imitates Haiku's transformer example, https://github.com/google-deepmind/dm-haiku/tree/main/examples/transformer
(``model.py``: ``Transformer`` with ``hk.MultiHeadAttention`` and a ``DenseBlock``;
``train.py``: ``forward_fn``, ``lm_loss_fn``, ``update``).
"""

import haiku as hk
import jax
import jax.numpy as jnp
import optax

from . import Case

VOCAB, SEQ, D_MODEL, HEADS, LAYERS = 64, 16, 32, 4, 4


def layer_norm(x):
    return hk.LayerNorm(axis=-1, create_scale=True, create_offset=True)(x)


class DenseBlock(hk.Module):
    def __init__(self, widening_factor=4, name=None):
        super().__init__(name=name)
        self._widening_factor = widening_factor

    def __call__(self, x):
        hiddens = x.shape[-1]
        x = hk.Linear(self._widening_factor * hiddens)(x)
        x = jax.nn.gelu(x)
        return hk.Linear(hiddens)(x)


class Transformer(hk.Module):
    def __init__(self, num_heads, num_layers, name=None):
        super().__init__(name=name)
        self._num_heads = num_heads
        self._num_layers = num_layers

    def __call__(self, embeddings):
        seq_len = embeddings.shape[1]
        causal_mask = jnp.tril(jnp.ones((1, 1, seq_len, seq_len)))
        h = embeddings
        for _ in range(self._num_layers):
            h_norm = layer_norm(h)
            attn = hk.MultiHeadAttention(num_heads=self._num_heads, key_size=D_MODEL // self._num_heads,
                                         w_init=hk.initializers.VarianceScaling(0.02))
            h = h + attn(h_norm, h_norm, h_norm, mask=causal_mask)
            h = h + DenseBlock()(layer_norm(h))
        return layer_norm(h)


def forward_fn(tokens):
    token_embedding_map = hk.Embed(VOCAB, D_MODEL)
    token_embs = token_embedding_map(tokens)
    positional_embeddings = hk.get_parameter("positional_embeddings", [SEQ, D_MODEL],
                                             init=hk.initializers.TruncatedNormal(stddev=0.02))
    h = Transformer(HEADS, LAYERS)(token_embs + positional_embeddings)
    return hk.Linear(VOCAB)(h)


forward = hk.transform(forward_fn)
OPTIMISER = optax.chain(optax.clip_by_global_norm(1.0), optax.adam(3e-4, b1=0.9, b2=0.99))


def lm_loss_fn(params, rng, tokens, targets):
    logits = forward.apply(params, rng, tokens)
    log_probs = jax.nn.log_softmax(logits)
    one_hot = jax.nn.one_hot(targets, VOCAB)
    return -jnp.sum(one_hot * log_probs) / targets.size


@jax.jit
def update(params, opt_state, rng, tokens, targets):
    loss, grads = jax.value_and_grad(lm_loss_fn)(params, rng, tokens, targets)
    updates, opt_state = OPTIMISER.update(grads, opt_state, params)
    params = optax.apply_updates(params, updates)
    return params, opt_state, {"loss": loss}


def program() -> Case:
    tokens = jax.random.randint(jax.random.PRNGKey(0), (2, SEQ), 0, VOCAB)
    params = forward.init(jax.random.PRNGKey(1), tokens)
    opt_state = OPTIMISER.init(params)
    n = len(jax.tree_util.tree_leaves((params, opt_state)))
    return Case(update, (params, opt_state, jax.random.PRNGKey(2), tokens, jnp.roll(tokens, -1, 1)),
                outputs=n + 1, folds=(("multi_head_attention", LAYERS),))
