"""mctx: a search policy jitted with the number of simulations static."""
# pyright: reportCallIssue=false
# (chex dataclasses: pyright sees no fields in their constructors)

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import mctx

from .record import history


def _recurrent_fn(params, rng_key, action, embedding):
    del params, rng_key
    batch = action.shape[0]
    out = mctx.RecurrentFnOutput(reward=jnp.zeros(batch), discount=jnp.ones(batch),
                                 prior_logits=jnp.zeros((batch, 3)), value=jnp.zeros(batch))
    return out, embedding + 1


# https://github.com/google-deepmind/mctx/issues/48 (best practices for speed: how many
# simulations; evaluation with another number recompiles the search)
@history("gumbel_muzero_policy with more simulations", "run_search", "static_value",
         "num_simulations", url="https://github.com/google-deepmind/mctx/issues/48",
         says=("2", "4"), requires="mctx")
def more_simulations() -> None:
    @functools.partial(jax.jit, static_argnames="num_simulations")
    def run_search(rng_key, num_simulations):
        root = mctx.RootFnOutput(prior_logits=jnp.zeros((2, 3)), value=jnp.zeros(2),
                                 embedding=jnp.zeros(2))
        return mctx.gumbel_muzero_policy(params=(), rng_key=rng_key, root=root,
                                         recurrent_fn=_recurrent_fn,
                                         num_simulations=num_simulations).action

    run_search(jax.random.PRNGKey(0), num_simulations=2)  # training
    run_search(jax.random.PRNGKey(0), num_simulations=4)  # evaluation
