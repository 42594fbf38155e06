"""Per-example gradients with ``jax.vmap(jax.grad(...))``, clipped and noised as in
DP-SGD, for a logistic regression.

Imitates JAX's "Automatic vectorization" (per-example gradients),
https://docs.jax.dev/en/latest/automatic-vectorization.html, and the DP-SGD example,
https://github.com/jax-ml/jax/blob/main/examples/differentially_private_sgd.py
(``clipped_grad``, ``private_grad``).
"""

import jax
import jax.numpy as jnp

from . import Case

L2_NORM_CLIP = 1.0
NOISE_MULTIPLIER = 1.1


def loss(params, x, y):
    logits = x @ params["w"] + params["b"]
    return jnp.logaddexp(0.0, logits) - y * logits


def clipped_grad(params, x, y):
    grads = jax.grad(loss)(params, x, y)
    leaves = jax.tree_util.tree_leaves(grads)
    total_grad_norm = jnp.linalg.norm(jnp.array([jnp.linalg.norm(g.ravel()) for g in leaves]))
    divisor = jnp.maximum(total_grad_norm / L2_NORM_CLIP, 1.0)
    return jax.tree_util.tree_map(lambda g: g / divisor, grads)


@jax.jit
def private_grad(params, xs, ys, rng):
    clipped = jax.vmap(clipped_grad, (None, 0, 0))(params, xs, ys)
    keys = jax.random.split(rng, 2)
    leaves, treedef = jax.tree_util.tree_flatten(clipped)
    noised = [g.sum(0) + L2_NORM_CLIP * NOISE_MULTIPLIER * jax.random.normal(k, g.shape[1:])
              for g, k in zip(leaves, keys)]
    return jax.tree_util.tree_unflatten(treedef, [g / xs.shape[0] for g in noised])


def program() -> Case:
    params = {"w": jnp.zeros(6), "b": jnp.zeros(())}
    xs = jax.random.normal(jax.random.PRNGKey(0), (16, 6))
    ys = (xs[:, 0] > 0).astype(jnp.float32)
    return Case(private_grad, (params, xs, ys, jax.random.PRNGKey(1)), outputs=2)
