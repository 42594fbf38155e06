"""optimistix: nonlinear least squares with Levenberg-Marquardt, fitting an exponential
decay to noisy data.

Imitates optimistix's docs, https://docs.kidger.site/optimistix/api/least_squares/
(``optx.least_squares(fn, optx.LevenbergMarquardt(rtol, atol), y0, args)``).
"""

import jax
import jax.numpy as jnp
import optimistix as optx

from . import Case

ts = jnp.linspace(0.0, 2.0, 20)
observations = 2.0 * jnp.exp(-1.5 * ts) + 0.01 * jnp.sin(30 * ts)


def residuals(params, args):
    amplitude, rate = params
    ts, observed = args
    return amplitude * jnp.exp(-rate * ts) - observed


@jax.jit
def fit(params0):
    solver = optx.LevenbergMarquardt(rtol=1e-8, atol=1e-8)
    sol = optx.least_squares(residuals, solver, params0, args=(ts, observations), max_steps=64)
    return sol.value


def program() -> Case:
    return Case(fit, ((jnp.array(1.0), jnp.array(1.0)),), outputs=2, calls=("least_squares",),
                captured=("ts", "observations"))
