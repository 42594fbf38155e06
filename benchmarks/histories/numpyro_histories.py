"""numpyro: ``MCMC.run`` again on other data (``jit_model_args=True``)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from numpyro.infer import HMC, MCMC, NUTS, SVI, Trace_ELBO
from numpyro.infer.autoguide import AutoNormal

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
    mcmc = MCMC(NUTS(regression), num_warmup=2, num_samples=2, progress_bar=False,
                jit_model_args=True)
    mcmc.run(jax.random.PRNGKey(0), *_data(50))
    mcmc.run(jax.random.PRNGKey(1), *_data(60))


# https://github.com/pyro-ppl/numpyro/pull/474 (``mcmc.run(key, a, b=None, z=z)``, then data for b)
@history("MCMC.run: an optional observation None, then given", "_fori_collect_loop",
         "pytree_structure", "y", url="https://github.com/pyro-ppl/numpyro/pull/474",
         says=("None", "f32[40]"), requires="numpyro")
def mcmc_optional_observation() -> None:
    kernel = HMC(regression, num_steps=2, adapt_step_size=False, adapt_mass_matrix=False)
    mcmc = MCMC(kernel, num_warmup=2, num_samples=2, progress_bar=False, jit_model_args=True)
    x, y = _data(40)
    mcmc.run(jax.random.PRNGKey(0), x, y=None)  # the prior predictive
    mcmc.run(jax.random.PRNGKey(1), x, y=y)


# https://github.com/pyro-ppl/numpyro/issues/869 (mini-batch SVI: ``jit(svi.update)`` on batches
# from a loader; the last batch is smaller)
@history("jit(svi.update): a smaller last minibatch", "update", "shape", "x",
         url="https://github.com/pyro-ppl/numpyro/issues/869", says=("32", "8"),
         requires="numpyro")
def svi_smaller_last_batch() -> None:
    x, y = _data(40)
    svi = SVI(regression, AutoNormal(regression), numpyro.optim.Adam(1e-2), Trace_ELBO())
    svi_state = svi.init(jax.random.PRNGKey(0), x[:32], y[:32])
    update = jax.jit(svi.update)
    for start in range(0, 40, 32):
        svi_state, _ = update(svi_state, x[start:start + 32], y[start:start + 32])


# https://github.com/pyro-ppl/numpyro/issues/463 ("the arguments passed by the user may have
# weak types ... which results in a cache miss"): jit(svi.update) with a model argument (a KL
# weight) given as a Python float, then as a typed array from a schedule
@history("jit(svi.update): a Python float model argument, then typed", "update", "weak_type",
         "beta", url="https://github.com/pyro-ppl/numpyro/issues/463", requires="numpyro")
def numpyro_weak_model_argument() -> None:
    def model(x, beta, y=None):
        with numpyro.handlers.scale(scale=beta):
            w = numpyro.sample("w", dist.Normal(0.0, 1.0))
        numpyro.sample("y", dist.Normal(w * x, 1.0), obs=y)

    x = np.linspace(0.0, 1.0, 20, dtype=np.float32)
    y = 2.0 * x
    svi = SVI(model, AutoNormal(model), numpyro.optim.Adam(1e-2), Trace_ELBO())
    svi_state = svi.init(jax.random.PRNGKey(0), x, 1.0, y=y)
    update = jax.jit(svi.update)
    for _ in range(2):  # warm-up epochs with a constant weight
        svi_state, _ = update(svi_state, x, 1.0, y=y)
    svi_state, _ = update(svi_state, x, jnp.float32(0.5), y=y)  # annealed by a schedule
