"""Loud checks of every private JAX API jaxviz uses (all of them live in
``jaxviz/_jax_internals.py``). If one of these fails after a JAX upgrade, fix that module:
the failure message says what changed."""

import jax
import jax.numpy as jnp

from jaxviz import _jax_internals as internals


def _first_eqn(fn, *args):
    return jax.make_jaxpr(fn)(*args).jaxpr.eqns[0]


def test_user_frames_point_at_this_file():
    def f(x):
        return jnp.sin(x)

    frames = internals.user_frames(_first_eqn(f, 1.0))
    assert frames, "JAX changed source_info_util.user_frames / eqn.source_info.traceback"
    assert frames[0].file == __file__ and frames[0].function.split(".")[-1] == "f", frames[0]
    assert frames[0].line > 0


def test_name_stack_records_scopes_and_transforms():
    def f(x):
        with jax.named_scope("outer"):
            return jnp.sin(x) * 2

    eqn = jax.make_jaxpr(jax.grad(f))(1.0).jaxpr.eqns[0]
    stack = internals.name_stack(eqn)
    assert internals.ScopeElement("transform", "jvp") in stack, \
        f"JAX changed NameStack (expected a jvp Transform element): {stack}"
    assert internals.ScopeElement("scope", "outer") in stack, stack


def test_jit_static_args_are_readable():
    f = jax.jit(lambda x, n, *, k=1: x * n * k, static_argnums=1, static_argnames="k")
    assert internals.jit_static_args(f) == ((1,), ("k",)), \
        "JAX changed the PjitFunction._jit_info static_argnums/static_argnames attributes"
    assert internals.jit_static_args(lambda x: x) is None


def test_register_library_path_hides_frames(tmp_path):
    from jax._src import source_info_util

    path = str(tmp_path) + "/"
    internals.register_library_path(path)
    assert not source_info_util.is_user_filename(path + "lib.py")
