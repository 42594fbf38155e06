"""Equinox: a Vision Transformer (patch embedding, attention blocks with dropout, a
classification head) and its ``eqx.filter_jit`` train step with optax.

Imitates the Equinox example "Vision Transformer (ViT)",
https://docs.kidger.site/equinox/examples/vision_transformer/
(``PatchEmbedding``, ``AttentionBlock``, ``VisionTransformer``, ``compute_loss``, ``step``).
"""

import equinox as eqx
import jax
import jax.numpy as jnp
import jax.random as jr
import optax

from . import Case

PATCH, CHANNELS, IMAGE, EMBED, HIDDEN, HEADS, LAYERS, CLASSES = 4, 3, 16, 32, 64, 2, 6, 10
NUM_PATCHES = (IMAGE // PATCH) ** 2


class PatchEmbedding(eqx.Module):
    linear: eqx.nn.Embedding
    patch_size: int

    def __init__(self, input_channels, output_shape, patch_size, key):
        self.patch_size = patch_size
        self.linear = eqx.nn.Linear(self.patch_size**2 * input_channels, output_shape, key=key)

    def __call__(self, x):
        c, h, w = x.shape
        p = self.patch_size
        x = x.reshape(c, h // p, p, w // p, p).transpose(1, 3, 2, 4, 0).reshape(-1, p * p * c)
        return jax.vmap(self.linear)(x)


class AttentionBlock(eqx.Module):
    layer_norm1: eqx.nn.LayerNorm
    layer_norm2: eqx.nn.LayerNorm
    attention: eqx.nn.MultiheadAttention
    linear1: eqx.nn.Linear
    linear2: eqx.nn.Linear
    dropout1: eqx.nn.Dropout
    dropout2: eqx.nn.Dropout

    def __init__(self, input_shape, hidden_dim, num_heads, dropout_rate, key):
        key1, key2, key3 = jr.split(key, 3)
        self.layer_norm1 = eqx.nn.LayerNorm(input_shape)
        self.layer_norm2 = eqx.nn.LayerNorm(input_shape)
        self.attention = eqx.nn.MultiheadAttention(num_heads, input_shape, key=key1)
        self.linear1 = eqx.nn.Linear(input_shape, hidden_dim, key=key2)
        self.linear2 = eqx.nn.Linear(hidden_dim, input_shape, key=key3)
        self.dropout1 = eqx.nn.Dropout(dropout_rate)
        self.dropout2 = eqx.nn.Dropout(dropout_rate)

    def __call__(self, x, enable_dropout, key):
        input_x = jax.vmap(self.layer_norm1)(x)
        x = x + self.attention(input_x, input_x, input_x)
        input_x = jax.vmap(self.layer_norm2)(x)
        input_x = jax.vmap(self.linear1)(input_x)
        input_x = jax.nn.gelu(input_x)
        key1, key2 = jr.split(key, num=2)
        input_x = self.dropout1(input_x, inference=not enable_dropout, key=key1)
        input_x = jax.vmap(self.linear2)(input_x)
        input_x = self.dropout2(input_x, inference=not enable_dropout, key=key2)
        return x + input_x


class VisionTransformer(eqx.Module):
    patch_embedding: PatchEmbedding
    positional_embedding: jax.Array
    cls_token: jax.Array
    attention_blocks: list[AttentionBlock]
    dropout: eqx.nn.Dropout
    mlp: eqx.nn.Sequential
    num_layers: int

    def __init__(self, key):
        key1, key2, key3, key4, key5 = jr.split(key, 5)
        self.patch_embedding = PatchEmbedding(CHANNELS, EMBED, PATCH, key1)
        self.positional_embedding = jr.normal(key2, (NUM_PATCHES + 1, EMBED))
        self.cls_token = jr.normal(key3, (1, EMBED))
        self.num_layers = LAYERS
        self.attention_blocks = [AttentionBlock(EMBED, HIDDEN, HEADS, 0.1, k)
                                 for k in jr.split(key4, LAYERS)]
        self.dropout = eqx.nn.Dropout(0.1)
        self.mlp = eqx.nn.Sequential([eqx.nn.LayerNorm(EMBED), eqx.nn.Linear(EMBED, CLASSES, key=key5)])

    def __call__(self, x, enable_dropout, key):
        x = self.patch_embedding(x)
        x = jnp.concatenate((self.cls_token, x), axis=0)
        x += self.positional_embedding[: x.shape[0]]
        dropout_key, *attention_keys = jr.split(key, num=self.num_layers + 1)
        x = self.dropout(x, inference=not enable_dropout, key=dropout_key)
        for block, attention_key in zip(self.attention_blocks, attention_keys):
            x = block(x, enable_dropout, key=attention_key)
        x = x[0]
        return self.mlp(x)


def compute_loss(model, images, labels, key):
    logits = jax.vmap(model, in_axes=(0, None, 0))(images, True, key)
    return jnp.mean(optax.softmax_cross_entropy_with_integer_labels(logits, labels))


OPTIMIZER = optax.adamw(learning_rate=1e-3, weight_decay=1e-4)


@eqx.filter_jit
def step(model, opt_state, images, labels, key):
    loss, grads = eqx.filter_value_and_grad(compute_loss)(model, images, labels, key)
    updates, opt_state = OPTIMIZER.update(grads, opt_state, model)
    model = eqx.apply_updates(model, updates)
    return loss, model, opt_state


def program() -> Case:
    model = VisionTransformer(jr.PRNGKey(0))
    opt_state = OPTIMIZER.init(eqx.filter(model, eqx.is_inexact_array))
    images = jnp.ones((2, CHANNELS, IMAGE, IMAGE))
    labels = jnp.array([1, 7])
    keys = jr.split(jr.PRNGKey(1), 2)
    n_model = len(jax.tree_util.tree_leaves(eqx.filter(model, eqx.is_array)))
    n_opt = len(jax.tree_util.tree_leaves(opt_state))
    return Case(step, (model, opt_state, images, labels, keys), outputs=1 + n_model + n_opt,
                folds=(("AttentionBlock", LAYERS),),
                reference=lambda: eqx.filter_make_jaxpr(step.__wrapped__)(
                    model, opt_state, images, labels, keys)[0])
