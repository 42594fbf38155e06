"""Flax NNX: each residual block's forward rematerialised with ``nnx.remat``, the
gradient taken with ``nnx.grad`` under ``nnx.jit``.

Imitates the Flax NNX transforms API docs (``nnx.remat``),
https://flax.readthedocs.io/en/latest/api_reference/flax.nnx/transforms.html, and the
"Flax for JAX users" pattern of a Python list of blocks.
"""

import jax
import jax.numpy as jnp
from flax import nnx

from . import Case


class ResidualBlock(nnx.Module):
    def __init__(self, dim, rngs: nnx.Rngs):
        self.norm = nnx.LayerNorm(dim, rngs=rngs)
        self.up = nnx.Linear(dim, 4 * dim, rngs=rngs)
        self.down = nnx.Linear(4 * dim, dim, rngs=rngs)

    def __call__(self, x):
        return x + self.down(nnx.gelu(self.up(self.norm(x))))


class Net(nnx.Module):
    def __init__(self, dim, depth, rngs: nnx.Rngs):
        self.blocks = nnx.List([ResidualBlock(dim, rngs) for _ in range(depth)])
        self.out = nnx.Linear(dim, 1, rngs=rngs)

    def __call__(self, x):
        for block in self.blocks:
            x = nnx.remat(lambda block, x: block(x))(block, x)
        return self.out(x)


@nnx.jit
def grads_of(model, x, y):
    def loss_fn(model):
        return jnp.mean((model(x) - y) ** 2)

    return nnx.grad(loss_fn)(model)


def program() -> Case:
    model = Net(8, 6, rngs=nnx.Rngs(0))
    n_state = len(jax.tree_util.tree_leaves(nnx.state(model)))
    n_params = len(jax.tree_util.tree_leaves(nnx.state(model, nnx.Param)))
    return Case(grads_of, (model, jnp.ones((4, 8)), jnp.zeros((4, 1))), outputs=n_params + n_state, written_back=(model,),
                folds=(("ResidualBlock", 6),))
