"""numpyro: one step of stochastic variational inference with an ``AutoNormal`` guide,
jitted as ``SVI.run`` does, on a Bayesian linear regression.

Imitates numpyro's SVI tutorial, https://num.pyro.ai/en/stable/svi.html
(``svi = SVI(model, guide, optim, loss=Trace_ELBO())``, ``svi.update(svi_state, ...)``).
"""

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from numpyro.infer import SVI, Trace_ELBO
from numpyro.infer.autoguide import AutoNormal

from . import Case

X = np.linspace(-1, 1, 20, dtype=np.float32)[:, None] * np.ones((1, 3), np.float32)
Y = (X @ np.array([1.0, -2.0, 0.5], np.float32) + 0.3).astype(np.float32)


def regression(x, y=None):
    w = numpyro.sample("w", dist.Normal(jnp.zeros(3), 1.0).to_event(1))
    b = numpyro.sample("b", dist.Normal(0.0, 1.0))
    noise = numpyro.sample("noise", dist.HalfNormal(1.0))
    with numpyro.plate("data", x.shape[0]):
        numpyro.sample("y", dist.Normal(x @ w + b, noise), obs=y)


guide = AutoNormal(regression)
svi = SVI(regression, guide, numpyro.optim.Adam(0.01), loss=Trace_ELBO())


@jax.jit
def svi_step(svi_state):
    return svi.update(svi_state, X, Y)


def program() -> Case:
    state = svi.init(jax.random.PRNGKey(0), X, Y)
    n = len(jax.tree_util.tree_leaves(state)) + 1
    return Case(svi_step, (state,), outputs=n, calls=("SVI.update",), captured=("X", "Y"))
