"""Compiles inside other transformations: pmap's static broadcast arguments, jit under vmap."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from .record import history


# https://github.com/huggingface/diffusers/pull/1096 (pmap's static_broadcasted_argnums:
# a new guidance scale recompiles the pipeline)
@history("pmap static broadcast argument changed", "denoise", "static_value", "guidance_scale",
         url="https://github.com/huggingface/diffusers/pull/1096", says=("7.5", "8.0"),
         devices=2, compiled_as="_fun")
def pmap_static_broadcast() -> None:
    @functools.partial(jax.pmap, static_broadcasted_argnums=1)
    def denoise(latents, guidance_scale):
        return latents * guidance_scale

    latents = jnp.ones((2, 4))
    denoise(latents, 7.5)
    denoise(latents, 8.0)


# https://github.com/jax-ml/jax/issues/4143 (vmap(jit(apply_M)) on batches)
@history("jit under vmap, batch size changed", "apply_m", "shape", "v",
         url="https://github.com/jax-ml/jax/issues/4143", says=("10", "20"))
def jit_under_vmap() -> None:
    m = jnp.ones((6, 5))

    @jax.jit
    def apply_m(v):
        return jnp.dot(m, v)

    jax.vmap(apply_m)(jnp.ones((10, 5)))
    jax.vmap(apply_m)(jnp.ones((20, 5)))


# https://github.com/jax-ml/jax/issues/19654 (``jax.grad(loss)`` called eagerly over jitted parts)
@history("jit under grad, parameters resized", "loss", "shape", "w",
         url="https://github.com/jax-ml/jax/issues/19654", says=("(3,)", "(5,)"))
def jit_under_grad() -> None:
    @jax.jit
    def loss(w):
        return jnp.sum(w ** 2)

    loss_grad = jax.grad(loss)
    loss_grad(jnp.ones(3))
    loss_grad(jnp.ones(5))  # a model grown by two parameters
