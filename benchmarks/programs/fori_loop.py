"""``lax.fori_loop``: gradient descent on a quadratic run for a fixed number of steps
inside one jitted function, and a power iteration for the largest eigenvalue.

Imitates JAX's "Control flow and logical operators with JIT",
https://docs.jax.dev/en/latest/control-flow.html (``fori_loop(lower, upper, body_fun, init_val)``).
"""

import jax
import jax.numpy as jnp

from . import Case


def quadratic(x, A, b):
    return 0.5 * x @ A @ x - b @ x


@jax.jit
def descend_and_power_iterate(A, b, x0):
    def gd_step(i, x):
        return x - 0.1 * jax.grad(quadratic)(x, A, b)

    x = jax.lax.fori_loop(0, 20, gd_step, x0)

    def power_step(i, v):
        w = A @ v
        return w / jnp.linalg.norm(w)

    v = jax.lax.fori_loop(0, 10, power_step, jnp.ones_like(x0))
    return x, v @ A @ v


def program() -> Case:
    M = jax.random.normal(jax.random.PRNGKey(0), (4, 4))
    A = M @ M.T / 4 + jnp.eye(4)
    return Case(descend_and_power_iterate, (A, jnp.ones(4), jnp.zeros(4)), outputs=2,
                loops=("gd_step", "power_step"))
