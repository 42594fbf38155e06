"""Plain JAX: a loss over chunks with ``jax.lax.map`` and a rematerialised layer stack
(``jax.checkpoint`` with a policy), differentiated.

Imitates JAX's gradient-checkpointing guide,
https://docs.jax.dev/en/latest/gradient-checkpointing.html
(``jax.checkpoint(f, policy=jax.checkpoint_policies.dots_with_no_batch_dims_saveable)``),
and ``jax.lax.map`` over micro-batches as its docs show.
"""

import jax
import jax.numpy as jnp

from . import Case

DEPTH = 3


def layer(w, x):
    return jnp.sin(x @ w)


@jax.checkpoint
def stack(ws, x):
    for w in ws:
        x = layer(w, x)
    return x


def chunk_loss(ws, chunk):
    return jnp.sum(stack(ws, chunk) ** 2)


@jax.jit
def loss_and_grads(ws, batches):
    def total(ws):
        return jnp.sum(jax.lax.map(lambda c: chunk_loss(ws, c), batches))

    return jax.value_and_grad(total)(ws)


def program() -> Case:
    ws = [jnp.eye(8) * (i + 1) for i in range(DEPTH)]
    return Case(loss_and_grads, (ws, jnp.ones((5, 4, 8))), outputs=1 + DEPTH, loops=("chunk_loss",))
