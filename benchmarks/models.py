"""Programs of realistic size for the scale benchmark and tests: a pre-LN transformer
train step in plain JAX (L blocks of attention + MLP, value_and_grad, tree_map update),
the same with its blocks jitted or checkpointed, and a long unrolled loop."""

from __future__ import annotations

import jax
import jax.numpy as jnp

D, HEADS, SEQ, BATCH, VOCAB = 32, 4, 16, 2, 64


def init_params(n_layers: int, key: int = 0) -> dict:
    keys = iter(jax.random.split(jax.random.PRNGKey(key), 4 * n_layers + 2))

    def dense(i, o):
        return jax.random.normal(next(keys), (i, o)) / jnp.sqrt(i)

    blocks = [
        {"ln1": {"g": jnp.ones(D), "b": jnp.zeros(D)}, "qkv": dense(D, 3 * D), "proj": dense(D, D),
         "ln2": {"g": jnp.ones(D), "b": jnp.zeros(D)}, "up": dense(D, 4 * D), "down": dense(4 * D, D)}
        for _ in range(n_layers)
    ]
    return {"embed": dense(VOCAB, D), "blocks": blocks, "out": dense(D, VOCAB)}


def layer_norm(x, p):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / jnp.sqrt(var + 1e-5) * p["g"] + p["b"]


def attention(x, p):
    b, t, _ = x.shape
    q, k, v = jnp.split(x @ p["qkv"], 3, axis=-1)
    split = lambda a: a.reshape(b, t, HEADS, D // HEADS).transpose(0, 2, 1, 3)  # noqa: E731
    q, k, v = split(q), split(k), split(v)
    scores = q @ k.transpose(0, 1, 3, 2) / jnp.sqrt(D // HEADS)
    mask = jnp.tril(jnp.ones((t, t), bool))
    weights = jax.nn.softmax(jnp.where(mask, scores, -1e9), axis=-1)
    out = (weights @ v).transpose(0, 2, 1, 3).reshape(b, t, D)
    return out @ p["proj"]


def mlp(x, p):
    return jax.nn.gelu(x @ p["up"]) @ p["down"]


def block(x, p):
    x = x + attention(layer_norm(x, p["ln1"]), p)
    return x + mlp(layer_norm(x, p["ln2"]), p)


def loss_fn(params, tokens):
    x = params["embed"][tokens]
    for p in params["blocks"]:
        x = block(x, p)
    logits = x @ params["out"]
    labels = jax.nn.one_hot(jnp.roll(tokens, -1, axis=1), VOCAB)
    return -(jax.nn.log_softmax(logits) * labels).sum(-1).mean()


def train_step(params, tokens, lr=1e-2):
    loss, grads = jax.value_and_grad(loss_fn)(params, tokens)
    params = jax.tree_util.tree_map(lambda p, g: p - lr * g, params, grads)
    return params, loss


def train_step_with(wrap, layer_fn=block):
    """``train_step`` with each block (``layer_fn``) called through ``wrap`` (``jax.jit``,
    ``jax.checkpoint``), as real models wrap their layers: JAX traces the block once and
    reuses that trace for every block, so ``make_jaxpr`` costs about one block, however
    many there are; and none at all once JAX's cache, keyed by ``layer_fn``, holds it."""
    layer = wrap(layer_fn)

    def wrapped_loss_fn(params, tokens):
        x = params["embed"][tokens]
        for p in params["blocks"]:
            x = layer(x, p)
        labels = jax.nn.one_hot(jnp.roll(tokens, -1, axis=1), VOCAB)
        return -(jax.nn.log_softmax(x @ params["out"]) * labels).sum(-1).mean()

    def wrapped_train_step(params, tokens, lr=1e-2):
        loss, grads = jax.value_and_grad(wrapped_loss_fn)(params, tokens)
        return jax.tree_util.tree_map(lambda p, g: p - lr * g, params, grads), loss

    return wrapped_train_step


def tokens():
    return jax.random.randint(jax.random.PRNGKey(1), (BATCH, SEQ), 0, VOCAB)


def unrolled(n_ops: int):
    """A program of about ``n_ops`` equations: a long unrolled elementwise chain."""

    def chain(x):
        for i in range(n_ops // 2):
            x = jnp.sin(x) * 1.0001 if i % 2 else jnp.cos(x) + 0.5
        return x

    return chain
