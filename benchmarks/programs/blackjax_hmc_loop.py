"""blackjax: an HMC inference loop, ``lax.scan`` over the kernel's step.

Imitates blackjax's quickstart, https://blackjax-devs.github.io/blackjax/examples/quickstart.html
(``hmc = blackjax.hmc(logdensity, step_size, inverse_mass_matrix, num_integration_steps)``,
``def inference_loop(rng_key, kernel, initial_state, num_samples)`` with ``one_step``).
"""

from functools import partial

import blackjax
import jax
import jax.numpy as jnp
import jax.scipy.stats as stats

from . import Case

observed = jax.random.normal(jax.random.PRNGKey(0), (50,)) * 2.0 + 3.0


def logdensity_fn(x):
    loc, log_scale = x["loc"], x["log_scale"]
    logjac = log_scale
    logpdf = stats.norm.logpdf(observed, loc, jnp.exp(log_scale))
    return jnp.sum(logpdf) + logjac


hmc = blackjax.hmc(logdensity_fn, step_size=1e-2, inverse_mass_matrix=jnp.array([0.5, 0.5]),
                   num_integration_steps=8)


@partial(jax.jit, static_argnums=(1, 3))
def inference_loop(rng_key, kernel, initial_state, num_samples):
    def one_step(state, rng_key):
        state, _ = kernel(rng_key, state)
        return state, state

    keys = jax.random.split(rng_key, num_samples)
    _, states = jax.lax.scan(one_step, initial_state, keys)
    return states


def program() -> Case:
    initial_state = hmc.init({"loc": jnp.array(1.0), "log_scale": jnp.array(0.5)})
    # HMCState: position 2, logdensity, logdensity_grad 2: stacked over the samples
    args = (jax.random.PRNGKey(1), hmc.step, initial_state, 10)
    return Case(inference_loop, args, outputs=5, folds=(("one_step", 10),), loops=("one_step",), calls=("hmc",), captured=("observed",),
                reference=lambda: jax.make_jaxpr(inference_loop, static_argnums=(1, 3))(*args))
