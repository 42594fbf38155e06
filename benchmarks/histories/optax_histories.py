"""optax: optimizers made again, passed as static arguments or jitted themselves."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import optax

from .record import history


# https://github.com/google-deepmind/optax/issues/353 (train() called again: the same optimizer
# made again, static argument ``optimizer``)
@history("optax optimizer made again", "train_step", "static_value", "optimizer",
         url="https://github.com/google-deepmind/optax/issues/353", says=("identity",),
         requires="optax")
def optimizer_made_again() -> None:
    @functools.partial(jax.jit, static_argnames="optimizer")
    def train_step(optimizer, opt_state, params):
        grads = jax.tree.map(jnp.ones_like, params)
        updates, opt_state = optimizer.update(grads, opt_state)
        return optax.apply_updates(params, updates), opt_state

    def train():
        optimizer = optax.adam(1e-2)
        params = {"foo": jnp.zeros((10, 10))}
        opt_state = optimizer.init(params)
        for _ in range(2):
            params, opt_state = train_step(optimizer, opt_state, params)

    train()
    train()


# https://github.com/google-deepmind/optax/issues/353 (the optimizer made again for each epoch,
# passed as the static ``tx``)
@history("optax optimizer made again per epoch", "train_step", "static_value", "tx",
         url="https://github.com/google-deepmind/optax/issues/353", says=("identity",),
         requires="optax")
def optimizer_made_per_epoch() -> None:
    def train_step(params, opt_state, x, tx):
        grads = jax.grad(lambda p: jnp.sum((x @ p) ** 2))(params)
        updates, opt_state = tx.update(grads, opt_state)
        return optax.apply_updates(params, updates), opt_state

    step = jax.jit(train_step, static_argnames="tx")
    params = jnp.ones(3)
    for _ in range(2):
        tx = optax.adam(1e-3)
        params, _ = step(params, tx.init(params), jnp.ones((2, 3)), tx=tx)


# https://github.com/google-deepmind/optax/issues/197 (``jit(inference, static_argnums=0)(adam(0.05))``
# in a loop: a closure-holding optimizer each time)
@history("optimizer as static_argnums=0 in a loop", "inference", "static_value", "gt",
         url="https://github.com/google-deepmind/optax/issues/197", says=("identity",),
         requires="optax")
def optimizer_static_in_loop() -> None:
    def inference(gt):
        def do_one(state, _):
            parameters, gt_state = state
            gradient = jax.grad(lambda p: jnp.square(p - 1.0))(parameters)
            updates, gt_state = gt.update(gradient, gt_state, parameters)
            return (parameters + updates, gt_state), parameters

        _, trajectory = jax.lax.scan(do_one, (0.0, gt.init(0.0)), None, 10)
        return trajectory

    for _ in range(2):
        gt1 = optax.adam(0.05)
        jax.jit(inference, static_argnums=0)(gt1)


# https://github.com/google-deepmind/optax/issues/577 (a sweep: ``jax.jit(tx.update)`` for each
# learning rate)
@history("jax.jit(tx.update) per learning rate", "update_fn", "new_function_object",
         "tx.update", url="https://github.com/google-deepmind/optax/issues/577",
         requires="optax")
def jit_of_update_per_rate() -> None:
    params = jnp.ones(8)
    for lr in (1e-3, 1e-2):
        tx = optax.adafactor(learning_rate=lr)
        opt_state = tx.init(params)
        jax.jit(tx.update)(params, opt_state, params)


# https://github.com/google-deepmind/optax/issues/577 (a comment: "it can be worked around with
# inject_hyperparams"; the rate then set from a Python float)
@history("inject_hyperparams rate set to a Python float", "train_step", "weak_type",
         "opt_state.hyperparams['learning_rate']",
         url="https://github.com/google-deepmind/optax/issues/577", requires="optax")
def injected_rate_python_float() -> None:
    tx = optax.inject_hyperparams(optax.sgd)(learning_rate=0.1)

    @jax.jit
    def train_step(params, opt_state):
        grads = jax.grad(lambda p: jnp.sum(p ** 2))(params)
        updates, opt_state = tx.update(grads, opt_state)
        return optax.apply_updates(params, updates), opt_state

    params = jnp.ones(3)
    opt_state = tx.init(params)
    params, opt_state = train_step(params, opt_state)
    opt_state.hyperparams["learning_rate"] = 0.01  # a schedule written by hand
    train_step(params, opt_state)


# https://github.com/google-deepmind/optax/issues/1171 (backtracking linesearch: "the only
# difference ... between state from init and state from update were some weak_type differences")
@history("optax linesearch state from init, then from update", "train_step", "weak_type",
         "opt_state[1].info.num_linesearch_steps",
         url="https://github.com/google-deepmind/optax/issues/1171", requires="optax")
def optax_linesearch_state() -> None:
    def loss(p):
        return jnp.sum((p - 1.0) ** 2)

    tx = optax.chain(optax.sgd(1.0),
                     optax.scale_by_backtracking_linesearch(max_backtracking_steps=5))

    @jax.jit
    def train_step(params, opt_state):
        value, grad = jax.value_and_grad(loss)(params)
        updates, opt_state = tx.update(grad, opt_state, params, value=value, grad=grad,
                                       value_fn=loss)
        return optax.apply_updates(params, updates), opt_state

    params = jnp.zeros(3)
    opt_state = tx.init(params)
    for _ in range(2):
        params, opt_state = train_step(params, opt_state)
