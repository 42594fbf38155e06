"""optax: L-BFGS with its zoom line search minimising the Rosenbrock function in a jitted
``lax.while_loop``, as in optax's "L-BFGS" docs example,
https://optax.readthedocs.io/en/latest/_collections/examples/lbfgs.html
(``optax.value_and_grad_from_state(f)``, ``opt.update(grad, state, params, value=value,
grad=grad, value_fn=f)``, ``otu.tree_get(state, 'count')`` in the loop's condition).
"""
import jax
import jax.numpy as jnp
import optax
import optax.tree_utils as otu

from . import Case


def rosenbrock(x):
    return jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


opt = optax.lbfgs()


@jax.jit
def run_lbfgs(init_params):
    value_and_grad_fun = optax.value_and_grad_from_state(rosenbrock)

    def step(carry):
        params, state = carry
        value, grad = value_and_grad_fun(params, state=state)
        updates, state = opt.update(grad, state, params, value=value, grad=grad, value_fn=rosenbrock)
        return optax.apply_updates(params, updates), state

    def continuing_criterion(carry):
        _, state = carry
        iter_num = otu.tree_get(state, "count")
        grad = otu.tree_get(state, "grad")
        err = otu.tree_l2_norm(grad)
        return (iter_num == 0) | ((iter_num < 50) & (err >= 1e-3))

    final_params, _ = jax.lax.while_loop(continuing_criterion, step, (init_params, opt.init(init_params)))
    return final_params


def program() -> Case:
    return Case(run_lbfgs, (jnp.zeros(4),), outputs=1, loops=("step",), calls=("optax.lbfgs.update",))
