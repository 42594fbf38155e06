"""blackjax: a kernel's ``step`` jitted again after adaptation."""

from __future__ import annotations

import blackjax
import jax
import jax.numpy as jnp

from .record import history


def logdensity(position):
    return -0.5 * jnp.sum(position ** 2)


# https://github.com/blackjax-devs/blackjax/pull/159 (tests/test_compilation.py:
# ``step = jax.jit(kernel.step)``; here the kernel is built again for each adapted step size)
@history("nuts kernel rebuilt per step size", "step_fn", "new_function_object", "kernel",
         url="https://github.com/blackjax-devs/blackjax/pull/159", requires="blackjax")
def kernel_rebuilt_per_step_size() -> None:
    position = jnp.zeros(2)
    state = blackjax.nuts.init(position, logdensity)
    for step_size in (0.5, 0.4):  # step sizes from a hand-rolled adaptation
        kernel = blackjax.nuts(logdensity, step_size, jnp.ones(2)).step
        state, _ = jax.jit(kernel)(jax.random.PRNGKey(0), state)


# https://github.com/blackjax-devs/blackjax/issues/881 (SMC tempering: a new Python closure
# for the tempered density at each step, passed to the kernel as a static callable)
@history("blackjax kernel given a new tempered logdensity", "kernel", "static_value",
         "logdensity_fn", url="https://github.com/blackjax-devs/blackjax/issues/881",
         says=("identity",), requires="blackjax")
def tempered_logdensity() -> None:
    def logprior(x):
        return -0.5 * jnp.sum(x ** 2)

    def loglikelihood(x):
        return -0.5 * jnp.sum((x - 1.0) ** 2)

    kernel = jax.jit(blackjax.mcmc.hmc.build_kernel(),
                     static_argnames=("logdensity_fn", "num_integration_steps"))
    position = jnp.zeros(2)
    for lmbda in (0.5, 1.0):  # the tempering schedule
        def tempered(x, lmbda=lmbda):
            return logprior(x) + lmbda * loglikelihood(x)

        state = blackjax.mcmc.hmc.init(position, tempered)
        state, _ = kernel(jax.random.key(0), state, logdensity_fn=tempered, step_size=0.1,
                          inverse_mass_matrix=jnp.ones(2), num_integration_steps=3)
        position = state.position
