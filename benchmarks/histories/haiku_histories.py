"""Haiku: ``jax.jit`` over a transformed function's ``apply``."""

from __future__ import annotations

import functools

import haiku as hk
import jax
import jax.numpy as jnp

from .record import history


# https://github.com/google-deepmind/tapnet/issues/44 (model_apply = jax.jit(model.apply);
# each video has another number of frames)
@history("haiku apply: frames per video", "forward.apply", "shape", "frames",
         url="https://github.com/google-deepmind/tapnet/issues/44", says=("(4, 3)", "(2, 3)"),
         requires="haiku", compiled_as="apply_fn")
def frames_per_video() -> None:
    def forward(frames):
        return hk.nets.MLP([8, 1])(frames)

    model = hk.transform(forward)
    params = model.init(jax.random.PRNGKey(0), jnp.ones((4, 3)))
    model_apply = jax.jit(model.apply)
    model_apply(params, None, jnp.ones((4, 3)))
    model_apply(params, None, jnp.ones((2, 3)))


# https://github.com/google-deepmind/dm-haiku/issues/187 (is_training as a static argument)
@history("haiku: is_training switched", "model_loss", "static_value", "is_training",
         url="https://github.com/google-deepmind/dm-haiku/issues/187", says=("True", "False"),
         requires="haiku")
def is_training_switched() -> None:
    def net(x, is_training):
        x = jax.nn.relu(hk.Linear(16)(x))
        if is_training:
            x = hk.dropout(hk.next_rng_key(), 0.1, x)
        return hk.Linear(1)(x)

    model = hk.transform(net)
    params = model.init(jax.random.PRNGKey(0), jnp.ones((2, 3)), True)

    @functools.partial(jax.jit, static_argnums=(4,))
    def model_loss(params, rng, target, x, is_training):
        return jnp.mean((model.apply(params, rng, x, is_training) - target) ** 2)

    key = jax.random.PRNGKey(1)
    model_loss(params, key, jnp.ones((2, 1)), jnp.ones((2, 3)), True)
    model_loss(params, key, jnp.ones((2, 1)), jnp.ones((2, 3)), False)


# https://github.com/kingoflolz/mesh-transformer-jax/issues/173 (a None PRNGKey passed to
# apply by default; a real key once the layer needs random numbers)
@history("haiku apply: rng None, then a key", "forward.apply", "pytree_structure", "rng",
         url="https://github.com/kingoflolz/mesh-transformer-jax/issues/173", says=("None",),
         requires="haiku", compiled_as="apply_fn")
def haiku_rng_none_then_key() -> None:
    def forward(x):
        return hk.Linear(4)(x)

    model = hk.transform(forward)
    params = model.init(jax.random.PRNGKey(0), jnp.ones((2, 3)))
    apply = jax.jit(model.apply)
    apply(params, None, jnp.ones((2, 3)))  # evaluation: no randomness
    apply(params, jax.random.PRNGKey(1), jnp.ones((2, 3)))  # training: a key
