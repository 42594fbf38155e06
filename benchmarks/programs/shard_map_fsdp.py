"""``jax.shard_map``: a fully-sharded data-parallel (FSDP) train step on 8 devices, each
layer's weights all-gathered before use and the gradients reduce-scattered by the
all-gather's transpose, the loss averaged with ``psum``.

Imitates JAX's shard_map tutorial, "FSDP", https://docs.jax.dev/en/latest/notebooks/shard_map.html#fsdp
(``loss_fsdp(params, batch)`` gathering each ``W, b`` with ``all_gather(..., tiled=True)``,
``psum`` of the loss), and its "Tensor parallelism" section.
"""

from functools import partial

import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from . import Case

DEVICES = 8
LAYERS, WIDTH, BATCH = 3, 16, 32


def gather(x):
    return jax.lax.all_gather(x, "batch", tiled=True)


def dense_layer(W, b, inputs):
    W, b = gather(W), gather(b)
    return jax.nn.relu(jnp.dot(inputs, W) + b)


def make_step(mesh):
    @partial(jax.shard_map, mesh=mesh, in_specs=(P("batch"), P("batch")), out_specs=P())
    def loss_fsdp(params, batch):
        inputs, targets = batch
        for W, b in params:
            inputs = dense_layer(W, b, inputs)
        local_loss = jnp.sum((inputs - targets) ** 2)
        return jax.lax.psum(local_loss, "batch") / BATCH

    @jax.jit
    def train_step(params, batch):
        loss, grads = jax.value_and_grad(loss_fsdp)(params, batch)
        params = jax.tree_util.tree_map(lambda p, g: p - 0.01 * g, params, grads)
        return params, loss

    return train_step


def program() -> Case:
    mesh = jax.make_mesh((DEVICES,), ("batch",))
    sharded = NamedSharding(mesh, P("batch"))
    keys = jax.random.split(jax.random.PRNGKey(0), LAYERS)
    params = [(jax.device_put(jax.random.normal(k, (WIDTH, WIDTH)) / 4, sharded),
               jax.device_put(jnp.zeros(WIDTH), sharded)) for k in keys]
    batch = (jax.device_put(jnp.ones((BATCH, WIDTH)), sharded), jax.device_put(jnp.zeros((BATCH, WIDTH)), sharded))
    return Case(make_step(mesh), (params, batch), outputs=2 * LAYERS + 1, calls=("loss_fsdp",),
                folds=(("dense_layer", LAYERS),))
