"""Donation: the same function jitted with and without ``donate_argnums``."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from .record import history


# https://github.com/google-research/google-research/issues/1187 (train_step with donate_argnums)
@history("jitted with and without donation", "update", "donation", "params",
         url="https://github.com/google-research/google-research/issues/1187")
def with_and_without_donation() -> None:
    def update(params, grads):
        return params - 0.1 * grads

    jax.jit(update)(jnp.ones(3), jnp.ones(3))
    jax.jit(update, donate_argnums=0)(jnp.ones(3), jnp.ones(3))
