"""Every use of a private JAX API lives here, behind small functions.

JAX gives no public access to an equation's source location or name stack. Each helper
below is covered by ``tests/test_jax_internals.py``, which fails loudly (naming this
module) when a JAX release changes what we rely on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from jax._src import source_info_util as _siu


@dataclass(frozen=True, slots=True)
class UserFrame:
    """One frame of user code in an equation's traceback."""

    file: str
    function: str
    line: int
    column: int
    end_line: int
    end_column: int


@dataclass(frozen=True, slots=True)
class ScopeElement:
    """One element of an equation's name stack: a named scope or a transformation."""

    kind: str  # "scope" | "transform"
    name: str


def user_frames(eqn: Any) -> list[UserFrame]:
    """User-code frames of the equation's traceback, innermost first."""
    traceback = getattr(eqn.source_info, "traceback", None)
    if traceback is None:
        return []
    return [
        UserFrame(
            f.file_name,
            f.function_name,
            f.start_line,
            f.start_column,
            f.end_line,
            f.end_column,
        )
        for f in _siu.user_frames(traceback)
    ]


def name_stack(eqn: Any) -> tuple[ScopeElement, ...]:
    """The equation's name stack, outermost first (scopes and transforms such as jvp)."""
    stack = eqn.source_info.name_stack.stack
    return tuple(
        ScopeElement("transform" if type(el).__name__ == "Transform" else "scope", el.name)
        for el in stack
    )


def register_library_path(path: str) -> None:
    """Treat files under ``path`` as library code (hidden from user frames)."""
    # jax filters tracebacks by path prefix; our own package must not look like user code.
    _siu.register_exclusion(path)


def jit_static_args(jitted: Any) -> tuple[tuple[int, ...], tuple[str, ...]] | None:
    """``(static_argnums, static_argnames)`` a ``jax.jit``-ed function was created with,
    or None when ``jitted`` is not one (jax.stages exposes no public accessor)."""
    info = getattr(jitted, "_jit_info", None)
    if info is None:
        return None
    return tuple(info.static_argnums), tuple(info.static_argnames)


# ---------------------------------------------------------------------- recompiles
# ``jaxviz.recompiles`` learns about every trace, lowering and backend compile through
# ``jax.monitoring`` (public), but the events carry only a name. The arguments of the call
# being compiled are read, at miss time only, from JAX's own frames on the stack.
import os as _os  # noqa: E402
import sys as _sys  # noqa: E402
from collections.abc import Callable as _Callable  # noqa: E402

from jax._src import dispatch as _dispatch  # noqa: E402
from jax._src import pjit as _pjit  # noqa: E402

# The names jax.monitoring uses for the three stages (record_scalar at the start with the
# start time, record_event_duration_secs at the end; both with ``fun_name=``).
TRACE_EVENT: str = _dispatch.JAXPR_TRACE_EVENT
LOWER_EVENT: str = _dispatch.JAXPR_TO_MLIR_MODULE_EVENT
COMPILE_EVENT: str = _dispatch.BACKEND_COMPILE_EVENT

_INFER_PARAMS_CODE = _pjit._infer_params.__code__  # (fun, ji, args, kwargs): tracing
_RUN_PYTHON_PJIT_CODE = _pjit._run_python_pjit.__code__  # (p, args_flat, fun, args, kwargs)
_JAX_DIRS = tuple(
    _os.path.dirname(_os.path.abspath(m.__file__)) + _os.sep
    for m in (__import__("jax"), __import__("jaxlib"))
)


def is_jax_file(filename: str) -> bool:
    """Source of JAX or jaxlib itself."""
    return filename.startswith(_JAX_DIRS)


@dataclass(frozen=True, slots=True)
class JitCall:
    """The call of a ``jax.jit``-ed function that JAX is tracing/lowering/compiling now."""

    fun: _Callable[..., Any]  # the Python callable that was jitted
    jit_info: Any  # opaque; the same object for the same jit object (compare with ``is``)
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    static_argnums: tuple[int, ...]
    static_argnames: tuple[str, ...]
    signature: Any  # inspect.Signature | None, as JAX computed it for the function
    aot: bool  # ``.trace()`` / ``.lower()`` rather than a call
    caller: Any  # the first frame outside JAX above the call (a frame object; don't keep it)


def _jit_info_fields(ji: Any) -> tuple[tuple[int, ...], tuple[str, ...], Any]:
    return tuple(ji.static_argnums), tuple(ji.static_argnames), ji.fun_signature


def _outside_jax(frame: Any) -> Any:
    while frame is not None and is_jax_file(frame.f_code.co_filename):
        frame = frame.f_back
    return frame


def current_jit_call(max_depth: int = 80) -> JitCall | None:
    """From inside a ``jax.monitoring`` callback: the jit call being traced (the trace
    event) or lowered/compiled (the lower and compile events of a call), or None (e.g. AOT
    ``Lowered.compile()``, or a jitted function run under ``grad`` outside ``jit``).

    Reads the locals of ``jax._src.pjit._infer_params`` / ``_run_python_pjit`` frames.
    """
    frame = _sys._getframe(1)
    depth = 0
    while frame is not None and depth < max_depth:
        code = frame.f_code
        if code is _INFER_PARAMS_CODE:
            loc = frame.f_locals
            nums, names, sig = _jit_info_fields(loc["ji"])
            back = frame.f_back
            aot = back is None or back.f_code.co_name != "cache_miss"
            return JitCall(loc["fun"], loc["ji"], tuple(loc["args"]), dict(loc["kwargs"]),
                           nums, names, sig, aot, _outside_jax(back))
        if code is _RUN_PYTHON_PJIT_CODE:
            loc = frame.f_locals
            back = frame.f_back  # cache_miss, a closure over fun and jit_info
            ji = back.f_locals.get("jit_info") if back is not None else None
            if ji is None:
                return None
            nums, names, sig = _jit_info_fields(ji)
            return JitCall(loc["fun"], ji, tuple(loc["args"]), dict(loc["kwargs"]),
                           nums, names, sig, False, _outside_jax(back))
        frame = frame.f_back
        depth += 1
    return None


def monitoring_listener_counts() -> dict[str, int]:
    """How many jax.monitoring listeners of each kind are registered (for tests: the
    public module can register and unregister, not list)."""
    from jax._src import monitoring as _m

    return {"event": len(_m.get_event_listeners()),
            "duration": len(_m.get_event_duration_listeners()),
            "scalar": len(_m.get_scalar_listeners())}
