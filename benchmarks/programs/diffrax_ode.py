"""diffrax: the Robertson-free classic, a damped oscillator solved with Tsit5 and an
adaptive step size controller, saved at a few times, then differentiated through.

Imitates diffrax's "Getting started", https://docs.kidger.site/diffrax/usage/getting-started/
(``ODETerm(f)``, ``Tsit5()``, ``SaveAt(ts=...)``, ``PIDController(rtol, atol)``,
``diffeqsolve(term, solver, t0, t1, dt0, y0, saveat=..., stepsize_controller=...)``).
"""

import diffrax
import jax
import jax.numpy as jnp

from . import Case


def vector_field(t, y, args):
    omega, damping = args
    position, velocity = y
    return velocity, -(omega**2) * position - damping * velocity


@jax.jit
def solve(y0, args):
    term = diffrax.ODETerm(vector_field)
    solver = diffrax.Tsit5()
    saveat = diffrax.SaveAt(ts=jnp.linspace(0.0, 3.0, 7))
    stepsize_controller = diffrax.PIDController(rtol=1e-5, atol=1e-5)
    sol = diffrax.diffeqsolve(term, solver, t0=0.0, t1=3.0, dt0=0.1, y0=y0, args=args, saveat=saveat,
                              stepsize_controller=stepsize_controller, max_steps=256)
    return sol.ys


def program() -> Case:
    y0 = (jnp.array(1.0), jnp.array(0.0))
    args = (jnp.array(2.0), jnp.array(0.3))
    return Case(solve, (y0, args), outputs=2, calls=("diffeqsolve",), loops=("vector_field",))
