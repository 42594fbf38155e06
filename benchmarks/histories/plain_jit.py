"""Plain ``jax.jit``: shapes, dtypes and weak types of the arguments."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .record import history


# https://github.com/jax-ml/jax/issues/2521 (variably shaped arrays: the last batch is smaller)
@history("ragged last batch", "train_step", "shape", "batch[0]",
         url="https://github.com/jax-ml/jax/issues/2521", says=("(4, 3)", "(2, 3)"))
def ragged_batch() -> None:
    @jax.jit
    def train_step(w, batch):
        x, y = batch
        return w - 0.01 * x.T @ (x @ w - y) / x.shape[0]

    data_x, data_y = np.ones((10, 3), np.float32), np.ones(10, np.float32)
    w = jnp.zeros(3)
    for i in range(0, 10, 4):
        w = train_step(w, (data_x[i:i + 4], data_y[i:i + 4]))


# https://github.com/jax-ml/jax/issues/4274 (a comment: jnp.arange is int32, jnp.ones float32)
@history("int then float", "scale", "dtype", "x", url="https://github.com/jax-ml/jax/issues/4274",
         says=("int32", "float32"))
def int_then_float() -> None:
    @jax.jit
    def scale(x):
        return x * 2

    scale(jnp.arange(3))
    scale(jnp.ones(3))


# https://github.com/jax-ml/jax/issues/4274 (a Python scalar is weakly typed: f(0.) then f(f(0.)))
@history("python float, then the jitted result", "shift", "weak_type", "x",
         url="https://github.com/jax-ml/jax/issues/4274")
def weak_then_strong() -> None:
    @jax.jit
    def shift(x):
        return x + np.float32(0.0)

    y = shift(0.0)
    shift(y)


# https://github.com/PlasmaControl/DESC/pull/1963 (attributes cast by float() recompile)
@history("python float learning rate", "sgd", "weak_type", "lr",
         url="https://github.com/PlasmaControl/DESC/pull/1963")
def weak_learning_rate() -> None:
    @jax.jit
    def sgd(w, lr):
        return w * lr

    sgd(jnp.ones(3), jnp.float32(0.1))
    sgd(jnp.ones(3), 0.1)


# https://github.com/jax-ml/jax/issues/7930 (jit(f) each round on a matrix one row smaller)
@history("jit made each round, input shrinks", "gram_mean", "shape", "x",
         url="https://github.com/jax-ml/jax/issues/7930", says=("(4, 4)", "(3, 3)"))
def shrinking_input() -> None:
    def gram_mean(x):
        return jnp.mean(jnp.dot(x, x.T))

    for size in (4, 3):
        jit_f = jax.jit(gram_mean)
        jit_f(jnp.ones((size, size)))


# https://github.com/jax-ml/jax/pull/595 ("f(1, 2) then f(1, y=2) does not hit the cache")
@history("positional, then by keyword", "combine", "arg_count", "y",
         url="https://github.com/jax-ml/jax/pull/595")
def positional_then_keyword() -> None:
    @jax.jit
    def combine(x, y):
        return jnp.sin(x) + y["hi"]

    combine(1.0, {"hi": np.arange(4.0)})
    combine(1.0, y={"hi": np.arange(4.0)})


# https://github.com/google/jaxopt/issues/451 ("weak_type inconsistency causes jit
# recompilation": the solver state's stepsize is weakly typed from init_state, typed from update)
@history("solver state stepsize weak from init, typed from update", "update", "weak_type",
         "state.stepsize", url="https://github.com/google/jaxopt/issues/451")
def solver_stepsize_weak() -> None:
    class SolverState(NamedTuple):
        iter_num: jax.Array
        stepsize: jax.Array

    def fun(params):
        return jnp.sum((params - 1.0) ** 2)

    def init_state(params):
        return SolverState(iter_num=jnp.zeros((), jnp.int32), stepsize=jnp.asarray(1.0))

    @jax.jit
    def update(params, state):
        grad = jax.grad(fun)(params)
        stepsize = jnp.minimum(state.stepsize * 1.5, jnp.float32(10.0))
        return params - stepsize * grad, SolverState(state.iter_num + 1, stepsize)

    params = jnp.zeros(4)
    state = init_state(params)
    params, state = update(params, state)
    update(params, state)


# https://github.com/tedwards2412/ripple/issues/4 (a jitted waveform recompiles "when the length
# of the input frequency array changes")
@history("waveform on a shorter frequency grid", "gen_polar", "shape", "f",
         url="https://github.com/tedwards2412/ripple/issues/4", says=("(100,)", "(80,)"))
def frequency_grid_length() -> None:
    @jax.jit
    def gen_polar(f, theta):
        m1, m2, distance = theta
        amp = (m1 * m2) ** 0.6 / distance * f ** (-7.0 / 6.0)
        phase = 2 * jnp.pi * f * (m1 + m2)
        return amp * jnp.cos(phase), amp * jnp.sin(phase)

    theta = jnp.array([30.0, 25.0, 400.0])
    gen_polar(jnp.linspace(20.0, 1024.0, 100), theta)
    gen_polar(jnp.linspace(20.0, 512.0, 80), theta)  # a heterodyned, shorter grid
