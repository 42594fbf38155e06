"""Pytrees: a container that gains an entry, an optional argument given, a container swapped,
a node's static (auxiliary) data changed."""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .record import history


# https://github.com/jax-ml/jax/pull/19129 (the explainer's "different input pytree" case)
@history("metrics dict gains a key", "update", "pytree_structure", "metrics['acc']",
         url="https://github.com/jax-ml/jax/pull/19129")
def metrics_gain_a_key() -> None:
    @jax.jit
    def update(metrics):
        return {k: v + 1 for k, v in metrics.items()}

    update({"loss": jnp.zeros(())})
    update({"loss": jnp.zeros(()), "acc": jnp.zeros(())})


# https://github.com/jax-ml/jax/issues/1671 (an optional argument: ``b=None``, then given)
@history("optional argument: None, then a value", "loss", "pytree_structure", "alpha",
         url="https://github.com/jax-ml/jax/issues/1671", says=("None", "~f32[]"))
def optional_none_then_value() -> None:
    @jax.jit
    def loss(w, x, alpha=None):
        penalty = 0.0 if alpha is None else alpha * jnp.sum(w ** 2)
        return jnp.sum((x @ w) ** 2) + penalty

    w, x = jnp.ones(3), jnp.ones((4, 3))
    loss(w, x, alpha=None)
    loss(w, x, alpha=0.1)


# https://github.com/google/flax/issues/2410 (batches from a loader: a tuple, then a list)
@history("batch as a tuple, then a list", "train_step", "pytree_structure", "batch",
         url="https://github.com/google/flax/issues/2410", says=("tuple", "list"))
def tuple_then_list() -> None:
    @jax.jit
    def train_step(w, batch):
        x, y = batch
        return w - 0.1 * x.T @ (x @ w - y)

    x, y = np.ones((4, 3), np.float32), np.ones(4, np.float32)
    w = train_step(jnp.zeros(3), (x, y))
    train_step(w, [x, y])


# https://github.com/jax-ml/jax/issues/5609 (a function passed as jax.tree_util.Partial)
@history("tree_util.Partial over a new closure", "apply_loss", "new_function_object", "loss_fn",
         url="https://github.com/jax-ml/jax/issues/5609")
def tree_partial_closure() -> None:
    @jax.jit
    def apply_loss(loss_fn, x):
        return loss_fn(x)

    def make_loss(scale):
        def loss(x):
            return jnp.sum(x * scale)
        return loss

    for _ in range(2):
        apply_loss(jax.tree_util.Partial(make_loss(2.0)), jnp.ones(3))


# https://github.com/jax-ml/jax/pull/24700 (register_dataclass: a field marked static)
@history("register_dataclass static field changed", "apply_op", "pytree_structure", "s.op",
         url="https://github.com/jax-ml/jax/pull/24700", says=("add", "mul"))
def dataclass_static_field() -> None:
    @jax.tree_util.register_dataclass
    @dataclasses.dataclass
    class MyStruct:
        x: jax.Array
        y: jax.Array
        op: str = dataclasses.field(metadata={"static": True})

    @jax.jit
    def apply_op(s):
        return s.x + s.y if s.op == "add" else s.x * s.y

    apply_op(MyStruct(jnp.ones(3), jnp.arange(3.0), "add"))
    apply_op(MyStruct(jnp.ones(3), jnp.arange(3.0), "mul"))


# https://github.com/jax-ml/jax/issues/4274 ("deeply structured pytrees: I can't figure out what
# is forcing recompilation"): an optimizer state whose momentum starts as None
@history("state field None, then an array", "step", "pytree_structure", "state.momentum",
         url="https://github.com/jax-ml/jax/issues/4274", says=("None", "f32[3]"))
def state_field_none_then_array() -> None:
    class State(NamedTuple):
        params: jax.Array
        momentum: jax.Array | None

    @jax.jit
    def step(state, grads):
        momentum = grads if state.momentum is None else 0.9 * state.momentum + grads
        return State(state.params - 0.1 * momentum, momentum)

    state = State(jnp.ones(3), None)
    state = step(state, jnp.ones(3))  # the first step creates the momentum
    step(state, jnp.ones(3))


# https://github.com/jax-ml/jax/issues/3755 ("Nested VJP function always triggers
# recompilation": the function returned by jax.vjp, passed to a jitted function, made again)
# Truth: the VJP node's auxiliary data holds functools.partial(_vjp3_callable, ..., jaxpr),
# made again by each jax.vjp; partial has no __eq__, so it is compared by identity. The
# node is the argument itself (JAX: "at input path [0][0] ... pytree node metadata").
@history("vjp pullback made again, passed to jit", "apply_cotangent", "pytree_structure",
         "g_vjp", url="https://github.com/jax-ml/jax/issues/3755", says=("identity",))
def vjp_pullback_made_again() -> None:
    def square(x):
        return x ** 2

    @jax.jit
    def apply_cotangent(g_vjp, ct):
        return g_vjp(ct)

    for x0 in (1.0, 2.0):  # a new linearisation point, same shapes
        _, g_vjp = jax.vjp(square, jnp.float32(x0))
        apply_cotangent(g_vjp, jnp.float32(1.0))


# https://github.com/jax-ml/jax/issues/33043 (a register_dataclass with slots=True and a static
# ``idx`` field; a jitted staticmethod ``area`` recompiles for a new instance with idx=3)
@history("slots dataclass static field, jitted staticmethod", "area", "pytree_structure",
         "shape.idx", url="https://github.com/jax-ml/jax/issues/33043", says=("2", "3"))
def slots_dataclass_static_field() -> None:
    @jax.tree_util.register_dataclass
    @dataclasses.dataclass(slots=True)
    class Shape:
        length: jax.Array
        idx: int = dataclasses.field(default=1, metadata={"static": True})

        @staticmethod
        @jax.jit
        def area(shape):
            return shape.length * shape.length

    s1 = Shape(jnp.asarray(10.0), 2)
    s1.area(s1)
    s2 = Shape(jnp.asarray(10.0), 3)
    s2.area(s2)
