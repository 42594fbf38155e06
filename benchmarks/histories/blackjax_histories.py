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
