"""Equinox: a GRU run over a sequence with ``lax.scan``, classified by its last state, and
an ``eqx.filter_jit`` train step.

Imitates the Equinox example "Train RNN", https://docs.kidger.site/equinox/examples/train_rnn/
(``class RNN(eqx.Module)`` with ``eqx.nn.GRUCell`` and ``lax.scan``, ``make_step``).
"""

import equinox as eqx
import jax
import jax.numpy as jnp
import jax.random as jr
import optax

from . import Case


class RNN(eqx.Module):
    hidden_size: int
    cell: eqx.Module
    linear: eqx.nn.Linear
    bias: jax.Array

    def __init__(self, in_size, out_size, hidden_size, *, key):
        ckey, lkey = jr.split(key)
        self.hidden_size = hidden_size
        self.cell = eqx.nn.GRUCell(in_size, hidden_size, key=ckey)
        self.linear = eqx.nn.Linear(hidden_size, out_size, use_bias=False, key=lkey)
        self.bias = jnp.zeros(out_size)

    def __call__(self, input):
        hidden = jnp.zeros((self.hidden_size,))

        def f(carry, inp):
            return self.cell(inp, carry), None

        out, _ = jax.lax.scan(f, hidden, input)
        return jax.nn.sigmoid(self.linear(out) + self.bias)


OPTIM = optax.adam(3e-3)


@eqx.filter_value_and_grad
def compute_loss(model, x, y):
    pred_y = jax.vmap(model)(x)
    return -jnp.mean(y * jnp.log(pred_y) + (1 - y) * jnp.log(1 - pred_y))


@eqx.filter_jit
def make_step(model, x, y, opt_state):
    loss, grads = compute_loss(model, x, y)
    updates, opt_state = OPTIM.update(grads, opt_state)
    model = eqx.apply_updates(model, updates)
    return loss, model, opt_state


def program() -> Case:
    model = RNN(2, 1, 16, key=jr.PRNGKey(0))
    opt_state = OPTIM.init(eqx.filter(model, eqx.is_inexact_array))
    x, y = jnp.ones((4, 10, 2)), jnp.ones((4, 1))
    n = len(jax.tree_util.tree_leaves(eqx.filter(model, eqx.is_array)))
    args = (model, x, y, opt_state)
    return Case(make_step, args, outputs=1 + n + len(jax.tree_util.tree_leaves(opt_state)), loops=("f",),
                reference=lambda: eqx.filter_make_jaxpr(make_step.__wrapped__)(*args)[0])
