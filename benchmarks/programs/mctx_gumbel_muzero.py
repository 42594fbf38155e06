"""mctx: Gumbel MuZero search with a toy learned model (an MLP dynamics and prediction
function as the recurrent function), batched over roots.

Imitates mctx's demo, https://github.com/google-deepmind/mctx/blob/main/examples/policy_improvement_demo.py
(``mctx.RootFnOutput``, a ``recurrent_fn`` returning ``mctx.RecurrentFnOutput`` and the next
embedding, ``mctx.gumbel_muzero_policy(..., qtransform=functools.partial(
mctx.qtransform_completed_by_mix_value, ...))``).
"""

import functools

import jax
import jax.numpy as jnp
import mctx

from . import Case

BATCH, ACTIONS, EMBED = 4, 5, 8


def init_params(key):
    k1, k2, k3 = jax.random.split(key, 3)
    return {"dynamics": jax.random.normal(k1, (EMBED + ACTIONS, EMBED)) * 0.3,
            "policy": jax.random.normal(k2, (EMBED, ACTIONS)) * 0.3,
            "value": jax.random.normal(k3, (EMBED, 1)) * 0.3}


def prediction(params, embedding):
    return embedding @ params["policy"], (embedding @ params["value"])[..., 0]


def recurrent_fn(params, rng_key, action, embedding):
    del rng_key
    inputs = jnp.concatenate([embedding, jax.nn.one_hot(action, ACTIONS)], axis=-1)
    next_embedding = jnp.tanh(inputs @ params["dynamics"])
    prior_logits, value = prediction(params, next_embedding)
    reward = jnp.sum(next_embedding, axis=-1) * 0.1
    output = mctx.RecurrentFnOutput(reward=reward, discount=jnp.full_like(reward, 0.99),
                                    prior_logits=prior_logits, value=value)
    return output, next_embedding


@jax.jit
def search(params, rng_key, observation):
    prior_logits, value = prediction(params, observation)
    root = mctx.RootFnOutput(prior_logits=prior_logits, value=value, embedding=observation)
    policy_output = mctx.gumbel_muzero_policy(
        params=params, rng_key=rng_key, root=root, recurrent_fn=recurrent_fn,
        num_simulations=8, max_num_considered_actions=4,
        qtransform=functools.partial(mctx.qtransform_completed_by_mix_value, use_mixed_value=True))
    return policy_output.action, policy_output.action_weights


def program() -> Case:
    params = init_params(jax.random.PRNGKey(0))
    obs = jax.random.normal(jax.random.PRNGKey(1), (BATCH, EMBED))
    return Case(search, (params, jax.random.PRNGKey(2), obs), outputs=2,
                calls=("gumbel_muzero_policy",), loops=("recurrent_fn",))
