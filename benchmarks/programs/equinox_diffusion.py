"""Equinox + diffrax: a score-based diffusion model, its denoising score-matching train
step (``eqx.filter_jit``) and a sample drawn by solving the probability-flow ODE with
``diffrax.diffeqsolve``.

Imitates the Equinox example "Score based diffusion",
https://docs.kidger.site/equinox/examples/score_based_diffusion/
(``single_loss_fn``, ``batch_loss_fn``, ``make_step``, ``single_sample_fn``), with an MLP
in place of the U-Net to stay small.
"""

import diffrax as dfx
import equinox as eqx
import jax
import jax.numpy as jnp
import jax.random as jr
import optax

from . import Case

DATA = 8
T1 = 10.0


class ScoreMLP(eqx.Module):
    mlp: eqx.nn.MLP

    def __init__(self, key):
        self.mlp = eqx.nn.MLP(DATA + 1, DATA, width_size=32, depth=3, activation=jax.nn.silu, key=key)

    def __call__(self, t, y):
        return self.mlp(jnp.concatenate([y, t[None] / T1]))


def int_beta(t):
    return t  # beta(t) = 1: the variance-preserving SDE of the example


def weight(t):
    return 1 - jnp.exp(-int_beta(t))


def single_loss_fn(model, data, t, key):
    mean = data * jnp.exp(-0.5 * int_beta(t))
    var = jnp.maximum(1 - jnp.exp(-int_beta(t)), 1e-5)
    std = jnp.sqrt(var)
    noise = jr.normal(key, data.shape)
    y = mean + std * noise
    pred = model(t, y)
    return weight(t) * jnp.mean((pred + noise / std) ** 2)


def batch_loss_fn(model, data, t1, key):
    batch_size = data.shape[0]
    tkey, losskey = jr.split(key)
    losskey = jr.split(losskey, batch_size)
    # low-discrepancy sampling over t, as the example does
    t = jr.uniform(tkey, (batch_size,), minval=0, maxval=t1 / batch_size)
    t = t + (t1 / batch_size) * jnp.arange(batch_size)
    loss_fn = jax.vmap(lambda d, tt, k: single_loss_fn(model, d, tt, k))
    return jnp.mean(loss_fn(data, t, losskey))


def single_sample_fn(model, key, dt0=-0.5):
    def drift(t, y, args):
        _, beta = jax.jvp(int_beta, (t,), (jnp.ones_like(t),))
        return -0.5 * beta * (y + model(t, y))

    term = dfx.ODETerm(drift)
    y1 = jr.normal(key, (DATA,))
    sol = dfx.diffeqsolve(term, dfx.Tsit5(), T1, 0.0, dt0, y1, max_steps=64)
    return sol.ys[0]


OPTIM = optax.adabelief(3e-4)


@eqx.filter_jit
def make_step(model, data, key, opt_state):
    loss_key, sample_key = jr.split(key)
    loss, grads = eqx.filter_value_and_grad(batch_loss_fn)(model, data, T1, loss_key)
    updates, opt_state = OPTIM.update(grads, opt_state)
    model = eqx.apply_updates(model, updates)
    sample = single_sample_fn(model, sample_key)
    return loss, model, opt_state, sample


def program() -> Case:
    model = ScoreMLP(jr.PRNGKey(0))
    opt_state = OPTIM.init(eqx.filter(model, eqx.is_inexact_array))
    data = jr.normal(jr.PRNGKey(1), (16, DATA))
    n_model = len(jax.tree_util.tree_leaves(eqx.filter(model, eqx.is_array)))
    n_opt = len(jax.tree_util.tree_leaves(opt_state))
    args = (model, data, jr.PRNGKey(2), opt_state)
    return Case(make_step, args, outputs=1 + n_model + n_opt + 1,
                calls=("diffeqsolve",), loops=("drift",),
                reference=lambda: eqx.filter_make_jaxpr(make_step.__wrapped__)(*args)[0])
