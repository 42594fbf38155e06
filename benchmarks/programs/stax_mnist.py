"""JAX's own example library: an MLP built with ``stax.serial`` trained with
``optimizers.momentum``, as in JAX's examples/mnist_classifier.py,
https://github.com/jax-ml/jax/blob/main/examples/mnist_classifier.py (``init_random_params,
predict = stax.serial(Dense(1024), Relu, ..., LogSoftmax)``, ``opt_init, opt_update,
get_params = optimizers.momentum(step_size, mass=0.9)``, a jitted ``update(i, opt_state,
batch)``).
"""
import jax
import jax.numpy as jnp
from jax.example_libraries import optimizers, stax
from jax.example_libraries.stax import Dense, LogSoftmax, Relu

from . import Case

init_random_params, predict = stax.serial(Dense(64), Relu, Dense(64), Relu, Dense(10), LogSoftmax)
opt_init, opt_update, get_params = optimizers.momentum(0.001, mass=0.9)


def loss(params, batch):
    inputs, targets = batch
    preds = predict(params, inputs)
    return -jnp.mean(jnp.sum(preds * targets, axis=1))


@jax.jit
def update(i, opt_state, batch):
    params = get_params(opt_state)
    return opt_update(i, jax.grad(loss)(params, batch), opt_state)


def program() -> Case:
    _, params = init_random_params(jax.random.PRNGKey(0), (-1, 28 * 28))
    opt_state = opt_init(params)
    batch = (jnp.ones((8, 28 * 28)), jax.nn.one_hot(jnp.arange(8) % 10, 10))
    n = len(jax.tree_util.tree_leaves(opt_state))
    return Case(update, (0, opt_state, batch), outputs=n, calls=("stax.serial", "stax.Dense"))
