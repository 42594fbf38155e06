"""Equinox: identical MLP blocks created stacked with ``eqx.filter_vmap`` and run with
``jax.lax.scan`` over their arrays (``eqx.partition`` / ``eqx.combine``), trained with optax.

Imitates Equinox's FAQ "How do I reduce compilation time?", scan over layers,
https://docs.kidger.site/equinox/tricks/#improve-compilation-speed-with-scan-over-layers
(``make_layers = eqx.filter_vmap(...)``, ``dynamic, static = eqx.partition(layers, eqx.is_array)``,
``def f(x, dynamic_layer): layer = eqx.combine(dynamic_layer, static)``).
"""

import equinox as eqx
import jax
import jax.numpy as jnp
import optax

from . import Case

DEPTH = 5


class Block(eqx.Module):
    linear: eqx.nn.Linear
    norm: eqx.nn.LayerNorm

    def __init__(self, width, key):
        self.linear = eqx.nn.Linear(width, width, key=key)
        self.norm = eqx.nn.LayerNorm(width)

    def __call__(self, x):
        return x + jax.nn.gelu(self.linear(self.norm(x)))


class Tower(eqx.Module):
    blocks: Block
    head: eqx.nn.Linear

    def __init__(self, width, key):
        keys = jax.random.split(key, DEPTH + 1)
        self.blocks = eqx.filter_vmap(lambda k: Block(width, k))(keys[:DEPTH])
        self.head = eqx.nn.Linear(width, 1, key=keys[-1])

    def __call__(self, x):
        dynamic, static = eqx.partition(self.blocks, eqx.is_array)

        def f(x, dynamic_block):
            block = eqx.combine(dynamic_block, static)
            return block(x), None

        x, _ = jax.lax.scan(f, x, dynamic)
        return self.head(x)


optim = optax.adam(1e-3)


@eqx.filter_jit
def make_step(model, opt_state, x, y):
    def loss(model):
        return jnp.mean((jax.vmap(model)(x) - y) ** 2)

    value, grads = eqx.filter_value_and_grad(loss)(model)
    updates, opt_state = optim.update(grads, opt_state, eqx.filter(model, eqx.is_array))
    return eqx.apply_updates(model, updates), opt_state, value


def program() -> Case:
    model = Tower(8, jax.random.PRNGKey(0))
    opt_state = optim.init(eqx.filter(model, eqx.is_array))
    x, y = jnp.ones((4, 8)), jnp.zeros((4, 1))
    n = len(jax.tree_util.tree_leaves(eqx.filter(model, eqx.is_array))) + len(jax.tree_util.tree_leaves(opt_state)) + 1
    return Case(make_step, (model, opt_state, x, y), outputs=n, loops=("Block",), folds=(("Block", DEPTH),),
                reference=lambda: eqx.filter_make_jaxpr(make_step)(model, opt_state, x, y)[0])
