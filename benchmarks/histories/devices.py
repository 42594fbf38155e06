"""Placement: commitment, another device, a resharded input, a mesh over other devices,
and the trace context (config) a compile depends on."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from .record import history


# https://github.com/jax-ml/jax/issues/15924 (device_put(x, sharding) commits: train_step compiles again)
@history("jnp array, then device_put with a sharding", "test", "commitment", "x",
         url="https://github.com/jax-ml/jax/issues/15924")
def committed_by_device_put() -> None:
    @jax.jit
    def test(x):
        return x

    x_jax = jnp.zeros((1,))
    x_np = np.zeros((1,), np.float32)
    test(x_jax)
    test(x_np)
    test(jax.device_put(x_np))
    test(jax.device_put(x_np, x_jax.sharding))


# https://github.com/jax-ml/jax/pull/2913 (device_put with a device commits the data)
@history("numpy input, then device_put", "predict", "commitment", "x",
         url="https://github.com/jax-ml/jax/pull/2913")
def numpy_then_committed() -> None:
    @jax.jit
    def predict(x):
        return x.sum()

    predict(np.ones(3, np.float32))
    predict(jax.device_put(np.ones(3, np.float32), jax.devices()[0]))


# https://github.com/data-apis/array-api/issues/835 (committed to another device)
@history("moved to another device", "predict", "device", "x",
         url="https://github.com/data-apis/array-api/issues/835", devices=2)
def moved_to_other_device() -> None:
    @jax.jit
    def predict(x):
        return x.sum()

    d0, d1 = jax.devices()[:2]
    predict(jax.device_put(jnp.ones(3), d0))
    predict(jax.device_put(jnp.ones(3), d1))


# https://github.com/jax-ml/jax/issues/31250 (retraced for the resharded output of a constraint)
@history("resharded input", "add_one", "sharding", "x",
         url="https://github.com/jax-ml/jax/issues/31250", devices=2)
def resharded_input() -> None:
    mesh = Mesh(np.array(jax.devices()[:2]), ("device",))

    @jax.jit
    def add_one(x):
        x = jax.lax.with_sharding_constraint(x, NamedSharding(mesh, P()))
        return x + 1

    x1 = jnp.zeros(4, jnp.int32)
    x2 = add_one(x1)
    add_one(x2)


# https://github.com/jax-ml/jax/issues/19638 (meshes of the same shape and axis names,
# over other devices)
@history("mesh over other devices", "shard_rows", "static_value", "mesh",
         url="https://github.com/jax-ml/jax/issues/19638", says=("(0, 1)", "(2, 3)"), devices=4)
def mesh_over_other_devices() -> None:
    devices = jax.devices()
    mesh_1 = Mesh(np.array(devices[0:2]), ("x",))
    mesh_2 = Mesh(np.array(devices[2:4]), ("x",))

    @functools.partial(jax.jit, static_argnames="mesh")
    def shard_rows(x, mesh):
        return jax.lax.with_sharding_constraint(x * 2, NamedSharding(mesh, P("x")))

    shard_rows(jnp.ones((4, 2)), mesh=mesh_1)
    shard_rows(jnp.ones((4, 2)), mesh=mesh_2)


# https://github.com/jax-ml/jax/issues/4260 (the default matmul precision, set by a context)
@history("matmul precision context", "project", "context", "jax_default_matmul_precision",
         url="https://github.com/jax-ml/jax/issues/4260", says=("highest",))
def matmul_precision_context() -> None:
    @jax.jit
    def project(a, b):
        return a @ b

    project(jnp.ones((2, 2)), jnp.ones((2, 2)))
    with jax.default_matmul_precision("highest"):
        project(jnp.ones((2, 2)), jnp.ones((2, 2)))


# https://github.com/uwplasma/vmex/pull/325 (the same committed call compiled once per
# ``jax.default_device`` context)
@history("default_device context around a committed call", "block_lane", "context",
         "jax_default_device", url="https://github.com/uwplasma/vmex/pull/325",
         says=("None",), devices=2)
def default_device_context() -> None:
    @jax.jit
    def block_lane(carry):
        return carry * 0.5 + 1.0

    carry = jax.device_put(jnp.ones(4), jax.devices()[0])
    block_lane(carry)  # the construction solve: no default device
    with jax.default_device(jax.devices()[1]):  # a trial solve inside a device context
        block_lane(carry)


# https://github.com/jax-ml/jax/pull/5488 (the x64 context manager: ``j_svd`` compiled outside,
# called again inside ``enable_x64()``); here the input is the same f32 array both times
@history("jax.enable_x64 context around a compiled call", "project", "context",
         "jax_enable_x64", url="https://github.com/jax-ml/jax/pull/5488",
         says=("False", "True"))
def enable_x64_context() -> None:
    @jax.jit
    def project(a):
        return a * 2

    a = jnp.ones(3)
    project(a)
    with jax.enable_x64(True):
        project(a)


# https://github.com/marin-community/marin/pull/8911 (the step counter made outside the mesh
# while train_step returns it replicated on the mesh: the second step compiles again)
@history("step counter off the mesh, then replicated on it", "train_step", "sharding",
         "state['step']", url="https://github.com/marin-community/marin/pull/8911", devices=8)
def step_counter_sharding() -> None:
    mesh = Mesh(np.array(jax.devices()[:8]), ("data",))
    rows, replicated = NamedSharding(mesh, P("data")), NamedSharding(mesh, P())

    def init_state():
        return {"params": jax.device_put(jnp.ones((8, 4)), rows),
                "step": jnp.zeros((), jnp.int32)}  # made on the default device

    @functools.partial(jax.jit, out_shardings={"params": rows, "step": replicated})
    def train_step(state, batch):
        grad = jnp.mean(batch) * state["params"]
        return {"params": state["params"] - 0.1 * grad, "step": state["step"] + 1}

    state = init_state()
    for _ in range(2):
        state = train_step(state, jnp.ones(8))
