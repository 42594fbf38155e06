"""Flax Linen: ``jax.jit`` over ``model.apply``, a TrainState, a module as a static argument."""

from __future__ import annotations

import functools

import flax.linen as nn
import flax.struct
import jax
import jax.numpy as jnp
import optax
from flax.training import train_state

from .record import history


class MLP(nn.Module):
    hidden: int = 8
    dropout_rate: float = 0.1

    @nn.compact
    def __call__(self, x, train: bool = False):
        x = nn.relu(nn.Dense(self.hidden)(x))
        x = nn.Dropout(self.dropout_rate, deterministic=not train)(x)
        return nn.Dense(1)(x)


# https://github.com/tenstorrent/tt-xla/issues/364 (Linen models' ``train`` static argname)
@history("linen apply: the train flag switched", "apply", "static_value", "train",
         url="https://github.com/tenstorrent/tt-xla/issues/364", says=("True", "False"),
         requires="flax")
def train_flag() -> None:
    model = MLP()
    variables = model.init(jax.random.PRNGKey(0), jnp.ones((2, 3)))
    apply = jax.jit(model.apply, static_argnames="train")
    rngs = {"dropout": jax.random.PRNGKey(1)}
    apply(variables, jnp.ones((2, 3)), train=True, rngs=rngs)
    apply(variables, jnp.ones((2, 3)), train=False, rngs=rngs)


# https://github.com/google/flax/issues/3003 (a Linen module passed as a static argument)
@history("linen module as a static argument, another dropout rate", "train_step",
         "static_value", "model.dropout_rate", url="https://github.com/google/flax/issues/3003",
         says=("0.1", "0.2"), requires="flax")
def module_as_static_argument() -> None:
    @functools.partial(jax.jit, static_argnums=0)
    def train_step(model, params, x, key):
        def loss_fn(p):
            return jnp.mean(model.apply({"params": p}, x, train=True, rngs={"dropout": key}) ** 2)
        return jax.grad(loss_fn)(params)

    params = MLP().init(jax.random.PRNGKey(0), jnp.ones((2, 3)))["params"]
    for rate in (0.1, 0.2):  # a sweep over the dropout rate
        train_step(MLP(dropout_rate=rate), params, jnp.ones((2, 3)), jax.random.PRNGKey(1))


# https://github.com/google/flax/issues/1495 (functions kept in a TrainState field marked
# ``pytree_node=False``)
@history("TrainState rebuilt with a new apply_fn", "train_step", "pytree_structure",
         "state.apply_fn", url="https://github.com/google/flax/issues/1495", requires="flax")
def train_state_new_apply_fn() -> None:
    model = MLP()
    params = model.init(jax.random.PRNGKey(0), jnp.ones((2, 3)))["params"]

    @jax.jit
    def train_step(state, x):
        grads = jax.grad(lambda p: jnp.mean(state.apply_fn({"params": p}, x) ** 2))(state.params)
        return state.apply_gradients(grads=grads)

    tx = optax.sgd(0.1)
    for _ in range(2):  # a restart: the state is created again around a fresh lambda
        state = train_state.TrainState.create(
            apply_fn=lambda variables, x: model.apply(variables, x), params=params, tx=tx)
        train_step(state, jnp.ones((2, 3)))


# https://github.com/google/flax/issues/4870 (flax.struct fields with pytree_node=False are
# static: another value there is another tree structure)
@history("flax.struct pytree_node=False field changed", "total", "pytree_structure", "f.b",
         url="https://github.com/google/flax/issues/4870", says=("(1, 2)", "(1, 2, 3)"),
         requires="flax")
def flax_struct_static_field() -> None:
    @flax.struct.dataclass
    class Foo:
        a: jax.Array
        b: tuple = flax.struct.field(pytree_node=False)

    @jax.jit
    def total(f):
        return f.a.sum() * len(f.b)

    total(Foo(jnp.ones(2), (1, 2)))
    total(Foo(jnp.ones(2), (1, 2, 3)))
