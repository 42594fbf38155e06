"""Pallas: a flash-attention style multi-head attention kernel (online softmax over
key blocks in a ``fori_loop``) wrapped in ``jax.custom_vjp`` with an XLA backward pass,
in interpret mode, differentiated inside a loss.

Imitates JAX's Pallas attention op, https://github.com/jax-ml/jax/blob/main/jax/experimental/pallas/ops/gpu/attention.py
(``mha`` under ``jax.custom_vjp``, ``mha_forward_kernel``, ``_mha_forward``,
``_mha_backward`` with ``backward_pass_impl="xla"`` via ``mha_reference``).
"""

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

from . import Case

BLOCK_K = 8


def mha_forward_kernel(q_ref, k_ref, v_ref, o_ref, *, sm_scale, block_k):
    seq_len, head_dim = q_ref.shape
    q = q_ref[...] * sm_scale
    m_i = jnp.full((seq_len,), -jnp.inf, jnp.float32)
    l_i = jnp.zeros((seq_len,), jnp.float32)
    o = jnp.zeros((seq_len, head_dim), jnp.float32)

    def body(start_k, carry):
        o_prev, m_prev, l_prev = carry
        k = k_ref[pl.ds(start_k * block_k, block_k), :]
        v = v_ref[pl.ds(start_k * block_k, block_k), :]
        qk = q @ k.T
        m_curr = jnp.maximum(qk.max(axis=-1), m_prev)
        correction = jnp.exp(m_prev - m_curr)
        p = jnp.exp(qk - m_curr[:, None])
        l_curr = correction * l_prev + p.sum(axis=-1)
        o_curr = correction[:, None] * o_prev + p @ v
        return o_curr, m_curr, l_curr

    o, m_i, l_i = jax.lax.fori_loop(0, k_ref.shape[0] // block_k, body, (o, m_i, l_i))
    o_ref[...] = (o / l_i[:, None]).astype(o_ref.dtype)


def mha_reference(q, k, v, sm_scale):
    logits = jnp.einsum("bhqd,bhkd->bhqk", q, k) * sm_scale
    return jnp.einsum("bhqk,bhkd->bhqd", jax.nn.softmax(logits, axis=-1), v)


@functools.partial(jax.custom_vjp, nondiff_argnums=(3,))
def mha(q, k, v, sm_scale=1.0):
    batch, heads, seq_len, head_dim = q.shape
    spec = pl.BlockSpec((None, None, seq_len, head_dim), lambda b, h: (b, h, 0, 0))
    kernel = functools.partial(mha_forward_kernel, sm_scale=sm_scale, block_k=BLOCK_K)
    return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(q.shape, q.dtype), grid=(batch, heads),
                          in_specs=[spec, spec, spec], out_specs=spec, interpret=True)(q, k, v)


def _mha_forward(q, k, v, sm_scale):
    return mha(q, k, v, sm_scale), (q, k, v)


def _mha_backward(sm_scale, res, do):
    q, k, v = res
    _, pullback = jax.vjp(functools.partial(mha_reference, sm_scale=sm_scale), q, k, v)
    return pullback(do)


mha.defvjp(_mha_forward, _mha_backward)


@jax.jit
def attention_loss_grads(q, k, v):
    def loss(q, k, v):
        return jnp.sum(mha(q, k, v, 0.25) ** 2)

    return jax.value_and_grad(loss, argnums=(0, 1, 2))(q, k, v)


def program() -> Case:
    kq, kk, kv = jax.random.split(jax.random.PRNGKey(0), 3)
    shape = (2, 2, 16, 8)
    q, k, v = (jax.random.normal(key, shape) for key in (kq, kk, kv))
    return Case(attention_loss_grads, (q, k, v), outputs=4, calls=("mha",), loops=("body",))
