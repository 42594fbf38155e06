"""``lax.while_loop``: Newton's method for a square root run until converged, and the
Collatz stopping time, each loop carrying a tuple.

Imitates JAX's "Control flow and logical operators with JIT",
https://docs.jax.dev/en/latest/control-flow.html (``while_loop(cond_fun, body_fun, init_val)``).
"""

import jax
import jax.numpy as jnp

from . import Case


@jax.jit
def newton_sqrt(a):
    def not_converged(state):
        x, i = state
        return (jnp.abs(x * x - a).max() > 1e-6) & (i < 50)

    def newton_step(state):
        x, i = state
        return 0.5 * (x + a / x), i + 1

    x, steps = jax.lax.while_loop(not_converged, newton_step, (jnp.ones_like(a), 0))

    def collatz_running(state):
        n, count = state
        return n > 1

    def collatz_step(state):
        n, count = state
        return jnp.where(n % 2 == 0, n // 2, 3 * n + 1), count + 1

    _, stopping_time = jax.lax.while_loop(collatz_running, collatz_step, (jnp.int32(27), 0))
    return x, steps, stopping_time


def program() -> Case:
    return Case(newton_sqrt, (jnp.array([2.0, 9.0, 10.0]),), outputs=3, loops=("newton_step", "collatz_step"))
