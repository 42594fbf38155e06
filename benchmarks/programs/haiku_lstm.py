"""Haiku: a two-layer LSTM unrolled with hk.dynamic_unroll, trained on a sine with optax.adam.

Imitates Haiku's RNN example, https://github.com/google-deepmind/dm-haiku/blob/main/examples/rnn/train.py
(``hk.DeepRNN([hk.LSTM(...), ...])``, ``hk.dynamic_unroll(core, inputs, initial_state)``,
``hk.BatchApply(hk.Linear(1))`` on the outputs).
"""
import haiku as hk
import jax
import jax.numpy as jnp
import optax

from . import Case

T, B, H = 12, 4, 16


def unroll_net(seqs):
    core = hk.DeepRNN([hk.LSTM(H), jax.nn.relu, hk.LSTM(H)])
    batch_size = seqs.shape[1]
    outs, state = hk.dynamic_unroll(core, seqs, core.initial_state(batch_size))
    return hk.BatchApply(hk.Linear(1))(outs), state


model = hk.transform(unroll_net)
optimizer = optax.adam(1e-3)


def loss_fn(params, seqs, targets):
    preds, _ = model.apply(params, None, seqs)
    return jnp.mean(jnp.square(preds - targets))


@jax.jit
def update(params, opt_state, seqs, targets):
    loss, grads = jax.value_and_grad(loss_fn)(params, seqs, targets)
    updates, opt_state = optimizer.update(grads, opt_state)
    return optax.apply_updates(params, updates), opt_state, loss


def program() -> Case:
    t = jnp.linspace(0, 6.28, T + 1)[:, None, None] + jnp.arange(B)[None, :, None] * 0.1
    seqs, targets = jnp.sin(t[:-1]), jnp.sin(t[1:])
    params = model.init(jax.random.PRNGKey(0), seqs)
    opt_state = optimizer.init(params)
    n = len(jax.tree_util.tree_leaves((params, opt_state))) + 1
    return Case(update, (params, opt_state, seqs, targets), outputs=n, loops=("deep_rnn",))
