"""numpyro: ``MCMC.run`` again on other data (``jit_model_args=True``)."""

from __future__ import annotations

import jax
import numpy as np
import numpyro
import numpyro.distributions as dist
from numpyro.infer import MCMC, NUTS

from .record import history


def regression(x, y=None):
    w = numpyro.sample("w", dist.Normal(0.0, 1.0))
    b = numpyro.sample("b", dist.Normal(0.0, 1.0))
    numpyro.sample("y", dist.Normal(w * x + b, 1.0), obs=y)


def _data(n: int) -> tuple[np.ndarray, np.ndarray]:
    x = np.linspace(0.0, 1.0, n, dtype=np.float32)
    return x, 2.0 * x + 0.5


# https://github.com/pyro-ppl/numpyro/issues/441 (avoid recompiling MCMC.run with new data:
# it recompiles unless the new data has the same shape)
@history("MCMC.run on more data", "_fori_collect_loop", "shape", "x",
         url="https://github.com/pyro-ppl/numpyro/issues/441", says=("50", "60"),
         requires="numpyro")
def mcmc_more_data() -> None:
    mcmc = MCMC(NUTS(regression), num_warmup=10, num_samples=10, progress_bar=False,
                jit_model_args=True)
    mcmc.run(jax.random.PRNGKey(0), *_data(50))
    mcmc.run(jax.random.PRNGKey(1), *_data(60))


# https://github.com/pyro-ppl/numpyro/pull/474 (``mcmc.run(key, a, b=None, z=z)``, then data for b)
@history("MCMC.run: an optional observation None, then given", "_fori_collect_loop",
         "pytree_structure", "y", url="https://github.com/pyro-ppl/numpyro/pull/474",
         says=("None", "f32[40]"), requires="numpyro")
def mcmc_optional_observation() -> None:
    mcmc = MCMC(NUTS(regression), num_warmup=10, num_samples=10, progress_bar=False,
                jit_model_args=True)
    x, y = _data(40)
    mcmc.run(jax.random.PRNGKey(0), x, y=None)  # the prior predictive
    mcmc.run(jax.random.PRNGKey(1), x, y=y)
