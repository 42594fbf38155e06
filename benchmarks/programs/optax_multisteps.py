"""optax ``MultiSteps``: gradient accumulation, the inner optimizer applied once every
``k`` mini-batches, the mini-batches run by one ``lax.scan`` over the train step.

Imitates optax's "Gradient Accumulation" example,
https://optax.readthedocs.io/en/latest/_collections/examples/gradient_accumulation.html
(``optax.MultiSteps(optax.adam(...), every_k_schedule=k)``, ``opt.update(grads,
opt_state, params)``, ``optax.apply_updates``), its Python loop over batches written as
a ``lax.scan`` as in its "Training loop with scan" style.
"""

import jax
import jax.numpy as jnp
import optax

from . import Case

EVERY_K = 4
MICRO_BATCHES = 8
opt = optax.MultiSteps(optax.adam(learning_rate=1e-2), every_k_schedule=EVERY_K)


def predict(params, x):
    hidden = jnp.tanh(x @ params["hidden"]["w"] + params["hidden"]["b"])
    return hidden @ params["out"]["w"] + params["out"]["b"]


def loss_fn(params, batch):
    x, y = batch
    return jnp.mean(optax.l2_loss(predict(params, x), y))


def train_step(carry, batch):
    params, opt_state = carry
    loss, grads = jax.value_and_grad(loss_fn)(params, batch)
    updates, opt_state = opt.update(grads, opt_state, params)
    params = optax.apply_updates(params, updates)
    return (params, opt_state), loss


@jax.jit
def fit(params, opt_state, xs, ys):
    (params, opt_state), losses = jax.lax.scan(train_step, (params, opt_state), (xs, ys))
    return params, opt_state, losses


def program() -> Case:
    key_h, key_o, key_x = jax.random.split(jax.random.PRNGKey(0), 3)
    params = {"hidden": {"w": jax.random.normal(key_h, (3, 16)) / 3, "b": jnp.zeros(16)},
              "out": {"w": jax.random.normal(key_o, (16, 1)) / 4, "b": jnp.zeros(1)}}
    opt_state = opt.init(params)
    xs = jax.random.normal(key_x, (MICRO_BATCHES, 8, 3))
    ys = jnp.sum(xs ** 2, axis=-1, keepdims=True)
    arrays = len(jax.tree_util.tree_leaves((params, opt_state)))
    # the new params and MultiSteps' state (its step counters, the accumulated gradients,
    # the inner adam's state), and the loss of each mini-batch
    return Case(fit, (params, opt_state, xs, ys), outputs=arrays + 1,
                folds=(("train_step", MICRO_BATCHES),), loops=("train_step",), calls=("MultiSteps.update",))
