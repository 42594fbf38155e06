"""diffrax: ``diffeqsolve`` under ``eqx.filter_jit`` (Python floats there are static)."""

from __future__ import annotations

import diffrax
import equinox as eqx
import jax.numpy as jnp

from .record import history


def lorenz(t, y, args):
    return jnp.stack([10 * (y[1] - y[0]), y[0] * (28 - y[2]) - y[1], y[0] * y[1] - 8 / 3 * y[2]])


# https://github.com/patrick-kidger/diffrax/issues/466 (run again with atol=rtol=1e-4 after 1e-5:
# compiled again)
@history("tolerances as Python floats", "solve", "static_value", "rtol",
         url="https://github.com/patrick-kidger/diffrax/issues/466", says=("1e-05", "0.0001"),
         requires="diffrax")
def tolerances_changed() -> None:
    @eqx.filter_jit
    def solve(y0, rtol, atol):
        return diffrax.diffeqsolve(
            diffrax.ODETerm(lorenz), diffrax.Tsit5(), t0=0.0, t1=0.1, dt0=None, y0=y0,
            stepsize_controller=diffrax.PIDController(rtol=rtol, atol=atol)).ys

    y0 = jnp.array([0.0, 1.0, 1.05])
    solve(y0, 1e-5, 1e-5)
    solve(y0, 1e-4, 1e-5)


# https://github.com/patrick-kidger/diffrax/issues/606 (solve(ts, y0) with SaveAt(ts=ts))
@history("other save times", "solve", "shape", "ts",
         url="https://github.com/patrick-kidger/diffrax/issues/606", says=("(30,)", "(20,)"),
         requires="diffrax")
def save_times_changed() -> None:
    @eqx.filter_jit
    def solve(ts, y0):
        return diffrax.diffeqsolve(
            diffrax.ODETerm(lorenz), diffrax.Euler(), t0=ts[0], t1=ts[-1], dt0=0.01, y0=y0,
            saveat=diffrax.SaveAt(ts=ts)).ys

    y0 = jnp.array([0.0, 1.0, 1.05])
    solve(jnp.linspace(0.0, 0.3, 30), y0)
    solve(jnp.linspace(0.0, 0.2, 20), y0)
