"""``lax.associative_scan``: a diagonal linear recurrence h_t = a_t * h_{t-1} + b_t
computed in parallel (the S4/S5/LRU state-space layer's core), with its gradient.

Imitates JAX's ``lax.associative_scan`` docs,
https://docs.jax.dev/en/latest/_autosummary/jax.lax.associative_scan.html, and the
binary operator of the S5 layer, https://github.com/lindermanlab/S5/blob/main/s5/layers.py
(``binary_operator``, ``apply_ssm``).
"""

import jax
import jax.numpy as jnp

from . import Case


def binary_operator(q_i, q_j):
    a_i, b_i = q_i
    a_j, b_j = q_j
    return a_j * a_i, a_j * b_i + b_j


def apply_ssm(log_a, B, C, inputs):
    a = jnp.exp(-jnp.exp(log_a))  # stable decay in (0, 1)
    Bu = jax.vmap(lambda u: B @ u)(inputs)
    a_elements = jnp.broadcast_to(a, Bu.shape)
    _, hidden = jax.lax.associative_scan(binary_operator, (a_elements, Bu))
    return jax.vmap(lambda h: C @ h)(hidden)


@jax.jit
def loss_and_grads(params, inputs, targets):
    def loss(params):
        return jnp.mean((apply_ssm(*params, inputs) - targets) ** 2)

    return jax.value_and_grad(loss)(params)


def program() -> Case:
    k1, k2, k3 = jax.random.split(jax.random.PRNGKey(0), 3)
    state, features, length = 8, 4, 32
    params = (jnp.zeros(state), jax.random.normal(k1, (state, features)) * 0.3,
              jax.random.normal(k2, (features, state)) * 0.3)
    inputs = jax.random.normal(k3, (length, features))
    return Case(loss_and_grads, (params, inputs, jnp.zeros((length, features))), outputs=4,
                calls=("associative_scan",))
