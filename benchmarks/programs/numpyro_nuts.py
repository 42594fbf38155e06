"""numpyro: one NUTS transition of the eight-schools model, the kernel's ``sample`` jitted
as ``MCMC`` runs it, the data read from module globals.

Imitates numpyro's README "A Simple Example - 8 Schools",
https://github.com/pyro-ppl/numpyro#a-simple-example---8-schools (``eight_schools``,
``NUTS(eight_schools)``), and ``MCMC``'s ``sample_fn = partial(kernel.sample, model_args=...)``
in https://github.com/pyro-ppl/numpyro/blob/master/numpyro/infer/mcmc.py.
"""

import jax
import numpy as np
import numpyro
import numpyro.distributions as dist
from numpyro.infer import NUTS

from . import Case

J = 8
y = np.array([28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0], np.float32)
sigma = np.array([15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0], np.float32)


def eight_schools(J, sigma, y=None):
    mu = numpyro.sample("mu", dist.Normal(0, 5))
    tau = numpyro.sample("tau", dist.HalfCauchy(5))
    with numpyro.plate("J", J):
        theta = numpyro.sample("theta", dist.Normal(mu, tau))
        numpyro.sample("obs", dist.Normal(theta, sigma), obs=y)


nuts_kernel = NUTS(eight_schools, max_tree_depth=4)


@jax.jit
def nuts_step(state):
    return nuts_kernel.sample(state, (J, sigma), {"y": y})


def program() -> Case:
    state = nuts_kernel.init(jax.random.PRNGKey(0), 10, None, (J, sigma), {"y": y})
    n = len(jax.tree_util.tree_leaves(state))
    return Case(nuts_step, (state,), outputs=n, calls=("NUTS.sample",), captured=("y", "sigma"))
