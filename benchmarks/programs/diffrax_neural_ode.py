"""diffrax + Equinox: a neural ODE fitted to trajectories, the loss's gradient taken
through the solve (``RecursiveCheckpointAdjoint``) in an ``eqx.filter_jit`` step.

Imitates diffrax's "Neural ODE" example, https://docs.kidger.site/diffrax/examples/neural_ode/
(``class Func(eqx.Module)``, ``class NeuralODE(eqx.Module)`` calling ``diffrax.diffeqsolve``,
``grad_loss`` with ``eqx.filter_value_and_grad``, ``make_step``).
"""

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import jax.random as jr
import optax

from . import Case


class Func(eqx.Module):
    mlp: eqx.nn.MLP

    def __init__(self, data_size, width_size, depth, *, key):
        self.mlp = eqx.nn.MLP(in_size=data_size, out_size=data_size, width_size=width_size, depth=depth,
                              activation=jax.nn.softplus, key=key)

    def __call__(self, t, y, args):
        return self.mlp(y)


class NeuralODE(eqx.Module):
    func: Func

    def __init__(self, data_size, width_size, depth, *, key):
        self.func = Func(data_size, width_size, depth, key=key)

    def __call__(self, ts, y0):
        solution = diffrax.diffeqsolve(
            diffrax.ODETerm(self.func), diffrax.Tsit5(), t0=ts[0], t1=ts[-1], dt0=ts[1] - ts[0], y0=y0,
            stepsize_controller=diffrax.PIDController(rtol=1e-3, atol=1e-6),
            saveat=diffrax.SaveAt(ts=ts), max_steps=64)
        return solution.ys


optim = optax.adabelief(3e-3)


@eqx.filter_value_and_grad
def grad_loss(model, ti, yi):
    y_pred = jax.vmap(model, in_axes=(None, 0))(ti, yi[:, 0])
    return jnp.mean((yi - y_pred) ** 2)


@eqx.filter_jit
def make_step(ti, yi, model, opt_state):
    loss, grads = grad_loss(model, ti, yi)
    updates, opt_state = optim.update(grads, opt_state)
    model = eqx.apply_updates(model, updates)
    return loss, model, opt_state


def program() -> Case:
    model = NeuralODE(2, 16, 2, key=jr.PRNGKey(0))
    opt_state = optim.init(eqx.filter(model, eqx.is_inexact_array))
    ts = jnp.linspace(0.0, 1.0, 6)
    ys = jr.normal(jr.PRNGKey(1), (4, 6, 2))
    args = (ts, ys, model, opt_state)
    n = len(jax.tree_util.tree_leaves(eqx.filter((model, opt_state), eqx.is_array)))
    # diffeqsolve's solve is a while loop over the step ``body_fun`` of diffrax's own
    # ``loop`` (diffrax/_integrate.py), run by Equinox's ``checkpointed_while_loop``.
    return Case(make_step, args, outputs=1 + n, calls=("diffeqsolve",), loops=("diffrax.loop.body_fun",),
                reference=lambda: eqx.filter_make_jaxpr(make_step.__wrapped__)(*args)[0])
