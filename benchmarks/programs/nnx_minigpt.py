"""Flax NNX: a miniGPT (token and position embeddings, causal self-attention blocks) and
its ``nnx.jit`` train step.

Imitates the JAX AI stack tutorial "Train a miniGPT language model with JAX",
https://docs.jaxstack.ai/en/latest/JAX_for_LLM_pretraining.html
(``TransformerBlock``, ``TokenAndPositionEmbedding``, ``MiniGPT``, ``loss_fn``, ``train_step``).
"""

import jax
import jax.numpy as jnp
import optax
from flax import nnx

from . import Case

MAXLEN, VOCAB, EMBED, HEADS, FF, LAYERS = 16, 64, 32, 2, 64, 4


def causal_attention_mask(seq_len):
    return jnp.tril(jnp.ones((seq_len, seq_len)))


class TransformerBlock(nnx.Module):
    def __init__(self, embed_dim, num_heads, ff_dim, *, rngs: nnx.Rngs):
        self.mha = nnx.MultiHeadAttention(num_heads=num_heads, in_features=embed_dim, decode=False, rngs=rngs)
        self.dropout1 = nnx.Dropout(rate=0.1)
        self.layer_norm1 = nnx.LayerNorm(embed_dim, rngs=rngs)
        self.linear1 = nnx.Linear(embed_dim, ff_dim, rngs=rngs)
        self.linear2 = nnx.Linear(ff_dim, embed_dim, rngs=rngs)
        self.dropout2 = nnx.Dropout(rate=0.1)
        self.layer_norm2 = nnx.LayerNorm(embed_dim, rngs=rngs)

    def __call__(self, inputs, training: bool = False):
        mask = causal_attention_mask(inputs.shape[1])
        attention_output = self.mha(inputs_q=inputs, mask=mask, decode=False)
        attention_output = self.dropout1(attention_output, deterministic=not training)
        out1 = self.layer_norm1(inputs + attention_output)
        ffn_output = self.linear2(nnx.relu(self.linear1(out1)))
        ffn_output = self.dropout2(ffn_output, deterministic=not training)
        return self.layer_norm2(out1 + ffn_output)


class TokenAndPositionEmbedding(nnx.Module):
    def __init__(self, maxlen, vocab_size, embed_dim, *, rngs: nnx.Rngs):
        self.token_emb = nnx.Embed(num_embeddings=vocab_size, features=embed_dim, rngs=rngs)
        self.pos_emb = nnx.Embed(num_embeddings=maxlen, features=embed_dim, rngs=rngs)

    def __call__(self, x):
        positions = jnp.arange(0, x.shape[1])[None, :]
        return self.token_emb(x) + self.pos_emb(positions)


class MiniGPT(nnx.Module):
    def __init__(self, *, rngs: nnx.Rngs):
        self.embedding_layer = TokenAndPositionEmbedding(MAXLEN, VOCAB, EMBED, rngs=rngs)
        self.transformer_blocks = nnx.List([TransformerBlock(EMBED, HEADS, FF, rngs=rngs) for _ in range(LAYERS)])
        self.output_layer = nnx.Linear(EMBED, VOCAB, use_bias=False, rngs=rngs)

    def __call__(self, inputs, training: bool = False):
        x = self.embedding_layer(inputs)
        for transformer_block in self.transformer_blocks:
            x = transformer_block(x, training=training)
        return self.output_layer(x)


def loss_fn(model, batch):
    logits = model(batch[0])
    loss = optax.softmax_cross_entropy_with_integer_labels(logits=logits, labels=batch[1]).mean()
    return loss, logits


@nnx.jit
def train_step(model: MiniGPT, optimizer: nnx.Optimizer, metrics: nnx.MultiMetric, batch):
    grad_fn = nnx.value_and_grad(loss_fn, has_aux=True)
    (loss, logits), grads = grad_fn(model, batch)
    metrics.update(loss=loss, logits=logits, lables=batch[1])
    optimizer.update(model, grads)


def program() -> Case:
    model = MiniGPT(rngs=nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)
    metrics = nnx.MultiMetric(loss=nnx.metrics.Average("loss"))
    tokens = jax.random.randint(jax.random.PRNGKey(0), (2, MAXLEN), 0, VOCAB)
    batch = (tokens, jnp.roll(tokens, -1, axis=1))
    n_state = len(jax.tree_util.tree_leaves(nnx.state((model, optimizer, metrics))))
    return Case(train_step, (model, optimizer, metrics, batch), outputs=n_state, written_back=(model, optimizer, metrics),
                folds=(("TransformerBlock", LAYERS),))
