"""optimistix: a solver passed into a filter_jit function (its float fields are static)."""

from __future__ import annotations

import equinox as eqx
import jax.numpy as jnp
import optimistix as optx

from .record import history


# https://github.com/patrick-kidger/optimistix/issues/161 (``optx.Newton(atol=..., rtol=...)``:
# a tolerance is not dynamic)
@history("Newton solver with another atol", "solve", "static_value", "solver.atol",
         url="https://github.com/patrick-kidger/optimistix/issues/161", says=("1e-08", "1e-06"),
         requires="optimistix")
def newton_atol_changed() -> None:
    def objective(y, args):
        return y - args["y_target"]

    @eqx.filter_jit
    def solve(solver, y0, args):
        return optx.root_find(objective, solver, y0, args=args, throw=False).value

    args = {"y_target": 0.9 * jnp.logspace(0.0, 3.0, num=8)}
    for atol in (1e-8, 1e-6):  # tolerance tuned by hand
        solve(optx.Newton(rtol=1e-6, atol=atol), jnp.logspace(0.0, 3.0, num=8), args)
