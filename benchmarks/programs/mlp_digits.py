"""Plain JAX: an MLP classifier trained on scikit-learn's handwritten digits (bundled
with scikit-learn, no download), parameters as a list of (w, b) tuples, SGD by
``tree_map``.

Imitates JAX's "Training a simple neural network", https://docs.jax.dev/en/latest/notebooks/Neural_Network_and_Data_Loading.html
(``init_network_params``, ``predict`` with ``relu`` and ``logsumexp``, ``loss``, ``update``).
"""

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import logsumexp
from sklearn.datasets import load_digits

from . import Case

LAYER_SIZES = [64, 32, 32, 10]
STEP_SIZE = 0.05


def random_layer_params(m, n, key, scale=1e-1):
    w_key, b_key = jax.random.split(key)
    return scale * jax.random.normal(w_key, (n, m)), scale * jax.random.normal(b_key, (n,))


def init_network_params(sizes, key):
    keys = jax.random.split(key, len(sizes))
    return [random_layer_params(m, n, k) for m, n, k in zip(sizes[:-1], sizes[1:], keys)]


def relu(x):
    return jnp.maximum(0, x)


def predict(params, image):
    activations = image
    for w, b in params[:-1]:
        outputs = jnp.dot(w, activations) + b
        activations = relu(outputs)
    final_w, final_b = params[-1]
    logits = jnp.dot(final_w, activations) + final_b
    return logits - logsumexp(logits)


batched_predict = jax.vmap(predict, in_axes=(None, 0))


def loss(params, images, targets):
    preds = batched_predict(params, images)
    return -jnp.mean(preds * targets)


@jax.jit
def update(params, x, y):
    grads = jax.grad(loss)(params, x, y)
    return [(w - STEP_SIZE * dw, b - STEP_SIZE * db) for (w, b), (dw, db) in zip(params, grads)]


def program() -> Case:
    digits = load_digits()
    images = (digits.data[:64] / 16.0).astype(np.float32)
    labels = np.eye(10, dtype=np.float32)[digits.target[:64]]
    params = init_network_params(LAYER_SIZES, jax.random.PRNGKey(0))
    return Case(update, (params, images, labels), outputs=2 * (len(LAYER_SIZES) - 1))
