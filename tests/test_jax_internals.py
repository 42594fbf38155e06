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


# ---------------------------------------------------------------------- recompiles
def _calls_seen_by_monitoring(run):
    """Run ``run()`` with jax.monitoring listeners that call current_jit_call() at the
    start of every trace/lower/compile; return [(stage, fun_name, JitCall | None)]."""
    stages = {internals.TRACE_EVENT: "trace", internals.LOWER_EVENT: "lower",
              internals.COMPILE_EVENT: "compile"}
    seen = []

    def on_scalar(event, value, **kwargs):
        if event in stages:
            seen.append((stages[event], kwargs.get("fun_name"), internals.current_jit_call()))

    jax.monitoring.register_scalar_listener(on_scalar)
    try:
        run()
    finally:
        jax.monitoring.unregister_scalar_listener(on_scalar)
    return seen


def test_monitoring_event_names_and_fun_names():
    assert internals.TRACE_EVENT == "/jax/core/compile/jaxpr_trace_duration"
    assert internals.LOWER_EVENT == "/jax/core/compile/jaxpr_to_mlir_module_duration"
    assert internals.COMPILE_EVENT == "/jax/core/compile/backend_compile_duration"

    def add_one_internals(x):
        return x + 1

    x = jnp.ones(5)  # made before: its own eager compile is not part of what we check
    seen = _calls_seen_by_monitoring(lambda: jax.jit(add_one_internals)(x))
    mine = [(s, n) for s, n, _ in seen if "add_one_internals" in str(n)]
    assert mine == [("trace", "add_one_internals"), ("lower", "jit(add_one_internals)"),
                    ("compile", "jit(add_one_internals)")], \
        f"JAX changed the jax.monitoring stage events or their fun_name kwargs: {seen}"


def test_current_jit_call_reads_the_call_being_compiled():
    def step_internals(x, n, *, scale):
        return x * n * scale

    jitted = jax.jit(step_internals, static_argnums=1)
    x = jnp.ones(3)
    seen = _calls_seen_by_monitoring(lambda: jitted(x, 4, scale=2.0))
    mine = [(s, c) for s, n, c in seen if "step_internals" in str(n)]
    assert [s for s, _ in mine] == ["trace", "lower", "compile"], seen
    for stage, call in mine:
        assert call is not None, (
            f"current_jit_call() found no jit call at the {stage} stage: JAX changed "
            "jax._src.pjit._infer_params / _run_python_pjit (their names or locals "
            "fun, ji/jit_info, args, kwargs)")
        assert call.fun is step_internals, call.fun
        assert call.args[0] is x and call.args[1] == 4 and call.kwargs == {"scale": 2.0}
        assert call.static_argnums == (1,) and call.static_argnames == ("n",), call
        assert list(call.signature.parameters) == ["x", "n", "scale"]
        assert call.aot is False
        assert call.caller is not None and call.caller.f_code.co_filename == __file__, \
            "the frame above the jitted call should be this test's"


def test_current_jit_call_sees_ahead_of_time_tracing():
    def aot_internals(x):
        return x * 2

    x = jnp.ones(2)
    seen = _calls_seen_by_monitoring(lambda: jax.jit(aot_internals).trace(x))
    (call,) = [c for s, n, c in seen if n == "aot_internals"]
    assert call is not None and call.fun is aot_internals and call.aot is True, call


def test_current_jit_call_outside_jax_is_none():
    assert internals.current_jit_call() is None
    assert internals.is_jax_file(jax.numpy.__file__)
    assert not internals.is_jax_file(__file__)


def test_monitoring_listener_counts():
    before = internals.monitoring_listener_counts()
    assert set(before) == {"event", "duration", "scalar"}

    def cb(*a, **k):
        pass

    jax.monitoring.register_scalar_listener(cb)
    try:
        assert internals.monitoring_listener_counts()["scalar"] == before["scalar"] + 1
    finally:
        jax.monitoring.unregister_scalar_listener(cb)
    assert internals.monitoring_listener_counts() == before
