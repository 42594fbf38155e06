"""Loud checks of every private JAX API jaxviz uses (all of them live in
``jaxviz/_jax_internals.py``). If one of these fails after a JAX upgrade, fix that module:
the failure message says what changed."""

import gc
import json
import subprocess
import sys
import textwrap
import threading
from typing import Any, cast

import jax
import jax.extend.core
import jax.numpy as jnp
import pytest

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


def test_innermost_frame_uses_raw_frames():
    def f(x):
        return jnp.cos(x)

    eqn = _first_eqn(f, 1.0)
    frame = internals.innermost_frame(eqn, lambda code: code.co_filename == __file__)
    assert frame is not None, "JAX changed Traceback.raw_frames / source_info_util.raw_frame_to_frame"
    assert frame.function.endswith("f") and frame.line == f.__code__.co_firstlineno + 1
    assert internals.innermost_frame(eqn, lambda code: False) is None
    code, offset = next((c, o) for c, o in internals.code_stack(eqn) if c is f.__code__)
    assert internals.frame_at(code, offset) == frame, "frame_at reads a code_stack entry as innermost_frame does"


def test_traceback_code_stacks_merge_equal_tracebacks_and_reach_the_traced_function():
    def layer(x):
        return jnp.sin(x) * 2

    def f(x):
        for _ in range(6):
            x = layer(x)
        return jax.lax.scan(lambda c, _: (jnp.cos(c), None), x, None, length=3)[0]

    closed = jax.make_jaxpr(f)(1.0)
    stacks = internals.traceback_code_stacks(closed)
    assert stacks and all(isinstance(c, type(f.__code__)) for s in stacks for c in s), \
        "JAX changed Traceback.raw_frames (expected code objects)"
    in_layer = [s for s in stacks if layer.__code__ in s]
    # 12 equations from 6 calls made on the same lines: Traceback compares by content.
    assert len(in_layer) == 2, f"JAX changed Traceback hashing/equality: {len(in_layer)} stacks"
    assert all(s.index(layer.__code__) < s.index(f.__code__) for s in in_layer), "innermost first"
    body = [s for s in stacks if any(c.co_name == "<lambda>" for c in s)]
    assert body, "sub-jaxpr equations missing (jax.extend.core.jaxprs_in_params)"
    # jaxlib cuts each stack at the function being traced: this test's own frame, which
    # called make_jaxpr, is not in it (jaxviz.call_scopes relies on that to tell its trace apart).
    here = sys._getframe().f_code
    assert not any(here in s for s in stacks), "jaxlib's Traceback now reaches past the traced function"
    codes = internals.traceback_frame_codes(closed)
    assert len({id(c) for c in codes}) == len(codes), "each code object once"
    assert {id(c) for s in stacks for c in s} <= {id(c) for c in codes}, "every frame of every stack"


def test_drop_var_and_jaxprs_in_params_are_jaxs_own():
    """Public in jax.extend.core from JAX 0.10, taken from jax._src.core before."""
    from jax._src import core

    assert internals.DropVar is core.DropVar, "JAX moved DropVar"
    assert issubclass(internals.DropVar, jax.extend.core.Var)
    closed = jax.make_jaxpr(lambda x: jax.lax.scan(lambda c, _: (c + 1, c), x, None, length=2)[0])(1.0)
    (scan,) = closed.jaxpr.eqns
    (body,) = internals.jaxprs_in_params(scan.params)
    assert [e.primitive.name for e in body.eqns] == ["add"], \
        "JAX changed jaxprs_in_params (the scan body should be found)"


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
        internals.unregister_scalar_listener(on_scalar)
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
    jax.monitoring.register_event_duration_secs_listener(cb)
    try:
        after = internals.monitoring_listener_counts()
        assert (after["scalar"], after["duration"]) == (before["scalar"] + 1, before["duration"] + 1)
    finally:
        # public in jax.monitoring from JAX 0.8, private before
        internals.unregister_scalar_listener(cb)
        internals.unregister_event_duration_listener(cb)
    assert internals.monitoring_listener_counts() == before, \
        "jaxviz._jax_internals.unregister_*_listener no longer removes the listener"


# ---------------------------------------------------------------------- tracer errors
# jaxviz.errors relies on these to find the tracer JAX refused and walk its provenance.
def _raised(fn, *args):
    try:
        fn(*args)
    except Exception as exc:  # noqa: BLE001 - we want whatever JAX raised
        return exc
    raise AssertionError("expected an error")


def _refused(exc):
    """The tracer the capture recorded on ``exc``."""
    cap = internals.captured_tracer_error(exc)
    assert cap is not None, f"the capture recorded nothing on {type(exc).__name__}"
    return cap.tracer


def _walk(origin):
    """The operand tracers one provenance step leads to."""
    assert origin.operands is not None, origin
    return [op for op in origin.operands if op is not None]


def test_tracer_errors_record_the_refused_tracer(capture):
    import numpy as np

    leaked = []

    @jax.jit
    def leak(x):
        leaked.append(x * 2)
        return x

    leak(jnp.ones(2))
    cases = {
        "TracerBoolConversionError": (jax.jit(lambda x: 1 if x > 0 else 0), (1.0,), "bool[]"),
        "ConcretizationTypeError": (jax.jit(lambda n: jnp.arange(n)), (3,), "int32[]"),
        "TracerIntegerConversionError": (jax.jit(lambda n: list(range(n))), (3,), "int32[]"),
        "NonConcreteBooleanIndexError": (jax.jit(lambda x: x[x > 0]), (jnp.ones(3),), "bool[3]"),
        "TracerArrayConversionError": (jax.jit(lambda x: np.asarray(x)), (jnp.ones(3),), "float32[3]"),
        "UnexpectedTracerError": (lambda: leaked[0] + 1, (), "float32[2]"),
        "TypeError": (jax.jit(lambda x: x.reshape(jnp.array(x.shape).prod())), (jnp.ones((2, 2)),),
                      "int32[]"),
    }
    for kind, (fn, args, aval) in cases.items():
        exc = _raised(fn, *args)
        assert type(exc).__name__ == kind, (kind, exc)
        cap = internals.captured_tracer_error(exc)
        assert cap is not None and internals.is_tracer(cap.tracer), (
            f"JAX changed how {kind} is built: jaxviz._jax_internals.install_tracer_error_capture "
            "no longer records the refused tracer")
        assert cap.tracer.aval.str_short().lstrip("~") == aval, (kind, cap.tracer.aval)
        assert cap.frame is not None and cap.frame.f_code.co_filename


def test_tracer_origin_walks_back_to_the_inputs(capture):
    def f(x, neg):
        y = jnp.sin(x)
        if (y * neg).sum() > 0:
            return y
        return x

    exc = _raised(jax.jit(f), jnp.ones(3), jnp.ones(3))
    t = internals.staged_tracer(_refused(exc))
    assert t is not None, "JAX changed DynamicJaxprTracer"
    fn = internals.tracer_function(t)
    assert fn is not None, "JAX changed DynamicJaxprTracer._debug_info"
    assert (fn.name, fn.traced_for, fn.arg_names) == ("f", "jit", ("x", "neg")), \
        f"JAX changed DynamicJaxprTracer._debug_info (DebugInfo): {fn}"
    prims, inputs, stack = [], set(), [t]
    while stack:
        origin = internals.tracer_origin(stack.pop())
        if origin.kind == "eqn":
            prims.append(origin.eqn.primitive.name)
            assert origin.eqn_id is not None
            stack.extend(_walk(origin))
        elif origin.kind == "input":
            inputs.add(origin.position)
    assert prims[:3] == ["gt", "reduce_sum", "mul"] and "sin" in prims, \
        f"JAX changed DynamicJaxprTracer.parent / TracingEqn.in_tracers: {prims}"
    assert inputs == {0, 1}, "JAX changed JaxprStackFrame.invars"
    frames = internals.user_frames(origin.eqn if origin.kind == "eqn" else
                                   internals.tracer_origin(t).eqn)
    assert frames and frames[0].file == __file__


def test_tracer_origin_walks_through_inlined_jnp_helpers(capture):
    """``x @ w`` and ``mean`` are jitted helpers that JAX 0.6 inlines into the trace, their
    variables without tracers: the walk still reaches every input."""
    def f(x, w, threshold):
        loss = jnp.tanh(x @ w).mean()
        return x if loss > threshold else -x

    exc = _raised(jax.jit(f), jnp.ones((2, 3)), jnp.ones((3, 3)), 0.5)
    prims, inputs, stack = set(), set(), [internals.staged_tracer(_refused(exc))]
    while stack:
        origin = internals.tracer_origin(stack.pop())
        if origin.kind == "eqn":
            prims.add(origin.eqn.primitive.name)
            stack.extend(_walk(origin))
        elif origin.kind == "input":
            inputs.add(origin.position)
    assert {"dot_general", "tanh", "reduce_sum"} <= prims, prims
    assert inputs == {0, 1, 2}, f"the walk stopped before the inputs: {inputs}, {prims}"


def test_staged_tracer_unwraps_vmap_and_leaks_keep_their_origin(capture):
    exc = _raised(jax.jit(jax.vmap(lambda x: 1 if x.sum() > 0 else 0)), jnp.ones((2, 3)))
    tracer = _refused(exc)
    assert type(tracer).__name__ == "BatchTracer"
    assert internals.staged_tracer(tracer) is not None, "JAX changed BatchTracer.val"
    exc = _raised(jax.vmap(lambda x: 1 if x.sum() > 0 else 0), jnp.ones((2, 3)))
    assert internals.staged_tracer(_refused(exc)) is None

    kept = []

    @jax.jit
    def leak(x):
        kept.append(jnp.cos(x))
        return x

    leak(1.0)
    frames = internals.tracer_created_at(kept[0])
    assert frames and frames[0].file == __file__, "JAX changed Tracer._line_info"
    # JAX 0.6 forgets, when its trace ends, which equation wrote a tracer no output uses.
    expected = "eqn" if internals.TRACERS_HOLD_THEIR_EQUATION else "unknown"
    assert internals.tracer_origin(kept[0]).kind == expected, \
        "JAX changed DynamicJaxprTracer.parent (JAX >= 0.7) or JaxprStackFrame.eqns (0.6)"


def _capture_targets():
    """What the capture replaces, as they are now (JAX's own while it is not installed)."""
    from jax._src import core

    found: dict[object, Any] = {cls: cls.__dict__["__init__"] for cls in internals._tracer_error_classes()}
    found["escaped_tracer_error"] = core.escaped_tracer_error
    found["_invalid_shape_error"] = core._invalid_shape_error
    return found


def test_uninstall_tracer_error_capture_restores_jax_exactly(capture):
    bool_error = jax.jit(lambda x: 1 if x > 0 else 0)
    internals.uninstall_tracer_error_capture()
    assert not internals.tracer_error_capture_installed()
    originals = _capture_targets()
    assert not any(hasattr(f, "__wrapped__") for f in originals.values()), \
        "the capture was not removed: jaxviz._jax_internals.uninstall_tracer_error_capture"
    assert internals.captured_tracer_error(_raised(bool_error, 1.0)) is None

    internals.install_tracer_error_capture()
    internals.install_tracer_error_capture()  # idempotent: wraps once
    wrapped = _capture_targets()
    assert all(wrapped[k] is not f and wrapped[k].__wrapped__ is f for k, f in originals.items()), \
        "JAX changed where its tracer errors are built: install_tracer_error_capture"
    assert internals.captured_tracer_error(_raised(bool_error, 1.0)) is not None

    internals.uninstall_tracer_error_capture()
    internals.uninstall_tracer_error_capture()  # a no-op when not installed
    assert all(_capture_targets()[k] is f for k, f in originals.items()), \
        "uninstall_tracer_error_capture did not put JAX's own objects back"
    assert internals.captured_tracer_error(_raised(bool_error, 1.0)) is None


def test_tracer_identity_and_trace_helpers():
    """``tracer_key`` (a staged tracer's jaxpr variable), ``tracer_trace_id`` (its traced
    function) and ``same_trace`` (any tracers, vmap's included) are read while tracing."""
    seen = {}

    def inner(y):
        seen["inner"] = y
        return y + 1

    def f(x):
        s = jnp.sin(x)
        out = jax.jit(inner)(s)
        seen["trace_ids"] = (internals.tracer_trace_id(x), internals.tracer_trace_id(s),
                             internals.tracer_trace_id(seen["inner"]))
        seen["same"] = (internals.same_trace(x, s), internals.same_trace(x, seen["inner"]),
                        internals.same_trace(x, 1.0))
        seen["keys"] = (internals.tracer_key(x), internals.tracer_key(s))
        seen["origin"] = internals.tracer_origin(s)
        seen["x"] = x
        return out

    jax.jit(f).trace(jnp.ones(3))
    outer, outer_again, inner_id = seen["trace_ids"]
    assert outer == outer_again and outer != inner_id, \
        "JAX changed DynamicJaxprTracer._trace.frame (tracer_trace_id)"
    assert seen["same"] == (True, False, False), "JAX changed Tracer._trace (same_trace)"
    kx, ks = seen["keys"]
    assert kx is not ks and len({kx, ks}) == 2, "JAX changed DynamicJaxprTracer.val (tracer_key)"
    origin = seen["origin"]
    assert any(v is ks for v in origin.eqn.outvars) and origin.operands[0] is seen["x"], \
        "tracer_key no longer names the variable the producing equation writes"

    def batched(a, b):
        def nested(c):
            seen["nested"] = (internals.same_trace(a, c), internals.same_trace(c, c * 2))
            return c

        seen["vmap"] = internals.same_trace(a, b)
        jax.vmap(nested)(b[None])
        return a + b

    jax.vmap(batched)(jnp.ones(2), jnp.ones(2))
    assert seen["vmap"] is True and seen["nested"] == (False, True), \
        "JAX changed BatchTracer._trace (same_trace)"


def test_current_jit_call_at_the_end_of_a_trace_even_when_it_raises():
    """jaxviz.recompiles reads the call when JAX's trace timer stops (the duration
    listener), so that its own work is not counted as tracing; also for failing traces."""
    import sys

    seen = []

    def on_duration(event, duration_secs, **kwargs):
        if event == internals.TRACE_EVENT and kwargs.get("fun_name") == "ends_internals":
            seen.append((internals.current_jit_call(), sys.exc_info()[0]))

    def ends_internals(x, fail):
        if fail:
            raise KeyError("no")
        return x

    f = jax.jit(ends_internals, static_argnums=1)
    x = jnp.ones(2)
    jax.monitoring.register_event_duration_secs_listener(on_duration)
    try:
        f(x, False)
        try:
            f(x, True)
        except KeyError:
            pass
    finally:
        internals.unregister_event_duration_listener(on_duration)
    assert [(c.fun, c.args[1], exc) for c, exc in seen] == [
        (ends_internals, False, None), (ends_internals, True, KeyError)], \
        "JAX changed when the trace duration is recorded (inside the tracing frames, " \
        f"with the exception being handled): {seen}"


def test_backends_initialized_is_readable():
    jax.devices()  # this process has started its backends by now
    assert internals.backends_initialized() is True, \
        "JAX removed jax._src.xla_bridge.backends_are_initialized"


def test_current_jit_call_reads_the_donated_arguments():
    """jaxviz.recompiles tells a function jitted with and without donation apart."""
    def fresh():  # a new function object each time: JAX 0.6 caches traces per function
        def donates_internals(x, y):
            return x + y, y

        return donates_internals

    x, y = jnp.ones(3), jnp.ones(3)
    seen = _calls_seen_by_monitoring(
        lambda: jax.jit(fresh(), donate_argnames="y")(x, y))
    mine = [c for s, n, c in seen if s == "trace" and n == "donates_internals"]
    assert mine and mine[0] is not None
    assert mine[0].donate_argnums == (1,) and mine[0].donate_argnames == ("y",), (
        "JAX changed jit_info.donate_argnums / donate_argnames",
        mine[0].donate_argnums, mine[0].donate_argnames)
    plain = _calls_seen_by_monitoring(lambda: jax.jit(fresh())(x + 1, jnp.ones(3)))
    (call,) = [c for s, n, c in plain if s == "trace" and n == "donates_internals"]
    assert call.donate_argnums == () and call.donate_argnames == ()


@pytest.mark.skipif(jax.__version_info__ < (0, 7), reason="JAX 0.6: pmap is a C++ PmapFunction; jaxviz reads pmap from JAX's own pmap module (0.9 on), checked on 0.10")
def test_pmap_is_recognised_and_its_staged_call_read():
    """``jax.pmap`` (a jit of a shard_map from JAX 0.8) is told from ``jax.jit``, and the
    equation it stages gives its axis and the mapped function's name."""
    def scaled(x):
        return x / jax.lax.psum(x, "i")

    pmapped = jax.pmap(scaled, axis_name="i")
    assert internals.is_pmap(pmapped)
    assert not internals.is_pmap(jax.jit(scaled)) and not internals.is_pmap(scaled)
    closed = jax.make_jaxpr(pmapped)(jnp.ones((1, 3)))
    calls = [internals.pmap_call(e) for e in closed.eqns]
    assert [c for c in calls if c is not None] == [internals.PmapCall("scaled", (("i", 1),))]
    unnamed = jax.make_jaxpr(jax.pmap(lambda x: x * 2))(jnp.ones((1, 3)))
    assert [c.axes for c in map(internals.pmap_call, unnamed.eqns) if c] == [((None, 1),)]
    unmapped = jax.make_jaxpr(jax.jit(lambda x: x / 2))(jnp.ones(3))
    assert internals.pmap_call(unmapped.eqns[0]) is None


def test_mesh_axes_and_function_name_of_a_shard_map():
    mesh = jax.make_mesh((1,), ("data",), axis_types=(jax.sharding.AxisType.Auto,))

    def local_sum(x):
        return jax.lax.psum(x, "data")

    spec = jax.sharding.PartitionSpec("data")

    def shard_map_eqn(fn):
        closed = jax.make_jaxpr(jax.shard_map(fn, mesh=mesh, in_specs=spec, out_specs=spec))(jnp.ones(4))
        (eqn,) = [e for e in closed.eqns if e.primitive.name == "shard_map"]
        return eqn

    eqn = shard_map_eqn(local_sum)
    assert internals.mesh_axes(eqn) == (("data", 1),), "JAX changed shard_map's mesh param"
    assert internals.jaxpr_function_name(eqn.params["jaxpr"]) == "local_sum", \
        "JAX changed Jaxpr.debug_info.func_src_info"
    assert internals.traced_function(eqn.params["jaxpr"]) == ("local_sum", __file__)
    assert internals.mesh_axes(jax.make_jaxpr(jnp.sin)(1.0).eqns[0]) is None
    assert internals.jaxpr_function_name(None) is None and internals.traced_function(None) is None
    unnamed = shard_map_eqn(lambda x: jax.lax.psum(x, "data")).params["jaxpr"]
    assert internals.jaxpr_function_name(unnamed) is None  # no name of its own
    assert internals.traced_function(unnamed) == ("<lambda>", __file__)


@pytest.mark.skipif(jax.__version_info__ < (0, 7), reason="JAX 0.6 orders a traceback's raw frames otherwise; library groups are checked on 0.10")
def test_code_stack_has_library_frames_innermost_first():
    def f(x):
        return jax.nn.softmax(x)

    eqns = jax.make_jaxpr(f)(jnp.ones(3)).jaxpr.eqns
    pairs = internals.code_stack(eqns[0])
    stack = [code for code, _ in pairs]
    assert stack and all(isinstance(c, type(f.__code__)) for c in stack), \
        "JAX changed Traceback.raw_frames (expected code objects)"
    assert all(isinstance(offset, int) for _, offset in pairs), "raw_frames' offsets are ints"
    assert stack[-1] is f.__code__, "the traced function is the outermost frame"
    assert any("jax" in c.co_filename and c.co_name == "softmax" for c in stack), \
        "library frames (jax.nn.softmax) missing from the traceback"
    assert internals.traceback_of(eqns[0]) == internals.traceback_of(eqns[0])
    codes, offsets = internals.code_stack_columns(eqns[0])
    assert list(zip(codes, offsets)) == list(pairs), "code_stack_columns holds code_stack's pairs"


def test_jaxpr_function_name_reads_the_traced_function_s_name():
    def body(carry, x):
        return carry + x, None

    eqn = jax.make_jaxpr(lambda xs: jax.lax.scan(body, 0.0, xs))(jnp.ones(3)).jaxpr.eqns[0]
    assert internals.jaxpr_function_name(eqn.params["jaxpr"].jaxpr) == "body", \
        "JAX changed Jaxpr.debug_info.func_name"
    eqn = jax.make_jaxpr(jax.nn.relu)(1.0).jaxpr.eqns[0]
    assert internals.jaxpr_function_name(eqn.params["call_jaxpr"].jaxpr) == "relu"
    eqn = jax.make_jaxpr(lambda x: jax.lax.while_loop(lambda v: v < 3, lambda v: v + 1, x))(1.0).jaxpr.eqns[0]
    assert internals.jaxpr_function_name(eqn.params["body_jaxpr"].jaxpr) is None  # a lambda


@pytest.mark.skipif(jax.__version_info__ < (0, 7), reason="JAX 0.6 differs here; checked on JAX 0.10")
def test_current_jit_call_of_a_pmap_is_the_users_call():
    def denoise_internals(latents, guidance_scale):
        return latents * guidance_scale

    pmapped = jax.pmap(denoise_internals, static_broadcasted_argnums=1)
    latents = jnp.ones((jax.local_device_count(), 2))
    seen = _calls_seen_by_monitoring(lambda: pmapped(latents, 7.5))
    calls = [c for _, _, c in seen if c is not None and c.transform == "pmap"]
    assert calls, ("current_jit_call() found no pmap call: JAX changed jax._src.pmap (pmap's "
                   f"wrapped/infer_params closures, or dyn_args_flat): {seen}")
    call = calls[0]
    assert call.fun is denoise_internals and call.args[0] is latents and call.args[1] == 7.5
    assert call.static_argnums == (1,)


def test_transform_name_of_what_jax_transformations_return():
    def loss(w):
        return jnp.sum(w ** 2)

    assert internals.transform_name(jax.grad(loss)) == "grad", (
        "jax.grad's result no longer reads as 'grad': JAX renamed its inner grad_f or its "
        "traceback wrapper")
    assert internals.transform_name(jax.value_and_grad(loss)) == "value_and_grad"
    assert internals.transform_name(loss) is None


def test_eager_transform_sees_vmap_and_jvp_tracers():
    seen = []

    @jax.jit
    def f(x):
        return x * 2

    def record(call):
        leaves = jax.tree_util.tree_leaves(call.args)
        seen.extend(internals.eager_transform(v) for v in leaves if internals.is_tracer(v))

    def run():
        jax.vmap(f)(jnp.ones((5, 3)))
        jax.grad(lambda x: f(x).sum())(jnp.ones(4))

    for _, _, call in _calls_seen_by_monitoring(run):
        if call is not None:
            record(call)
    found = {kinds: value.shape for kinds, value in filter(None, seen)}
    assert found.get(("vmap",)) == (5, 3), (
        f"a vmapped tracer no longer unwraps to the batch (BatchTracer.val): {seen}")
    assert found.get(("jvp",)) == (4,), f"a jvp tracer no longer unwraps to its primal: {seen}"
    plain = jnp.ones(3)
    assert internals.eager_transform(plain) == ((), plain)


@pytest.mark.skipif(not internals.CACHE_CLEARS_HEARD, reason="JAX 0.6 has no cache registry to hear clears by")
def test_caches_cleared_notice_and_jit_cache_size():
    heard = []

    def on_clear(frame):
        heard.append(frame.f_code.co_name)

    internals.on_caches_cleared(on_clear)

    @jax.jit
    def g(x):
        return x + 1

    g(jnp.ones(2))
    assert internals.jit_cache_size(g) == 1, "PjitFunction._cache_size() changed"
    cast(Any, g).clear_cache()  # public on jitted functions, not on jax.jit's return type
    assert internals.jit_cache_size(g) == 0
    jax.clear_caches()
    assert heard, ("jax.clear_caches() no longer clears caches registered with "
                   "jax._src.util.register_cache")
    assert internals.jit_cache_size(lambda x: x) is None
    internals.off_caches_cleared(on_clear)
    gc.collect()  # JAX's registry held the notice weakly: it is gone from there too
    heard.clear()
    jax.clear_caches()
    assert heard == [], "off_caches_cleared left the notice in JAX's cache registry"


@pytest.mark.skipif(jax.__version_info__ < (0, 7), reason="JAX 0.6 differs here; checked on JAX 0.10")
def test_earlier_jit_calls_rebuild_the_calls_jaxs_trace_cache_holds():
    """In any order; the call being traced left out."""
    def step_fn(x, k, p, *, mode="a", n=3):
        return (x * k).sum() * n + p["w"].sum()

    step = jax.jit(step_fn, static_argnums=(1,), static_argnames=("mode",))

    step(jnp.ones(3), 2, {"w": jnp.ones(2)})
    step(jnp.ones((4, 2)), 3, {"w": jnp.ones(2)}, mode="b", n=4)
    calls: list[list[internals.JitCall]] = []

    def listener(event, duration_secs, **kwargs):
        call = internals.current_jit_call()
        if event == internals.TRACE_EVENT and call is not None and call.fun is step_fn:
            calls.append(internals.earlier_jit_calls(call))

    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        step(jnp.ones(5), 2, {"w": jnp.ones(2, jnp.bfloat16)})
    finally:
        internals.unregister_event_duration_listener(listener)
    assert calls, "current_jit_call() found no call of step at the end of its trace"
    rebuilt = [(c.args, c.kwargs) for c in calls[0]]
    sds = jax.ShapeDtypeStruct
    expected = [
        ((sds((3,), jnp.float32), 2, {"w": sds((2,), jnp.float32)}), {}),
        ((sds((4, 2), jnp.float32), 3, {"w": sds((2,), jnp.float32)}),
         {"mode": "b", "n": sds((), jnp.int32, weak_type=True)}),
    ]  # not the call being traced itself
    assert len(rebuilt) == 2 and all(e in rebuilt for e in expected), (
        f"earlier_jit_calls: JAX changed the keys of _infer_params_cached? got {rebuilt}")

    # Off the main thread the cache is not read (read while other threads fill it, its
    # keys deadlocked jaxlib 0.6.2): no earlier calls.
    calls.clear()
    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        worker = threading.Thread(target=lambda: step(jnp.ones(6), 2, {"w": jnp.ones(2)}))
        worker.start()
        worker.join()
    finally:
        internals.unregister_event_duration_listener(listener)
    assert calls == [[]]


def test_distributed_process_is_none_without_jax_distributed():
    """The initialized case (JAX's coordination-service client, this process's id) is
    checked with two real processes in tests/test_processes.py."""
    assert internals.distributed_process() is None


# ---------------------------------------------------------------------- the next JAX
def test_this_jax_has_every_private_name_jaxviz_reads():
    """On a JAX that lacks one, each line names it, the JAX version and what goes without."""
    assert internals.missing_internals() == [], "\n".join(internals.missing_internals())


def test_open_jaxpr_of_closed_and_open_jaxprs():
    """Up to JAX 0.10 a ClosedJaxpr wraps a Jaxpr; from 0.11 they are one class."""
    closed = jax.make_jaxpr(lambda x: jnp.sin(x) * 2)(1.0)
    opened = internals.open_jaxpr(closed)
    assert isinstance(opened, jax.extend.core.Jaxpr), f"JAX changed ClosedJaxpr.jaxpr: {type(opened)}"
    assert [e.primitive.name for e in opened.eqns] == ["sin", "mul"]
    assert internals.open_jaxpr(opened) is opened
    (scan,) = jax.make_jaxpr(lambda xs: jax.lax.scan(lambda c, x: (c + x, None), 0.0, xs))(jnp.ones(3)).eqns
    body = internals.open_jaxpr(scan.params["jaxpr"])
    assert [e.primitive.name for e in body.eqns][-1:] == ["add"], "the scan body, open"


# JAX's own modules, each stripped of names jaxviz reads, as a next JAX might be; JAX imports
# and runs without them (none is called before they are put back for JAX's exit hooks).
_JAX_WITHOUT = {
    "jax._src.pjit": ("_infer_params", "_run_python_pjit", "_python_pjit_helper", "_infer_params_cached"),
    "jax._src.core": ("escaped_tracer_error", "_invalid_shape_error"),
    "jax._src.dispatch": ("JAXPR_TRACE_EVENT",),
    "jax._src.distributed": ("global_state",),
}


def test_a_jax_without_some_private_names_gets_one_line_each_and_no_crash():
    """``import jaxviz`` works, each missing name is one warning line naming the JAX version
    and what goes without it, and the features that read them say they do not know."""
    script = textwrap.dedent(f"""
        import importlib, json, warnings
        import jax
        taken = []
        for module, names in {_JAX_WITHOUT!r}.items():
            owner = importlib.import_module(module)
            for name in names:
                if hasattr(owner, name):
                    taken.append((owner, name, getattr(owner, name)))
                    delattr(owner, name)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            import jaxviz
            from jaxviz import _jax_internals as internals
        internals.install_tracer_error_capture()
        internals.uninstall_tracer_error_capture()
        call = internals.JitCall(len, None, (), {{}}, (), (), None, False, None, trace_key=("k",))
        print(json.dumps({{
            "warned": [str(w.message) for w in caught if w.category is internals.JaxInternalsWarning],
            "missing": internals.missing_internals(),
            "version": jax.__version__,
            "trace_event": internals.TRACE_EVENT,
            "jit_call": internals.current_jit_call() is None,
            "earlier": internals.earlier_jit_calls(call),
            "process": internals.distributed_process() is None,
        }}))
        for owner, name, value in taken:
            setattr(owner, name, value)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    prefix = f"jaxviz: JAX {out['version']} has no "
    assert out["warned"] == out["missing"] and len(out["missing"]) == 7, out["missing"]
    assert all(line.startswith(prefix) and "\n" not in line for line in out["missing"])
    named = {line[len(prefix):].split(":")[0] for line in out["missing"]}
    assert named == {f"{module}.{name}" for module, names in _JAX_WITHOUT.items() for name in names
                     if name != "_python_pjit_helper"}, named  # the older place of _run_python_pjit
    assert out["trace_event"] == "/jax/core/compile/jaxpr_trace_duration"
    assert out["jit_call"] and out["earlier"] == [] and out["process"]


def test_pallas_grid_is_readable():
    from jax.experimental import pallas as pl

    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...] * 2.0

    def doubled(x):
        return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype), grid=(4, 2),
                              in_specs=[pl.BlockSpec((2, 4), lambda i, j: (i, j))],
                              out_specs=pl.BlockSpec((2, 4), lambda i, j: (i, j)), interpret=True)(x)

    closed = jax.make_jaxpr(doubled)(jnp.ones((8, 8)))
    (eqn,) = [e for e in closed.jaxpr.eqns if e.primitive.name == "pallas_call"]
    assert internals.pallas_grid(eqn.params) == (4, 2)
    assert internals.pallas_grid({}) is None


def test_jax_public_modules_are_told_from_its_internals():
    import jax.experimental.ode as ode  # noqa: PLC0415

    assert internals.jax_public_module(ode.__file__) == "jax.experimental.ode"
    assert internals.jax_public_module(jax.__file__) == "jax"
    assert internals.jax_public_module(jax._src.core.__file__) is None  # internals
    assert internals.jax_public_module(__file__) is None


@pytest.mark.parametrize("differentiate", [
    lambda f, x: jax.grad(f)(x),
    lambda f, x: jax.value_and_grad(f)(x),
    lambda f, x: jax.vjp(f, x)[1](1.0),
    lambda f, x: jax.jvp(f, (x,), (1.0,)),
    lambda f, x: jax.linearize(f, x)[1](1.0),
    lambda f, x: jax.jacrev(f)(x),
    lambda f, x: jax.jacfwd(f)(x),
    lambda f, x: jax.hessian(f)(x),
], ids=["grad", "value_and_grad", "vjp", "jvp", "linearize", "jacrev", "jacfwd", "hessian"])
def test_the_frames_of_jaxs_differentiation_api_are_known(differentiate):
    """Every equation of a differentiated function has a frame of JAX's differentiation
    API between it and the caller that differentiates, and no equation outside has one."""
    def f(x):
        return jnp.sin(x) * x

    def program(x):
        return differentiate(f, jnp.cos(x))

    outside, *differentiated = jax.make_jaxpr(program)(1.0).jaxpr.eqns
    inside = [any(internals.is_differentiation_entry(c) for c in internals.code_stack_columns(eqn)[0])
              for eqn in (outside, *differentiated)]
    assert outside.primitive.name == "cos" and not inside[0]
    assert differentiated and all(inside[1:]), inside


@pytest.mark.parametrize("api, expected", [
    (jax.jacfwd, ["vmap", "jacfwd"]), (jax.jacrev, ["jacrev"]), (jax.hessian, ["jacrev", "vmap", "jacfwd"]),
    (jax.vmap, ["vmap"]), (jax.grad, ["grad", "grad"]), (lambda f: jax.vmap(jax.grad(f)), ["grad", "grad", "vmap"]),
], ids=["jacfwd", "jacrev", "hessian", "vmap", "grad", "vmap_of_grad"])
def test_the_frames_of_jaxs_transformations_are_known(api, expected):
    """Between a transformed function's call and the user's line lie frames of the
    function ``jax.vmap``/``jax.grad``/``jax.jacfwd``/``jax.jacrev`` returned (``jacfwd``'s
    vmaps; a Hessian: jacrev's inside jacfwd's; ``grad``'s calls ``value_and_grad``'s)."""
    seen: list[str] = []

    def f(x):
        frame = sys._getframe(1)
        while frame is not None:
            name = internals.transformation_api(frame.f_code)
            if name is not None:
                seen.append(name)
            frame = frame.f_back
        return jnp.sum(jnp.sin(x))

    api(f)(jnp.ones(2))
    assert seen == expected
    assert internals.transformation_api(f.__code__) is None
