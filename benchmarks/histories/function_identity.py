"""The jitted function itself is a new object: a partial, a bound method, a closure, a
transformed function made again."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from .record import history


# https://github.com/jax-ml/jax/issues/1832 (jit inside the timing loop recompiles each time)
@history("partial built in the loop", "apply", "new_function_object", "step",
         url="https://github.com/jax-ml/jax/issues/1832")
def partial_in_loop() -> None:
    def apply(scale, x):
        return x * scale

    for _ in range(2):
        step = jax.jit(functools.partial(apply, 2.0))
        step(jnp.ones(3))


# https://github.com/pyro-ppl/numpyro/issues/441 (jit(f.sample) of an instance)
@history("jit of a new model's method", "forward", "new_function_object", "forward",
         url="https://github.com/pyro-ppl/numpyro/issues/441")
def bound_method_of_new_model() -> None:
    class Model:
        def __init__(self):
            self.scale = 2.0

        def forward(self, x):
            return x * self.scale

    for _ in range(2):
        jax.jit(Model().forward)(jnp.ones(3))


# https://github.com/energnn/energnn/pull/75 (jitted functions rebuilt inside every step)
@history("jitted closure made by a helper", "sgd", "new_function_object", "sgd",
         url="https://github.com/energnn/energnn/pull/75")
def closure_from_helper() -> None:
    def make_step(lr):
        @jax.jit
        def sgd(w):
            return w - lr
        return sgd

    for _ in range(2):
        make_step(0.1)(jnp.ones(3))


# https://github.com/jax-ml/jax/issues/2515 (``jit(grad(_Likelihood))`` called in each round)
@history("jax.jit(jax.grad(loss)) in a loop", "likelihood", "new_function_object",
         "jax.grad(likelihood)", url="https://github.com/jax-ml/jax/issues/2515")
def jit_of_grad_in_loop() -> None:
    def likelihood(sigma, mu, data):
        return jnp.sum(jnp.log(sigma) + ((data - mu) / sigma) ** 2 / 2)

    data = jnp.linspace(90.0, 110.0, 8)
    for sigma, mu in ((5.0, 100.0), (5.1, 100.1)):
        jax.jit(jax.grad(likelihood))(sigma, mu, data)


# https://github.com/patrick-kidger/equinox/issues/1141 (jax.jit inside the for loop)
@history("jit of a nested function defined in the loop", "body", "new_function_object", "body",
         url="https://github.com/patrick-kidger/equinox/issues/1141")
def nested_def_in_loop() -> None:
    for i in range(2):
        def body(a, b):
            return jnp.matmul(a, b)

        jax.jit(body)(jnp.ones((2, 2)) * i, jnp.ones((2, 2)))
