"""optimistix: a root find with Newton's method on a pytree ``y = (array, array)``, the
initial guess a global tuple captured by the jitted function.

Imitates optimistix's docs, https://docs.kidger.site/optimistix/api/root_find/
(``optx.root_find(fn, solver, y0, args)`` with ``optx.Newton(rtol, atol)``), and
https://docs.kidger.site/optimistix/ ("y0 can be any PyTree").
"""

import jax
import jax.numpy as jnp
import optimistix as optx

from . import Case

y0 = (jnp.array([0.5, 0.5, 0.5]), jnp.zeros(2))


def fn(y, args):
    a, b = y
    c, d = args
    return jnp.tanh(a + c) - a, jnp.cos(b) * d - b


@jax.jit
def solve(args):
    solver = optx.Newton(rtol=1e-6, atol=1e-6)
    sol = optx.root_find(fn, solver, y0, args, max_steps=32)
    return sol.value, sol.stats["num_steps"]


def program() -> Case:
    args = (jnp.array([0.1, 0.2, 0.3]), jnp.array([1.0, 2.0]))
    return Case(solve, (args,), outputs=3, calls=("root_find",), captured=("y0",))
