"""JAX's own ODE solver: Lotka-Volterra dynamics integrated with
``jax.experimental.ode.odeint``, its parameters fitted by gradient of a trajectory loss.

Imitates the ``odeint`` docstring and its tests,
https://github.com/jax-ml/jax/blob/main/jax/experimental/ode.py (``odeint(func, y0, t, *args)``,
differentiated with respect to ``args``).
"""

import jax
import jax.numpy as jnp
from jax.experimental.ode import odeint

from . import Case

T = jnp.linspace(0.0, 2.0, 5)
TARGET = jnp.ones((5, 2))


def lotka_volterra(y, t, theta):
    prey, predator = y
    alpha, beta, gamma, delta = theta
    return jnp.stack([alpha * prey - beta * prey * predator, delta * prey * predator - gamma * predator])


def trajectory_loss(theta, y0):
    ys = odeint(lotka_volterra, y0, T, theta, rtol=1e-4, atol=1e-4)
    return jnp.mean((ys - TARGET) ** 2)


@jax.jit
def fit_step(theta, y0):
    loss, grad = jax.value_and_grad(trajectory_loss)(theta, y0)
    return theta - 0.01 * grad, loss


def program() -> Case:
    return Case(fit_step, (jnp.array([1.0, 0.5, 1.0, 0.5]), jnp.array([1.0, 1.0])), outputs=2,
                calls=("odeint",), captured=("T", "TARGET"))
