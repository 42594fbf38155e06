"""Static arguments: values compared with ``==`` and ``hash``, or by identity."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from .record import history


# https://github.com/tenstorrent/tt-xla/issues/364 (a static ``train`` flag switched)
@history("static mode flag", "forward", "static_value", "training",
         url="https://github.com/tenstorrent/tt-xla/issues/364", says=("True", "False"))
def mode_flag() -> None:
    @functools.partial(jax.jit, static_argnames="training")
    def forward(x, training):
        return x * 0.5 if training else x

    forward(jnp.ones(3), training=True)
    forward(jnp.ones(3), training=False)


# https://github.com/jax-ml/jax/issues/5033 (objects hashed by their identity)
@history("config hashed by identity", "forward", "static_value", "cfg",
         url="https://github.com/jax-ml/jax/issues/5033", says=("identity",))
def config_hashed_by_identity() -> None:
    class Config:
        def __init__(self, depth):
            self.depth = depth

        def __eq__(self, other):
            return isinstance(other, Config) and other.depth == self.depth

        __hash__ = object.__hash__

    @functools.partial(jax.jit, static_argnames="cfg")
    def forward(x, cfg):
        return x * cfg.depth

    # All alive: a freed one's address (its hash) may be reused. Three: an equal config
    # under another hash still finds the cache now and then (2 calls of 60 measured here),
    # and a history must miss at least twice.
    configs = [Config(2), Config(2), Config(2)]
    for cfg in configs:
        forward(jnp.ones(3), cfg=cfg)


# https://github.com/jax-ml/jax/issues/4712 (equal but not identical static arguments)
@history("static callable with __hash__, no __eq__", "apply", "static_value", "activation",
         url="https://github.com/jax-ml/jax/issues/4712", says=("identity",))
def callable_hash_without_eq() -> None:
    class Swish:
        """A callable that hashes by its parameter but keeps object's identity ``==``."""

        def __init__(self, beta):
            self.beta = beta

        def __call__(self, x):
            return x * jax.nn.sigmoid(self.beta * x)

        def __hash__(self):
            return hash(("Swish", self.beta))

    @functools.partial(jax.jit, static_argnums=1)
    def apply(x, activation):
        return activation(x)

    for _ in range(2):
        apply(jnp.ones(3), Swish(1.0))


# https://github.com/cgiovanetti/LINX/issues/13 (a static int changes: "now 3 and before 4")
@history("static integer order", "polylog", "static_value", "order",
         url="https://github.com/cgiovanetti/LINX/issues/13", says=("4", "3"))
def static_order() -> None:
    @functools.partial(jax.jit, static_argnums=1)
    def polylog(z, order):
        k = jnp.arange(1, 20, dtype=jnp.float32)
        return jnp.sum(z ** k / k ** order)

    polylog(jnp.float32(0.5), 4)
    polylog(jnp.float32(0.5), 3)


# https://github.com/jax-ml/jax/issues/523 ("Calling a jit'd function with or without kwarg
# name has different behavior": ``jit_foo(x, foo_power=11)`` then ``jit_foo(x, 11)``)
@history("static argname by keyword, then positionally", "foo", "arg_count", "foo_power",
         url="https://github.com/jax-ml/jax/issues/523")
def static_keyword_then_positional() -> None:
    @functools.partial(jax.jit, static_argnames="foo_power")
    def foo(x, foo_power=10):
        return x ** foo_power

    x = jnp.ones(3)
    foo(x, foo_power=11)
    foo(x, 11)


# https://github.com/jax-ml/jax/issues/1131 (``jit(g, static_argnums=(1,))`` with the scan
# length ``steps`` doubled each round)
@history("scan length as static_argnums", "g", "static_value", "steps",
         url="https://github.com/jax-ml/jax/issues/1131", says=("2", "4"))
def scan_length_static() -> None:
    def f(x, s):
        return x + 1.0, s

    def g(x, steps):
        xs = jax.lax.iota(jnp.int32, steps)
        return jax.lax.scan(f, x, xs)[0]

    q = jax.jit(g, static_argnums=(1,))
    for steps in (2, 4):
        q(jnp.array(2.0), steps)
