"""blackjax: Stan's window adaptation of NUTS's step size and mass matrix on a
logistic-regression posterior, the whole warmup jitted.

Imitates blackjax's quickstart, https://blackjax-devs.github.io/blackjax/examples/quickstart.html
(``warmup = blackjax.window_adaptation(blackjax.nuts, logdensity)``,
``(state, parameters), _ = warmup.run(warmup_key, initial_position, num_steps=...)``).
"""

import blackjax
import jax
import jax.numpy as jnp
import jax.scipy.stats as stats

from . import Case

X = jax.random.normal(jax.random.PRNGKey(0), (20, 3))
Y = (X @ jnp.array([1.0, -1.0, 0.5]) > 0).astype(jnp.float32)


def logdensity_fn(position):
    logits = X @ position["w"] + position["b"]
    log_likelihood = jnp.sum(Y * jax.nn.log_sigmoid(logits) + (1 - Y) * jax.nn.log_sigmoid(-logits))
    log_prior = stats.norm.logpdf(position["w"]).sum() + stats.norm.logpdf(position["b"])
    return log_likelihood + log_prior


@jax.jit
def run_warmup(warmup_key, initial_position):
    warmup = blackjax.window_adaptation(blackjax.nuts, logdensity_fn, max_num_doublings=3)
    (state, parameters), _ = warmup.run(warmup_key, initial_position, num_steps=30)
    return state, parameters


def program() -> Case:
    position = {"w": jnp.zeros(3), "b": jnp.zeros(())}
    # state: position 2, logdensity, grad 2; parameters: step_size, inverse_mass_matrix
    # and the max_num_doublings passed to the adaptation
    return Case(run_warmup, (jax.random.PRNGKey(1), position), outputs=5 + 3,
                calls=("window_adaptation",), loops=("one_step",), captured=("X", "Y"))
