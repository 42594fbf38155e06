"""Equinox: ``eqx.filter_jit`` on modules, their fields and methods."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
import optax

from .record import history


# https://github.com/patrick-kidger/diffrax/issues/111 (the Latent ODE example recompiles at
# step 39, when the data loader's last, smaller batch arrives)
@history("eqx.filter_jit: batch size", "loss", "shape", "xs",
         url="https://github.com/patrick-kidger/diffrax/issues/111", says=("(32, 20)", "(4, 20)"),
         requires="equinox")
def filter_jit_batch_size() -> None:
    @eqx.filter_jit
    def loss(model, xs, ys):
        return jnp.mean((jax.vmap(model)(xs) - ys) ** 2)

    model = eqx.nn.Linear(20, 1, key=jax.random.PRNGKey(0))
    loss(model, jnp.ones((32, 20)), jnp.ones((32, 1)))
    loss(model, jnp.ones((4, 20)), jnp.ones((4, 1)))


# https://github.com/patrick-kidger/equinox/issues/291 (recompilation of static module parts)
@history("eqx.filter_jit: a static field changed", "loss", "pytree_structure", "model.step_count",
         url="https://github.com/patrick-kidger/equinox/issues/291", says=("0", "1"),
         requires="equinox")
def static_field_changed() -> None:
    class Model(eqx.Module):
        linear: eqx.nn.Linear
        step_count: int = eqx.field(static=True)

    @eqx.filter_jit
    def loss(model, xs):
        return jnp.mean(jax.vmap(model.linear)(xs))

    model = Model(eqx.nn.Linear(20, 1, key=jax.random.PRNGKey(0)), 0)
    loss(model, jnp.ones((4, 20)))
    loss(dataclasses.replace(model, step_count=1), jnp.ones((4, 20)))


# https://github.com/patrick-kidger/equinox/issues/686 (a module holding ``jax.jit(fk_fn)``,
# initialised again: ``step`` recompiles for ``model``)
@history("module holding a jitted function, rebuilt", "step", "static_value", "model.forward",
         url="https://github.com/patrick-kidger/equinox/issues/686", says=("identity",),
         requires="equinox")
def module_holding_jitted_function() -> None:
    def forward_kinematics(q):
        return jnp.stack([jnp.cos(q).sum(), jnp.sin(q).sum()])

    class Trajectory(eqx.Module):
        linear: eqx.nn.Linear
        forward: Callable

        def __init__(self, fk_fn, key):
            self.linear = eqx.nn.Linear(1, 3, key=key)
            self.forward = jax.jit(fk_fn)

        def __call__(self, t):
            return self.forward(self.linear(t))

    @eqx.filter_jit
    def step(model, ts):
        return jnp.mean(jax.vmap(model)(ts))

    for _ in range(2):  # the optimisation loop, run twice with a re-initialised module
        model = Trajectory(forward_kinematics, jax.random.PRNGKey(0))
        step(model, jnp.ones((5, 1)))


# https://github.com/patrick-kidger/equinox/issues/940 (a new optax optimizer instance per run)
@history("eqx step given a new optimizer instance", "make_step", "static_value", "optim",
         url="https://github.com/patrick-kidger/equinox/issues/940", says=("identity",),
         requires="equinox")
def new_optimizer_instance() -> None:
    @eqx.filter_jit
    def make_step(model, opt_state, x, y, optim):
        loss, grads = eqx.filter_value_and_grad(
            lambda m: jnp.mean((jax.vmap(m)(x) - y) ** 2))(model)
        updates, opt_state = optim.update(grads, opt_state, model)
        return loss, eqx.apply_updates(model, updates), opt_state

    model = eqx.nn.Linear(10, 1, key=jax.random.PRNGKey(0))
    for _ in range(2):
        optim = optax.adam(1e-3)
        opt_state = optim.init(eqx.filter(model, eqx.is_array))
        make_step(model, opt_state, jnp.ones((4, 10)), jnp.ones((4, 1)), optim)


# https://github.com/patrick-kidger/equinox/issues/307 (the same filter_jit function for
# training and evaluation: ``eqx.nn.inference_mode`` flips the Dropout's flag)
@history("eqx inference_mode on the same jitted loss", "evaluate", "static_value",
         "model.dropout.inference", url="https://github.com/patrick-kidger/equinox/issues/307",
         says=("False", "True"), requires="equinox")
def inference_mode_flag() -> None:
    class Net(eqx.Module):
        linear: eqx.nn.Linear
        dropout: eqx.nn.Dropout

        def __call__(self, x, key):
            return self.dropout(self.linear(x), key=key)

    @eqx.filter_jit
    def evaluate(model, xs, key):
        keys = jax.random.split(key, xs.shape[0])
        return jnp.mean(jax.vmap(model)(xs, keys))

    model = Net(eqx.nn.Linear(4, 2, key=jax.random.PRNGKey(0)), eqx.nn.Dropout(0.1))
    evaluate(model, jnp.ones((3, 4)), jax.random.PRNGKey(1))
    evaluate(eqx.nn.inference_mode(model), jnp.ones((3, 4)), jax.random.PRNGKey(1))


# https://github.com/patrick-kidger/diffrax/issues/523 (weak types through filter_jit)
@history("weak type through a filter_jit method", "predict", "weak_type", "temperature",
         url="https://github.com/patrick-kidger/diffrax/issues/523", requires="equinox")
def weak_type_through_method() -> None:
    class Policy(eqx.Module):
        linear: eqx.nn.Linear

        @eqx.filter_jit
        def predict(self, x, temperature):
            return jax.nn.softmax(self.linear(x) / temperature)

    policy = Policy(eqx.nn.Linear(4, 3, key=jax.random.PRNGKey(0)))
    temperature = jnp.asarray(1.0)  # weakly typed: made from a Python float
    policy.predict(jnp.ones(4), temperature)
    temperature = temperature * jnp.float32(0.9)  # annealed: now a typed f32
    policy.predict(jnp.ones(4), temperature)


# https://github.com/patrick-kidger/equinox/issues/903 (segment sums: ``num_segments``, a Python
# int, is static under filter_jit; a batch with another count recompiles)
@history("filter_jit: num_segments per batch", "pool", "static_value", "num_segments",
         url="https://github.com/patrick-kidger/equinox/issues/903", says=("3", "4"),
         requires="equinox")
def num_segments_per_batch() -> None:
    @eqx.filter_jit
    def pool(features, segment_ids, num_segments):
        return jax.ops.segment_sum(features, segment_ids, num_segments=num_segments)

    pool(jnp.ones((6, 2)), jnp.array([0, 0, 1, 1, 2, 2]), 3)
    pool(jnp.ones((6, 2)), jnp.array([0, 1, 1, 2, 3, 3]), 4)


# https://github.com/patrick-kidger/equinox/issues/238 (BatchNorm: "model's flattened form
# changes through iterations": a buffer that is None at first, an array once filled)
@history("eqx module buffer None, then an array", "predict", "pytree_structure",
         "model.running_mean", url="https://github.com/patrick-kidger/equinox/issues/238",
         says=("None", "f32[4]"), requires="equinox")
def eqx_buffer_none_then_array() -> None:
    class Normalised(eqx.Module):
        linear: eqx.nn.Linear
        running_mean: jax.Array | None = None

    @eqx.filter_jit
    def predict(model, x):
        y = jax.vmap(model.linear)(x)
        return y if model.running_mean is None else y - model.running_mean

    model = Normalised(eqx.nn.Linear(3, 4, key=jax.random.PRNGKey(0)))
    predict(model, jnp.ones((2, 3)))
    model = eqx.tree_at(lambda m: m.running_mean, model, jnp.zeros(4),
                        is_leaf=lambda v: v is None)
    predict(model, jnp.ones((2, 3)))


# https://github.com/patrick-kidger/equinox/issues/817 (assert_max_traces cannot tell why:
# ``f_jit(y_strong)`` then ``f_jit(y_weak)`` with ``y_weak = jnp.array(1.0)``)
@history("jnp.ones(()) then jnp.array(1.0)", "f", "weak_type", "y",
         url="https://github.com/patrick-kidger/equinox/issues/817", requires="equinox")
def strong_then_weak_scalar() -> None:
    def f(y):
        return y + jnp.ones(())

    f_jit = jax.jit(eqx.debug.assert_max_traces(f, max_traces=2))
    f_jit(jnp.ones(()))
    f_jit(jnp.array(1.0))


# https://github.com/LouisDesdoigts/dLux/issues/187 (``occulting`` is a Python bool, which
# filter_jit holds static; here it arrives once as a JAX bool array instead)
@history("filter_jit flag: Python bool, then a bool array", "propagate", "static_value",
         "aperture.occulting", url="https://github.com/LouisDesdoigts/dLux/issues/187",
         says=("True",), requires="equinox")
def flag_bool_then_array() -> None:
    class Aperture(eqx.Module):
        radius: jax.Array
        occulting: bool | jax.Array

    @eqx.filter_jit
    def propagate(aperture, coords):
        inside = jnp.hypot(coords[0], coords[1]) < aperture.radius
        return jnp.where(aperture.occulting, ~inside, inside).astype(jnp.float32)

    coords = jnp.zeros((2, 8, 8))
    propagate(Aperture(jnp.asarray(1.0), True), coords)
    propagate(Aperture(jnp.asarray(1.0), jnp.array(True)), coords)  # read from a config array
