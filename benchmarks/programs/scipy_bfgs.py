"""JAX's own BFGS (``jax.scipy.optimize.minimize``) fitting a logistic regression, jitted.

Imitates the usage in the ``jax.scipy.optimize.minimize`` docs and
https://github.com/jax-ml/jax/issues/6113 (a jitted ``minimize(loss, w0, method="BFGS")``).
"""
import jax
import jax.numpy as jnp
from jax.scipy.optimize import minimize

from . import Case

X = jnp.linspace(-1, 1, 32).reshape(16, 2)
Y = (X[:, 0] + X[:, 1] > 0).astype(jnp.float32)


def loss(w):
    logits = X @ w[:2] + w[2]
    return jnp.mean(jnp.logaddexp(0.0, logits) - Y * logits)


@jax.jit
def fit(w0):
    result = minimize(loss, w0, method="BFGS")
    return result.x, result.fun


def program() -> Case:
    return Case(fit, (jnp.zeros(3),), outputs=2, calls=("jax.scipy.optimize.minimize",),
                captured=("X", "Y"))
