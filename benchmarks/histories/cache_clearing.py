"""Compiles with nothing changed: the cache was cleared."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from .record import history


# https://github.com/jax-ml/jax/issues/10828 (clear every compilation cache between tasks)
@history("jax.clear_caches() between tasks", "evaluate", "cache_cleared", "jax.clear_caches()",
         url="https://github.com/jax-ml/jax/issues/10828")
def clear_all_caches() -> None:
    @jax.jit
    def evaluate(x):
        return jnp.mean(x @ x.T)

    evaluate(jnp.ones((3, 3)))
    jax.clear_caches()
    evaluate(jnp.ones((3, 3)))


# https://github.com/jax-ml/jax/issues/10878 (``f._clear_cache()`` of one jitted function)
@history("one function's cache cleared", "sample", "cache_cleared", "sample.clear_cache()",
         url="https://github.com/jax-ml/jax/issues/10878")
def clear_one_cache() -> None:
    @jax.jit
    def sample(key):
        return jax.random.normal(key, (3,))

    key = jax.random.key(0)
    sample(key)
    sample.clear_cache()  # pyright: ignore[reportAttributeAccessIssue]  (a method of PjitFunction)
    sample(key)
