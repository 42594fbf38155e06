"""Pallas: a blocked matrix multiplication kernel over a 2-D grid, in interpret mode (runs
on CPU), its result fed to an activation.

Imitates the Pallas quickstart, https://docs.jax.dev/en/latest/pallas/quickstart.html
(``def matmul_kernel(x_ref, y_ref, z_ref): z_ref[...] = x_ref[...] @ y_ref[...]``,
``pl.pallas_call(..., grid=(2, 2), in_specs=[pl.BlockSpec(...)], out_specs=...)``).
"""

import jax
from jax.experimental import pallas as pl

from . import Case


def matmul_kernel(x_ref, y_ref, z_ref, *, activation):
    z_ref[...] = activation(x_ref[...] @ y_ref[...])


def matmul(x, y, *, activation):
    return pl.pallas_call(
        lambda x_ref, y_ref, z_ref: matmul_kernel(x_ref, y_ref, z_ref, activation=activation),
        out_shape=jax.ShapeDtypeStruct((x.shape[0], y.shape[1]), x.dtype),
        grid=(2, 2),
        in_specs=[pl.BlockSpec((x.shape[0] // 2, x.shape[1]), lambda i, j: (i, 0)),
                  pl.BlockSpec((y.shape[0], y.shape[1] // 2), lambda i, j: (0, j))],
        out_specs=pl.BlockSpec((x.shape[0] // 2, y.shape[1] // 2), lambda i, j: (i, j)),
        interpret=True,
    )(x, y)


@jax.jit
def two_layers(x, w1, w2):
    h = matmul(x, w1, activation=jax.nn.relu)
    return matmul(h, w2, activation=lambda z: z)


def program() -> Case:
    k1, k2, k3 = jax.random.split(jax.random.PRNGKey(0), 3)
    x = jax.random.normal(k1, (16, 32))
    w1 = jax.random.normal(k2, (32, 32))
    w2 = jax.random.normal(k3, (32, 16))
    return Case(two_layers, (x, w1, w2), outputs=1, calls=("matmul",))
