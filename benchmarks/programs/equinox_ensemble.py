"""Equinox: an ensemble of MLPs made and run with ``eqx.filter_vmap`` (the models'
arrays batched along a leading axis, their activation functions shared), trained
together in one ``eqx.filter_jit`` step with optax.

Imitates Equinox's "Ensembling" trick, https://docs.kidger.site/equinox/tricks/#ensembling
(``eqx.filter_vmap(make_ensemble)(keys)``, ``@eqx.filter_vmap(in_axes=(eqx.if_array(0),
None))`` over ``evaluate_ensemble``), with the training step of its "Train RNN" example
(``eqx.filter_value_and_grad``, ``optim.update(grads, opt_state, eqx.filter(model,
eqx.is_array))``, ``eqx.apply_updates``).
"""

import equinox as eqx
import jax
import jax.numpy as jnp
import jax.random as jr
import optax

from . import Case

ENSEMBLE = 5
optim = optax.adam(1e-2)


def make_ensemble(key):
    return eqx.nn.MLP(in_size=2, out_size=1, width_size=16, depth=2, key=key)


@eqx.filter_vmap(in_axes=(eqx.if_array(0), None))
def evaluate_ensemble(model, x):
    return jax.vmap(model)(x)


@eqx.filter_value_and_grad
def ensemble_loss(models, x, y):
    pred = evaluate_ensemble(models, x)  # (ENSEMBLE, batch, 1)
    return jnp.mean((pred - y) ** 2)


@eqx.filter_jit
def train_step(models, opt_state, x, y):
    loss, grads = ensemble_loss(models, x, y)
    updates, opt_state = optim.update(grads, opt_state, eqx.filter(models, eqx.is_array))
    models = eqx.apply_updates(models, updates)
    return loss, models, opt_state


def program() -> Case:
    models = eqx.filter_vmap(make_ensemble)(jr.split(jr.PRNGKey(0), ENSEMBLE))
    opt_state = optim.init(eqx.filter(models, eqx.is_array))
    x = jr.normal(jr.PRNGKey(1), (32, 2))
    y = jnp.sin(x[:, :1]) + x[:, 1:] ** 2
    args = (models, opt_state, x, y)
    # the loss; each model's arrays, stacked (3 Linear layers: weight and bias each); adam's
    # count, mu and nu of each
    arrays = len(jax.tree_util.tree_leaves(eqx.filter((models, opt_state), eqx.is_array)))
    return Case(train_step, args, outputs=1 + arrays, calls=("adam",),
                reference=lambda: eqx.filter_make_jaxpr(train_step.__wrapped__)(*args)[0])
