"""Every use of a private JAX API lives here, behind small functions.

JAX gives no public access to an equation's source location or name stack. Each helper
below is covered by ``tests/test_jax_internals.py``, which fails loudly (naming this
module) when a JAX release changes what we rely on. Where supported JAX releases
(``jaxviz.jax_versions``: 0.6 to 0.10) differ, the shim for each version range sits next to
the API it stands for, decided once at import. A private name a JAX lacks never breaks
``import jaxviz``: the feature that reads it says it does not know (None, no frames, no
earlier calls), and ``missing_internals`` holds one line per missing name (the JAX
version, the name, what goes without it), also given once as a ``JaxInternalsWarning``.

Where each private name is, per JAX (tested: 0.6.2 and 0.10.2, the core suite; prepared
from JAX's source only: 0.11.0, and main at 0.11.1.dev of 2026-08-08, the road to 0.12; the
README's "JAX versions" says the same). Cells: 0.6.2 | 0.10.2 | 0.11.0 | main; "=" is the
cell to its left; ``_src`` is ``jax._src``::

    source_info_util.user_frames            _src, of a SourceInfo | _src, of a Traceback | = | =
    source_info_util.raw_frame_to_frame,
      register_exclusion, NameStack.stack   _src | = | = | =
    Traceback.raw_frames, hash, eq          jaxlib | = | = | =
    linear_util.WrappedFun.call_wrapped     _src | = | = | =
    DropVar, jaxprs_in_params               _src.core | jax.extend.core | = | =
    a ClosedJaxpr's Jaxpr (open_jaxpr)      .jaxpr | = | itself (one class) | =
    Jaxpr.debug_info.func_src_info          = | = | = | =
    pjit._infer_params and its locals       _src | = | = | =
    pjit's frame that compiles a call       _src._python_pjit_helper | _src._run_python_pjit | = | =
    pjit._infer_params_cached.cache_keys    _src | = | = | =
    PjitFunction._jit_info, _cache_size     jaxlib | = | = | =
    dispatch.*_EVENT (monitoring names)     _src | = | = | =
    unregister_*_listener                   _src.monitoring._unregister_*_by_callback |
                                              jax.monitoring | = | =
    monitoring.get_*_listeners              _src | = | = | =
    util.register_cache                     absent | _src | = | =
    xla_bridge.backends_are_initialized     _src | = | = | =
    distributed.global_state                _src | = | = | =
    pmap: wrapped, infer_params, _fun       absent (C++ PmapFunction) | _src.pmap | = | =
    a staged tracer's variable, equation    its frame's tracer_to_var, eqns |
                                              DynamicJaxprTracer.val, .parent | = | =
    core.escaped_tracer_error,
      _invalid_shape_error, Tracer._line_info  _src | = | = | =
    Tracer                                  jax.core | = | = | =
    BatchTracer.val, JVPTracer.primal       _src.interpreters | = | = | =
    grad_f, vmap_f (transform_name)         _src.api | = | = | =
    shard_map's params mesh, jaxpr          = | = | = | =

JAX 0.11 also needs Python 3.12 or later, and removed many ``jax.core`` names; jaxviz
read none of them (``jax.core.Tracer`` stays).
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import os
import sys
import threading
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import jax.errors
import jax.monitoring
from jax._src import api_util as _api_util
from jax._src import core as _core
from jax._src import dispatch as _dispatch
from jax._src import distributed as _distributed
from jax._src import linear_util as _lu
from jax._src import monitoring as _monitoring
from jax._src import pjit as _pjit
from jax._src import source_info_util as _siu
from jax._src import util as _util
from jax._src import xla_bridge as _xla_bridge
from jax._src.interpreters import partial_eval as _pe

try:  # from JAX 0.9, pmap is a jit of a shard_map, in its own module
    from jax._src import pmap as _pmap_module
except ImportError:
    _pmap_module = None
from jax.core import Tracer
from jax.extend.core import JaxprEqn, Literal

try:  # public from JAX 0.10
    from jax.extend.core import DropVar as DropVar
    from jax.extend.core import jaxprs_in_params
except ImportError:  # JAX 0.6 to 0.9
    from jax._src.core import DropVar as DropVar
    from jax._src.core import jaxprs_in_params


class JaxInternalsWarning(UserWarning):
    """This JAX lacks a private name jaxviz reads: one feature goes without it."""


_MISSING: dict[str, str] = {}  # "module.name" -> what jaxviz does without it


def _private(owner: Any, *paths: str, without: str) -> Any:
    """The first of ``owner``'s dotted ``paths`` this JAX has (newest location first), or
    None, recorded for ``missing_internals`` with what jaxviz does ``without`` it."""
    for path in paths:
        value = owner
        for name in path.split("."):
            value = getattr(value, name, None)
        if value is not None:
            return value
    _MISSING[f"{getattr(owner, '__name__', owner)}.{paths[0]}"] = without
    return None


def missing_internals() -> list[str]:
    """One line per private JAX name jaxviz reads that this JAX lacks: the JAX version, the
    name, and what jaxviz does without it. Empty on every tested JAX."""
    return [f"jaxviz: JAX {jax.__version__} has no {name}: {without}"
            for name, without in _MISSING.items()]


class UserFrame(NamedTuple):
    """One frame of user code in an equation's traceback. A named tuple: hashed in C
    (a graph build keys on it per equation), where a dataclass hashes in Python."""

    file: str
    function: str
    line: int
    column: int
    end_line: int
    end_column: int


class ScopeElement(NamedTuple):
    """One element of an equation's name stack: a named scope or a transformation (a
    named tuple, hashed in C as ``UserFrame``)."""

    kind: str  # "scope" | "transform"
    name: str


def _user_frame(f: Any) -> UserFrame:
    """A ``UserFrame`` from one of JAX's source-info frames."""
    return UserFrame(f.file_name, f.function_name, f.start_line, f.start_column, f.end_line,
                     f.end_column)


_NO_FRAMES = "no source lines for equations or tracers"
_SIU_USER_FRAMES = _private(_siu, "user_frames", without=_NO_FRAMES)
_RAW_FRAME_TO_FRAME = _private(_siu, "raw_frame_to_frame", without=_NO_FRAMES)
_REGISTER_EXCLUSION = _private(_siu, "register_exclusion",
                               without="jaxviz's own frames may be shown as the user's")
# source_info_util.user_frames takes a Traceback from JAX 0.7, its SourceInfo in JAX 0.6.
_USER_FRAMES_OF_SOURCE_INFO = (_SIU_USER_FRAMES is not None
                               and "source_info" in inspect.signature(_SIU_USER_FRAMES).parameters)


def _siu_user_frames(source_info: Any) -> Iterator[Any]:
    traceback = getattr(source_info, "traceback", None)
    if traceback is None or _SIU_USER_FRAMES is None:
        return iter(())
    return _SIU_USER_FRAMES(source_info if _USER_FRAMES_OF_SOURCE_INFO else traceback)


def user_frames(eqn: Any) -> list[UserFrame]:
    """User-code frames of the equation's traceback, innermost first."""
    return [_user_frame(f) for f in _siu_user_frames(eqn.source_info)]


_frame_cache: dict[tuple[Any, int], UserFrame] = {}


def innermost_frame(eqn: Any, is_user_code: Callable[[Any], bool],
                    by_traceback: dict[Any, UserFrame | None] | None = None) -> UserFrame | None:
    """The innermost frame of the equation's traceback whose code object passes
    ``is_user_code`` (cached per call site: a graph build asks this for every equation).
    ``by_traceback`` remembers the answer per traceback for one ``is_user_code``: the
    equations of a layer called in a loop share theirs."""
    traceback = getattr(eqn.source_info, "traceback", None)
    if traceback is None:
        return None
    if by_traceback is None:
        return _innermost_frame(traceback, is_user_code)
    if traceback not in by_traceback:
        by_traceback[traceback] = _innermost_frame(traceback, is_user_code)
    return by_traceback[traceback]


def _innermost_frame(traceback: Any, is_user_code: Callable[[Any], bool]) -> UserFrame | None:
    codes, lastis = traceback.raw_frames()
    for code, lasti in zip(codes, lastis):
        if is_user_code(code):
            return frame_at(code, lasti)
    return None


def frame_at(code: Any, lasti: int) -> UserFrame | None:
    """The source position (file, function, lines and columns) of the instruction at
    bytecode offset ``lasti`` of ``code``, as ``code_stack`` lists them (cached per call
    site); None where JAX cannot say."""
    if _RAW_FRAME_TO_FRAME is None:
        return None
    key = (code, lasti)
    frame = _frame_cache.get(key)
    if frame is None:
        frame = _frame_cache[key] = _user_frame(_RAW_FRAME_TO_FRAME(code, lasti))
    return frame


def traceback_code_stacks(closed: Any) -> list[tuple[Any, ...]]:
    """Per equation of ``closed`` (sub-jaxprs included), the code objects of the Python
    frames (library frames too, innermost first) on the stack when it was recorded, from
    the function JAX was tracing inward (jaxlib cuts the stack there). Equal tracebacks are
    merged first: a loop of 48 layers records few distinct ones."""
    return [_traced_part(tb.raw_frames()[0]) for tb in _distinct_tracebacks(closed)]


def traceback_frame_codes(closed: Any) -> list[Any]:
    """The code objects of all the frames of ``closed``'s equations' tracebacks, each once
    (by identity): those of ``traceback_code_stacks`` and, on a JAX that keeps them, its
    tracing machinery's frames outside them. Gathered in C: the stacks of a program share
    most of their frames, and a code object hashes its bytecode."""
    by_id: dict[int, Any] = {}
    for tb in _distinct_tracebacks(closed):
        codes = tb.raw_frames()[0]
        by_id.update(zip(map(id, codes), codes))
    return list(by_id.values())


def _distinct_tracebacks(closed: Any) -> set[Any]:
    tracebacks = set()
    seen: set[int] = set()
    stack = [open_jaxpr(closed)]
    while stack:
        jaxpr = stack.pop()
        if id(jaxpr) in seen:
            continue
        seen.add(id(jaxpr))
        for eqn in jaxpr.eqns:
            traceback = getattr(eqn.source_info, "traceback", None)
            if traceback is not None:
                tracebacks.add(traceback)  # hashed and compared by content
            stack.extend(jaxprs_in_params(eqn.params))
    return tracebacks


def code_stack(eqn: Any) -> tuple[tuple[Any, int], ...]:
    """(code object, bytecode offset) of each Python frame (library frames too, innermost
    first) on the stack when ``eqn`` was recorded: the offset tells two calls of one
    function from one caller apart. Not cut where JAX called a function it traced: a
    ``vmap`` inside a library's call is traced within that call. () when JAX kept no
    traceback."""
    codes, lastis = code_stack_columns(eqn)
    return tuple(zip(codes, lastis))


def code_stack_columns(eqn: Any) -> tuple[Sequence[Any], Sequence[int]]:
    """``code_stack`` as two columns, (code objects, bytecode offsets): what a walk over
    many tracebacks reads without pairing them up. ((), ()) when JAX kept no traceback."""
    traceback = getattr(eqn.source_info, "traceback", None)
    if traceback is None:
        return (), ()
    return traceback.raw_frames()


_UNNAMED_FUNCTIONS = frozenset({"<lambda>", "<unnamed function>", "<unnamed wrapped function>"})


def open_jaxpr(jaxpr: Any) -> Any:
    """The open ``Jaxpr`` of a closed one (its equations, invars, outvars), a ``Jaxpr``
    itself. Up to JAX 0.10 a ``ClosedJaxpr`` wraps a ``Jaxpr`` (``.jaxpr``); from 0.11 they
    are one class whose legacy ``.jaxpr`` is itself, which JAX's main stopped using
    (2026-07-29) and may remove."""
    inner = getattr(jaxpr, "jaxpr", None)
    return jaxpr if inner is None else inner


def traced_function(jaxpr: Any) -> tuple[str, str] | None:
    """(name, file) of the Python function a (sub-)jaxpr was traced from: its debug info's
    ``"mha at /path/flash.py:12"``; None when it does not say."""
    info = getattr(jaxpr, "debug_info", None)
    source = getattr(info, "func_src_info", None)
    if not isinstance(source, str) or not source:
        return None
    name, _, where = source.partition(" at ")
    return (name, where.rpartition(":")[0]) if name else None


def jaxpr_function_name(jaxpr: Any) -> str | None:
    """The name of the Python function JAX traced into ``jaxpr`` (a scan's body, a
    custom_vjp's function, a shard_map's, a pallas kernel), from its debug info; None when
    JAX kept none or the function has no name of its own (a lambda)."""
    found = traced_function(jaxpr)
    return found[0] if found and found[0] not in _UNNAMED_FUNCTIONS else None


def traceback_of(eqn: Any) -> Any:
    """The equation's traceback object (hashed and compared by content: a key for
    caching what is read from it), or None."""
    return getattr(eqn.source_info, "traceback", None)


# JAX calls each function it traces from ``WrappedFun.call_wrapped``. From JAX 0.9 an
# equation's traceback stops at the traced function; up to 0.8 it runs on through JAX's
# tracing frames out to the program's entry: there, cut it where JAX made the call.
_CALL_WRAPPED_CODE = getattr(_private(_lu, "WrappedFun.call_wrapped", without=(
    "frames of JAX's tracing machinery (up to JAX 0.8) and pmap's function name not read")),
    "__code__", None)


def _traced_part(codes: Any) -> tuple[Any, ...]:
    for i, code in enumerate(codes):
        if code is _CALL_WRAPPED_CODE:
            return tuple(codes[:i])
    return tuple(codes)


_stack_cache: dict[Any, tuple[ScopeElement, ...]] = {}


def name_stack(eqn: Any) -> tuple[ScopeElement, ...]:
    """The equation's name stack, outermost first (scopes and transforms such as jvp).
    Cached per stack: equations of one scope share it."""
    stack = eqn.source_info.name_stack.stack
    try:
        return _stack_cache[stack]
    except KeyError:
        pass
    result = tuple(
        ScopeElement("transform" if type(el).__name__ == "Transform" else "scope", el.name)
        for el in stack
    )
    if len(_stack_cache) > 100_000:
        _stack_cache.clear()
    _stack_cache[stack] = result
    return result


def register_library_path(path: str) -> None:
    """Treat files under ``path`` as library code (hidden from user frames)."""
    # jax filters tracebacks by path prefix; our own package must not look like user code.
    if _REGISTER_EXCLUSION is not None:
        _REGISTER_EXCLUSION(path)


def jit_static_args(jitted: Any) -> tuple[tuple[int, ...], tuple[str, ...]] | None:
    """``(static_argnums, static_argnames)`` a ``jax.jit``-ed function was created with,
    or None when ``jitted`` is not one (jax.stages exposes no public accessor)."""
    info = getattr(jitted, "_jit_info", None)
    if info is None:
        return None
    return tuple(info.static_argnums), tuple(info.static_argnames)


# ---------------------------------------------------------------------- pmap
# From JAX 0.8 ``jax.pmap`` is a function of ``jax/_src/pmap.py`` that stages a ``jit``
# named ``_fun`` (defined there) holding one ``shard_map`` over a one-axis mesh; its
# ``lower`` makes it look jit-like. Before, it was a C++ ``PmapFunction`` staging an
# ``xla_pmap`` equation.
_PMAP_FILE = _pmap_module.__file__ if _pmap_module is not None else "<no pmap module>"


_PMAP_UNNAMED_AXIS = "_internal_pmap_axis_name"  # what pmap names an axis the user did not


@dataclass(frozen=True, slots=True)
class PmapCall:
    """A pmap as staged in a jaxpr: the mapped function's name (None when no equation
    inside says) and its axes ``((name, size), ...)`` (name None: the user gave none)."""

    function: str | None
    axes: tuple[tuple[str | None, int], ...]


def is_pmap(fn: Any) -> bool:
    """``fn`` is what ``jax.pmap`` returned (not a ``jax.jit`` of it)."""
    code = getattr(fn, "__code__", None)
    if code is not None and code.co_filename == _PMAP_FILE:
        return True
    return type(fn).__name__ == "PmapFunction"  # JAX < 0.8


def pmap_call(eqn: Any, is_user_code: Callable[[Any], bool] = lambda code: True) -> PmapCall | None:
    """The pmap an equation stands for, or None when it is not one. The mapped function
    is the outermost one passing ``is_user_code`` that pmap called (the user's, past a
    library's wrapper such as ``eqx.filter_pmap``'s), else the one pmap called."""
    if eqn.primitive.name == "xla_pmap":  # JAX < 0.8
        return PmapCall(eqn.params.get("name"), ((str(eqn.params["axis_name"]), int(eqn.params["axis_size"])),))
    if eqn.primitive.name not in ("jit", "pjit"):
        return None
    inner = open_jaxpr(eqn.params["jaxpr"])
    source = getattr(inner.debug_info, "func_src_info", None) or ""
    if not (source.startswith("_fun at ") and _PMAP_FILE in source):
        return None
    maps = [e for e in inner.eqns if e.primitive.name == "shard_map"]
    if len(maps) != 1:
        return None
    return PmapCall(_mapped_function(maps[0].params["jaxpr"], is_user_code), mesh_axes(maps[0]) or ())


def mesh_axes(eqn: Any) -> tuple[tuple[str | None, int], ...] | None:
    """A ``shard_map`` equation's mesh axes ``((name, size), ...)`` (name None: a pmap's
    axis the user did not name), else None."""
    mesh = eqn.params.get("mesh") if eqn.primitive.name == "shard_map" else None
    shape = getattr(mesh, "shape", None)
    if shape is None:
        return None
    return tuple((None if name == _PMAP_UNNAMED_AXIS else str(name), int(size)) for name, size in shape.items())


def _mapped_function(jaxpr: Any, is_user_code: Callable[[Any], bool]) -> str | None:
    """The function pmap's ``_fun`` called: the frame just inside ``_fun`` (past
    ``call_wrapped``) in the traceback of an equation it staged."""
    for eqn in jaxpr.eqns:
        traceback = getattr(eqn.source_info, "traceback", None)
        if traceback is None:
            continue
        codes = traceback.raw_frames()[0]
        at = next((i for i, c in enumerate(codes) if c.co_filename == _PMAP_FILE and c.co_name == "_fun"), None)
        if at is None or at == 0 or codes[at - 1] is not _CALL_WRAPPED_CODE:
            continue  # pmap's own squeeze of an input, say
        inside = [c for c in reversed(codes[:at - 1]) if c.co_filename not in _WRAPPING_FILES]
        user = next((c for c in inside if is_user_code(c)), inside[0] if inside else None)
        return user.co_name if user is not None else None
    return None


_WRAPPING_FILES = (_lu.__file__, _api_util.__file__)  # argnums_partial and co.


# ---------------------------------------------------------------------- tracer errors
# Used by ``jaxviz.errors`` (the tracer error explainer). JAX's tracer errors carry only a
# message; the tracer they refused, and the stack at that moment, are recorded here by
# wrapping their constructors. A tracer staged by ``jit`` (a DynamicJaxprTracer) knows
# the equation that produced it (``parent``), that equation its operand tracers, and so
# on back to the traced function's inputs: that chain is the value's provenance.

CAPTURE_ATTR = "_jaxviz_capture"


@dataclass(slots=True)
class TracerErrorCapture:
    """What JAX refused: the tracer (None when it could not be found) and the Python frame
    that raised (its ``f_back`` chain is the stack at that moment, user frames included)."""

    tracer: Any
    frame: Any


@dataclass(slots=True)
class TracerFunction:
    """The function being traced when a tracer was made (from its debug info)."""

    name: str
    file: str | None
    line: int | None
    traced_for: str  # "jit", "scan", "while_loop", "cond", ...
    arg_names: tuple[str, ...] | None  # flattened argument paths, e.g. ("x", "p['w']")


@dataclass(slots=True)
class TracerOrigin:
    """Where a staged tracer came from: an equation (``eqn`` with its operand tracers
    ``operands``; ``None`` for literals), an input of the traced function (``position``
    among its flattened inputs) or a constant (``const``: the value it closes over, which
    is itself a tracer of the enclosing trace when a function closes over one)."""

    kind: str  # "eqn" | "input" | "const" | "unknown"
    eqn: Any = None  # a jax.extend.core.JaxprEqn
    eqn_id: int | None = None  # the same for every output of one equation
    operands: list[Any] | None = None
    position: int | None = None
    const: Any = None


_captured_originals: dict[str, tuple[Any, str, Any]] = {}


def _tracer_error_classes() -> tuple[type, ...]:
    return (jax.errors.ConcretizationTypeError, jax.errors.TracerBoolConversionError,
            jax.errors.TracerIntegerConversionError, jax.errors.TracerArrayConversionError,
            jax.errors.NonConcreteBooleanIndexError)


def _find_tracer(frame: Any, aval: Any, max_frames: int = 8) -> Any:
    """A tracer of type ``aval`` held by one of the innermost frames' locals (or one level
    inside them: ``idx.index``), for errors JAX builds from the aval only."""
    def candidates(value: Any) -> Any:
        yield value
        if isinstance(value, (tuple, list)) and len(value) <= 16:
            yield from value
        elif hasattr(value, "__dict__") and not isinstance(value, type):
            yield from list(vars(value).values())[:16]

    while frame is not None and max_frames > 0:
        for value in list(frame.f_locals.values()):
            for c in candidates(value):
                if isinstance(c, Tracer) and c.aval == aval:
                    return c
        frame = frame.f_back
        max_frames -= 1
    return None


def _record(exc: BaseException, value: Any, frame: Any) -> None:
    try:
        if isinstance(value, (tuple, list)):  # a shape holding tracers
            value = next((v for v in value if isinstance(v, Tracer)), None)
        elif value is not None and not isinstance(value, Tracer):
            value = _find_tracer(frame, value)
        setattr(exc, CAPTURE_ATTR, TracerErrorCapture(value, frame))
    except Exception:  # never let the explainer break JAX's own error
        pass


_capture_lock = threading.Lock()
_capture_blocks = 0  # ``tracer_errors_captured`` blocks running now, in any thread
_capture_kept = False  # installed by ``install_tracer_error_capture``: blocks leave it


@contextlib.contextmanager
def tracer_errors_captured() -> Iterator[None]:
    """The capture installed for the duration of the block (a trace by jaxviz), and
    removed after the last block ends unless ``install_tracer_error_capture`` installed
    it for good (``%load_ext jaxviz``). ``import jaxviz`` patches nothing."""
    global _capture_blocks
    with _capture_lock:
        _capture_blocks += 1
        _install_capture()
    try:
        yield
    finally:
        with _capture_lock:
            _capture_blocks -= 1
            if not _capture_blocks and not _capture_kept:
                uninstall_tracer_error_capture()


def install_tracer_error_capture() -> None:
    """Wrap the constructors of JAX's tracer errors so each records, on the exception, the
    tracer it refused and the raising frame (read back by ``captured_tracer_error``), until
    ``uninstall_tracer_error_capture``. Idempotent; the errors themselves (type, message,
    traceback) are unchanged."""
    global _capture_kept
    _capture_kept = True
    _install_capture()


def _install_capture() -> None:
    if tracer_error_capture_installed():
        return
    for cls in _tracer_error_classes():
        original = cls.__dict__["__init__"]

        def __init__(self: Any, *args: Any, __original: Any = original, **kwargs: Any) -> None:
            __original(self, *args, **kwargs)
            _record(self, args[0] if args else kwargs.get("tracer"), sys._getframe(1))

        __init__.__wrapped__ = original  # type: ignore[attr-defined]
        cls.__init__ = __init__
        _captured_originals[f"{cls.__module__}.{cls.__qualname__}"] = (cls, "__init__", original)

    if _ESCAPED_TRACER_ERROR is not None:
        _wrap_core_helper("escaped_tracer_error", _escaped_tracer_error_recorded)
    if _INVALID_SHAPE_ERROR is not None:
        _wrap_core_helper("_invalid_shape_error", _invalid_shape_error_recorded)


# A leaked tracer: UnexpectedTracerError is built from a message by this helper.
_ESCAPED_TRACER_ERROR = _private(_core, "escaped_tracer_error",
                                 without="a leaked tracer's error is not traced back")
# A tracer used as a shape (``x.reshape(n)``, ``jnp.zeros(n)``): a plain TypeError.
_INVALID_SHAPE_ERROR = _private(_core, "_invalid_shape_error",
                                without="a tracer used as a shape is not traced back")


def _escaped_tracer_error_recorded(original: Any) -> Callable[..., Any]:
    def escaped_tracer_error(tracer: Any, detail: Any = None) -> Any:
        exc = original(tracer, detail)
        _record(exc, tracer, sys._getframe(1))
        return exc

    return escaped_tracer_error


def _invalid_shape_error_recorded(original: Any) -> Callable[..., Any]:
    def _invalid_shape_error(shape: Any, context: str = "") -> Any:
        exc = original(shape, context)
        _record(exc, tuple(shape) if isinstance(shape, (tuple, list)) else None, sys._getframe(1))
        return exc

    return _invalid_shape_error


def _wrap_core_helper(name: str, recorded: Callable[[Any], Callable[..., Any]]) -> None:
    """Replace ``jax._src.core.<name>`` (an error builder JAX looks up at each use) by one
    that records the tracer; the original stays reachable as ``__wrapped__``."""
    original = getattr(_core, name)
    wrapper = recorded(original)
    wrapper.__wrapped__ = original  # type: ignore[attr-defined]
    setattr(_core, name, wrapper)
    _captured_originals[f"core.{name}"] = (_core, name, original)


def uninstall_tracer_error_capture() -> None:
    """Undo ``install_tracer_error_capture``: JAX's own constructors and helpers are put
    back (the very objects that were replaced). A no-op when not installed."""
    global _capture_kept
    _capture_kept = False
    for owner, attr, original in _captured_originals.values():
        setattr(owner, attr, original)
    _captured_originals.clear()


def tracer_error_capture_installed() -> bool:
    """Whether JAX's tracer-error constructors are wrapped now (by a block or by
    ``install_tracer_error_capture``)."""
    return bool(_captured_originals)


def captured_tracer_error(exc: BaseException) -> TracerErrorCapture | None:
    return getattr(exc, CAPTURE_ATTR, None)


def is_tracer(value: Any) -> bool:
    return isinstance(value, Tracer)


_DYNAMIC_JAXPR_TRACER = _private(_pe, "DynamicJaxprTracer",
                                 without="a tracer error's value is not traced back")
_STAGED_TRACER_TYPES: tuple[type, ...] = (_DYNAMIC_JAXPR_TRACER,) if _DYNAMIC_JAXPR_TRACER else ()


def staged_tracer(tracer: Any) -> Any:
    """The ``jit``-staged tracer inside ``tracer`` (through vmap's BatchTracer ``val``,
    jvp's ``primal``, ...), or None when nothing is being staged (e.g. eager vmap)."""
    for _ in range(32):
        if isinstance(tracer, _STAGED_TRACER_TYPES):
            return tracer
        inner = next((getattr(tracer, a) for a in ("val", "primal")
                      if isinstance(getattr(tracer, a, None), Tracer)), None)
        if inner is None:
            return None
        tracer = inner
    return None


# A staged tracer's jaxpr variable and the equation that wrote it: from JAX 0.7 the tracer
# holds them (``val``; ``parent``, a TracingEqn over the operand tracers). In JAX 0.6 its
# trace's frame does: ``tracer_to_var`` (by tracer id), ``eqns`` and ``tracers``.
# After its trace, a JAX 0.6 frame has dropped the variables no output uses: a leaked
# tracer's equation is then unknown (``tracer_created_at`` still says where it was made).
def _tracer_holds_var() -> bool:
    return "val" in getattr(_DYNAMIC_JAXPR_TRACER, "__slots__", ())


TRACERS_HOLD_THEIR_EQUATION: bool = _tracer_holds_var()  # JAX >= 0.7


def tracer_key(tracer: Any) -> Any:
    """A hashable identity of a staged tracer's value (its jaxpr variable)."""
    if TRACERS_HOLD_THEIR_EQUATION:
        return tracer.val
    return tracer._trace.frame.tracer_to_var.get(id(tracer))


def tracer_trace_id(tracer: Any) -> int:
    """Identifies the trace (one traced function) a staged tracer belongs to."""
    return id(tracer._trace.frame)


def same_trace(a: Any, b: Any) -> bool:
    """Whether two tracers (of any kind: staged, vmap's, jvp's) belong to the same trace."""
    return getattr(a, "_trace", None) is getattr(b, "_trace", None)


def tracer_function(tracer: Any) -> TracerFunction | None:
    """The traced function a staged tracer belongs to, from its debug info."""
    dbg = getattr(tracer, "_debug_info", None)
    if dbg is None:
        return None
    return TracerFunction(dbg.func_name, dbg.func_filename, dbg.func_lineno, dbg.traced_for,
                          tuple(dbg.arg_names) if dbg.arg_names is not None else None)


def tracer_origin(tracer: Any) -> TracerOrigin:
    """One step back along a staged tracer's provenance."""
    parent = getattr(tracer, "parent", None)
    if parent is not None:
        operands = list(parent.in_tracers)
        eqn = JaxprEqn([t.val for t in operands], list(parent.outvars), parent.primitive,
                       parent.params, parent.effects, parent.source_info, parent.ctx)
        return TracerOrigin("eqn", eqn=eqn, eqn_id=id(parent),
                            operands=[None if isinstance(t.val, Literal) else t
                                      for t in operands])
    frame = tracer._trace.frame
    var = tracer_key(tracer)
    if var is None:
        return TracerOrigin("unknown")
    if isinstance(var, Literal):
        return TracerOrigin("const", const=var.val)
    if not TRACERS_HOLD_THEIR_EQUATION:
        origin = _recorded_eqn_origin(frame, var)
        if origin is not None:
            return origin
    for i, v in enumerate(frame.invars):
        if v is var:
            return TracerOrigin("input", position=i)
    if var in frame.constvar_to_val:
        const = frame.constvar_to_val[var]
        # JAX 0.7 and 0.8 keep Constants(canonical, original): the user's value is original.
        return TracerOrigin("const", const=getattr(const, "original", const))
    return TracerOrigin("unknown")


def _recorded_eqn_origin(frame: Any, var: Any) -> TracerOrigin | None:
    """JAX 0.6: the equation of ``frame`` that wrote ``var``, its operands found among the
    frame's tracers (None when an input or a constant wrote it)."""
    eqn = next((e for e in reversed(frame.eqns) if any(v is var for v in e.outvars)), None)
    if eqn is None:
        return None
    held = ((frame.tracer_to_var.get(id(t)), t) for t in frame.tracers)
    by_var = {v: t for v, t in held if v is not None and not isinstance(v, Literal)}
    operands = []
    for v in eqn.invars:
        if isinstance(v, Literal):
            operands.append(None)
        elif v in by_var:
            operands.append(by_var[v])
        else:  # written by a jitted helper JAX 0.6 inlined: its variables have no tracer
            operands.append(_tracer_for_var(frame, by_var, v))
    return TracerOrigin("eqn", eqn=eqn, eqn_id=id(eqn), operands=operands)


def _tracer_for_var(frame: Any, by_var: dict[Any, Any], var: Any) -> Any:
    """JAX 0.6: a tracer standing for ``var`` in its (finished) trace, registered with the
    frame so that the walk goes on through it, as JAX does for its own tracers."""
    trace = next(iter(by_var.values()), None)
    trace = getattr(trace, "_trace", None)
    if trace is None:
        return None
    tracer = _pe.DynamicJaxprTracer(trace, var.aval, None)  # pyright: ignore[reportArgumentType]  (JAX 0.6: no source)
    frame.tracers.append(tracer)
    frame.tracer_to_var[id(tracer)] = var
    by_var[var] = tracer
    return tracer


def tracer_created_at(tracer: Any) -> list[UserFrame]:
    """User frames (innermost first) where a tracer was created, when JAX kept them (it
    does for leaked tracers' messages)."""
    info = getattr(tracer, "_line_info", None)
    return [_user_frame(f) for f in _siu_user_frames(info)]


# ---------------------------------------------------------------------- recompiles
# ``jaxviz.recompiles`` learns about every trace, lowering and backend compile through
# ``jax.monitoring`` (public), but the events carry only a name. The arguments of the call
# being compiled are read, at miss time only, from JAX's own frames on the stack.

# The names jax.monitoring uses for the three stages (record_scalar at the start with the
# start time, record_event_duration_secs at the end; both with ``fun_name=``).
# (JAX's strings, the same from 0.6 to main, are the fallback.)
_NO_STAGE = "the recompile tracker misses this stage"
TRACE_EVENT: str = _private(_dispatch, "JAXPR_TRACE_EVENT", without=_NO_STAGE) \
    or "/jax/core/compile/jaxpr_trace_duration"
LOWER_EVENT: str = _private(_dispatch, "JAXPR_TO_MLIR_MODULE_EVENT", without=_NO_STAGE) \
    or "/jax/core/compile/jaxpr_to_mlir_module_duration"
COMPILE_EVENT: str = _private(_dispatch, "BACKEND_COMPILE_EVENT", without=_NO_STAGE) \
    or "/jax/core/compile/backend_compile_duration"

_NO_CALL = "recompiles are reported without the call's arguments"
# (fun, ji, args, kwargs): tracing
_INFER_PARAMS_CODE = getattr(_private(_pjit, "_infer_params", without=_NO_CALL), "__code__", None)
# The frame that lowers, compiles and runs a jit call on a cache miss, below
# ``cache_miss``: from JAX 0.9 ``_run_python_pjit(p, args_flat, fun, args, kwargs)``, whose
# caller holds ``jit_info``; in JAX 0.6 to 0.8 ``_python_pjit_helper(fun, jit_info, *args,
# **kwargs)``, which also calls ``_infer_params`` (its caller when tracing a call).
_RUN_PYTHON_PJIT_CODE = getattr(_private(_pjit, "_run_python_pjit", "_python_pjit_helper", without=_NO_CALL),
                                "__code__", None)
_CALL_PATH_NAMES = ("cache_miss", *[c.co_name for c in [_RUN_PYTHON_PJIT_CODE] if c])  # not .trace()/.lower()
_INFER_PARAMS_CACHED = _private(_pjit, "_infer_params_cached",
                                without="compiles from before the watch are not listed")
_JAX_DIRS = tuple(
    os.path.dirname(os.path.abspath(m.__file__)) + os.sep
    for m in (__import__("jax"), __import__("jaxlib"))
)


def is_jax_file(filename: str) -> bool:
    """Source of JAX or jaxlib itself."""
    return filename.startswith(_JAX_DIRS)


def jax_public_module(filename: str) -> str | None:
    """``jax.experimental.ode`` for a file of JAX's own public modules; None for its
    internals (``jax/_src``), jaxlib and anything else."""
    root = _JAX_DIRS[0]
    if not filename.startswith(root) or filename.startswith(os.path.join(root, "_src") + os.sep):
        return None
    relative = os.path.splitext(filename[len(root):])[0].split(os.sep)
    if relative[-1] == "__init__":
        relative.pop()
    return ".".join(["jax", *relative])


# The functions of JAX's differentiation API that a traceback passes through where
# ``grad``, ``vjp``, ``jvp``, ``linearize``, ``jacrev``/``jacfwd`` or ``hessian`` was called
# (all in the module that defines ``jax.vjp``); a library applying one is found there.
_API_FILE = getattr(getattr(inspect.unwrap(jax.vjp), "__code__", None), "co_filename", "<no jax api module>")
_DIFFERENTIATION_ENTRIES = frozenset({"grad_f", "value_and_grad_f", "jacfun", "vjp", "_vjp", "jvp", "_jvp",
                                      "linearize", "hessian"})


def _transformation_codes() -> dict[int, tuple[Any, str]]:
    """The code of the functions ``jax.vmap``, ``jax.grad``, ``jax.value_and_grad``,
    ``jax.jacfwd`` and ``jax.jacrev`` return (``vmap_f``, ``grad_f``, ``jacfun``…), by id,
    each with the transformation's name (``value_and_grad``'s is ``grad``)."""
    found: dict[int, tuple[Any, str]] = {}
    for api, name in ((jax.vmap, "vmap"), (jax.grad, "grad"), (jax.value_and_grad, "grad"),
                      (jax.jacfwd, "jacfwd"), (jax.jacrev, "jacrev")):
        outer = getattr(inspect.unwrap(api), "__code__", None)
        for const in outer.co_consts if outer is not None else ():
            if inspect.iscode(const) and not const.co_name.startswith("<"):
                found[id(const)] = (const, name)
    return found


_TRANSFORMATION_CODES = _transformation_codes()


def transformation_api(code: Any) -> str | None:
    """``"vmap"``, ``"grad"``, ``"jacfwd"`` or ``"jacrev"`` for the code of the function
    those return (a frame of it lies between the transformed function's call and the
    user's line that called the transformed function); else None."""
    known = _TRANSFORMATION_CODES.get(id(code))
    return known[1] if known is not None and known[0] is code else None


def is_differentiation_entry(code: Any) -> bool:
    """Whether ``code`` is a frame of JAX's differentiation API (``jax.grad``'s
    ``grad_f``, ``jax.vjp``…): what lies inside it in a traceback runs in the pass it
    makes, what lies outside made the call that differentiates."""
    return code.co_name in _DIFFERENTIATION_ENTRIES and code.co_filename == _API_FILE


@dataclass(frozen=True, slots=True)
class JitCall:
    """The call of a ``jax.jit``-ed function that JAX is tracing/lowering/compiling now."""

    fun: Callable[..., Any]  # the Python callable that was jitted
    jit_info: Any  # opaque; the same object for the same jit object (compare with ``is``)
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    static_argnums: tuple[int, ...]
    static_argnames: tuple[str, ...]
    signature: Any  # inspect.Signature | None, as JAX computed it for the function
    aot: bool  # ``.trace()`` / ``.lower()`` rather than a call
    caller: Any  # the first frame outside JAX above the call (a frame object; don't keep it)
    donate_argnums: tuple[int, ...] = ()  # resolved by JAX (donate_argnames included)
    donate_argnames: tuple[str, ...] = ()
    transform: str = "jit"  # or "pmap": a jit JAX made for the user's pmap call
    trace_key: Any = None  # opaque: the call's key in JAX's tracing cache, where it is read


def _jit_info_fields(ji: Any) -> tuple[tuple[int, ...], tuple[str, ...], Any]:
    return tuple(ji.static_argnums), tuple(ji.static_argnames), ji.fun_signature


def _jit_donation(ji: Any) -> tuple[tuple[int, ...], tuple[str, ...]]:
    return tuple(ji.donate_argnums), tuple(ji.donate_argnames)


def _outside_jax(frame: Any) -> Any:
    while frame is not None and is_jax_file(frame.f_code.co_filename):
        frame = frame.f_back
    return frame


def _pmap_codes() -> tuple[Any, Any]:
    """The code of ``jax.pmap``'s call wrapper (``wrapped(*args, **kwargs)``) and of its
    ``infer_params``: from JAX 0.9 ``pmap`` is a ``jit`` of a ``shard_map`` of JAX's own
    ``_fun``, called from ``wrapped`` with the user's arguments."""
    pmap = (_private(_pmap_module, "pmap", without="a pmap's recompiles are reported without its call")
            if _pmap_module is not None else None)
    if pmap is None:
        return None, None
    consts = inspect.unwrap(pmap).__code__.co_consts
    codes = {c.co_name: c for c in consts if inspect.iscode(c)}
    return codes.get("wrapped"), codes.get("infer_params")


_PMAP_WRAPPED_CODE, _PMAP_INFER_PARAMS_CODE = _pmap_codes()


def _pmap_call(frame: Any, jit_args: Any) -> JitCall | None:
    """The user's ``pmap`` call, when ``frame`` (JAX's, above a jit call given
    ``jit_args``) is the jit that ``pmap`` made: the user's function and arguments, its
    ``static_broadcasted_argnums`` static. (Other jits run inside pmap's, e.g. to shard
    its inputs: not that one.)"""
    while frame is not None and is_jax_file(frame.f_code.co_filename):
        if frame.f_code is _PMAP_WRAPPED_CODE:
            break
        frame = frame.f_back
    else:
        return None
    try:
        flat = frame.f_locals.get("dyn_args_flat")
        if flat is None or len(flat) != len(jit_args) or any(a is not b for a, b in zip(flat, jit_args)):
            return None
        return _pmap_call_of(frame)
    except (AttributeError, KeyError, TypeError, ValueError):  # another JAX: no pmap call
        return None


def _pmap_call_of(frame: Any) -> JitCall:
    infer = frame.f_locals["infer_params"]
    cells = dict(zip(_PMAP_INFER_PARAMS_CODE.co_freevars, infer.__closure__))
    wrapped_fun = cells["wrapped_fun"].cell_contents
    fun = getattr(wrapped_fun, "f", None)
    if not callable(fun):
        raise TypeError("pmap's wrapped function holds no callable")
    statics = tuple(cells["static_broadcasted_tuple"].cell_contents)
    donated = tuple(cells["donate_tuple"].cell_contents)
    try:
        sig = inspect.signature(fun)
    except (TypeError, ValueError):
        sig = None
    loc = frame.f_locals
    return JitCall(fun, infer, tuple(loc["args"]), dict(loc["kwargs"]), statics, (), sig, False,
                   _outside_jax(frame.f_back), donated, (), transform="pmap")


def current_jit_call(max_depth: int = 80) -> JitCall | None:
    """From inside a ``jax.monitoring`` callback: the jit call being traced (the trace
    event) or lowered/compiled (the lower and compile events of a call), or None (e.g. AOT
    ``Lowered.compile()``, or a jitted function run under ``grad`` outside ``jit``).

    Reads the locals of ``jax._src.pjit._infer_params`` / ``_run_python_pjit`` (JAX < 0.9:
    ``_python_pjit_helper``) frames.
    """
    frame = sys._getframe(1)
    depth = 0
    while frame is not None and depth < max_depth:
        code = frame.f_code
        if code is _INFER_PARAMS_CODE or code is _RUN_PYTHON_PJIT_CODE:
            found = (_pmap_call(frame.f_back, frame.f_locals.get("args", ()))
                     if _PMAP_WRAPPED_CODE is not None else None)
            if found is not None:
                return found
        if code is _INFER_PARAMS_CODE:
            loc = frame.f_locals
            nums, names, sig = _jit_info_fields(loc["ji"])
            back = frame.f_back
            aot = back is None or back.f_code.co_name not in _CALL_PATH_NAMES
            key = (loc["arg_signature"], loc["avals"]) if "avals" in loc else None
            return JitCall(loc["fun"], loc["ji"], tuple(loc["args"]), dict(loc["kwargs"]),
                           nums, names, sig, aot, _outside_jax(back), *_jit_donation(loc["ji"]),
                           trace_key=key)
        if code is _RUN_PYTHON_PJIT_CODE:
            loc = frame.f_locals
            back = frame.f_back  # cache_miss, a closure over fun and jit_info
            ji = loc.get("jit_info")  # JAX < 0.9: an argument
            if ji is None and back is not None:
                ji = back.f_locals.get("jit_info")
            if ji is None:
                return None
            nums, names, sig = _jit_info_fields(ji)
            return JitCall(loc["fun"], ji, tuple(loc["args"]), dict(loc["kwargs"]),
                           nums, names, sig, False, _outside_jax(back), *_jit_donation(ji))
        frame = frame.f_back
        depth += 1
    return None


def earlier_jit_calls(call: JitCall) -> list[JitCall]:
    """The earlier calls of the same jitted function (the same Python function, static
    argument numbers and names) that JAX's tracing cache holds a trace of, in no
    particular order, rebuilt from the cache's keys: static arguments as they were, arrays
    as ``jax.ShapeDtypeStruct`` (shape, dtype, weak type). So jaxviz knows what a function
    compiled while no watch was listening. ``call`` itself is left out by its key, read by
    ``current_jit_call`` at the trace; a call without one (a compile with no new trace)
    gets none.

    Reads the keys of ``jax._src.pjit._infer_params_cached`` (a ``weakref_lru_cache``:
    ``(function ref, trace context, (PjitInfo, ArgumentSignature, avals, mesh), {})``),
    from the main thread only: read while other threads fill the cache, it can deadlock
    (seen on jaxlib 0.6.2 with three threads compiling at once)."""
    if threading.current_thread() is not threading.main_thread():
        return []
    keys = []
    for key in _INFER_PARAMS_CACHED.cache_keys() if _INFER_PARAMS_CACHED is not None else ():
        try:
            ref, _, (ji, arg_signature, avals, _mesh), _ = key
        except (TypeError, ValueError):
            continue
        if ref() is call.fun and _jit_info_fields(ji)[:2] == (call.static_argnums, call.static_argnames):
            keys.append((arg_signature, avals))
    if call.trace_key is None:
        return []
    keys = [k for k in keys if not _same_trace_key(k, call.trace_key)]
    found = []
    for arg_signature, avals in keys:
        rebuilt = _rebuilt_arguments(arg_signature, avals, call.static_argnums)
        if rebuilt is not None:
            found.append(dataclasses.replace(call, args=rebuilt[0], kwargs=rebuilt[1], caller=None,
                                             trace_key=(arg_signature, avals)))
    return found


def _same_trace_key(a: tuple[Any, Any], b: tuple[Any, Any]) -> bool:
    try:
        return bool(a[0] == b[0] and a[1] == b[1])
    except Exception:  # a static argument whose __eq__ raises
        return a is b


def _rebuilt_arguments(signature: Any, avals: tuple[Any, ...], static_argnums: tuple[int, ...]
                       ) -> tuple[tuple[Any, ...], dict[str, Any]] | None:
    """(args, kwargs) of a jit call from JAX's ``ArgumentSignature`` and flat avals."""
    statics = list(signature.static_args)
    static_names = list(signature.static_arg_names)
    treedefs = list(signature.dynamic_arg_treedefs)
    dynamic_names = list(signature.dynamic_arg_names)
    n_static_positional = len(statics) - len(static_names)
    n_positional = n_static_positional + len(treedefs) - len(dynamic_names)
    leaves = [jax.ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type) for a in avals]
    dynamic = []
    for treedef in treedefs:
        n = treedef.num_leaves
        if n > len(leaves):
            return None
        dynamic.append(jax.tree_util.tree_unflatten(treedef, leaves[:n]))
        leaves = leaves[n:]
    numbers = sorted({i % n_positional if i < 0 else i for i in static_argnums} & set(range(n_positional))) \
        if n_positional else []
    if len(numbers) != n_static_positional:
        return None
    positional_statics, keyword_statics = iter(statics[:n_static_positional]), statics[n_static_positional:]
    positional_dynamic = iter(dynamic[:len(dynamic) - len(dynamic_names)])
    args = tuple(next(positional_statics) if i in numbers else next(positional_dynamic)
                 for i in range(n_positional))
    kwargs = dict(zip(static_names, keyword_statics))
    kwargs.update(zip(dynamic_names, dynamic[len(dynamic) - len(dynamic_names):]))
    return args, kwargs


@dataclass(frozen=True)
class DistributedProcess:
    """This process under ``jax.distributed`` and the client of its coordination service
    (``key_value_set``, ``blocking_key_value_get``, ...), the one JAX keeps."""

    client: Any
    process_id: int
    num_processes: int


_GLOBAL_STATE = _private(_distributed, "global_state",
                         without="processes under jax.distributed are not told apart")


def distributed_process() -> DistributedProcess | None:
    """This process in JAX's distributed runtime, or None when ``jax.distributed`` is not
    initialized. Reads ``jax._src.distributed.global_state``."""
    state = _GLOBAL_STATE
    client = getattr(state, "client", None)
    if client is None:
        return None
    return DistributedProcess(client, int(state.process_id), int(state.num_processes))


def _listener_kept(callback: Callable[..., Any]) -> None:
    """Unregistering on a JAX that cannot: the listener stays registered."""


# jax.monitoring can unregister a listener from JAX 0.8 (public); before, only its private
# twins can.
_NO_UNREGISTER = "jaxviz's jax.monitoring listeners stay registered after %unload_ext"
unregister_scalar_listener: Callable[[Callable[..., Any]], None] = (
    getattr(jax.monitoring, "unregister_scalar_listener", None)
    or _private(_monitoring, "_unregister_scalar_listener_by_callback", without=_NO_UNREGISTER)
    or _listener_kept)
unregister_event_duration_listener: Callable[[Callable[..., Any]], None] = (
    getattr(jax.monitoring, "unregister_event_duration_listener", None)
    or _private(_monitoring, "_unregister_event_duration_listener_by_callback", without=_NO_UNREGISTER)
    or _listener_kept)


def monitoring_listener_counts() -> dict[str, int]:
    """How many jax.monitoring listeners of each kind are registered (for tests: the
    public module can register and unregister, not list)."""
    return {"event": len(_monitoring.get_event_listeners()),
            "duration": len(_monitoring.get_event_duration_listeners()),
            "scalar": len(_monitoring.get_scalar_listeners())}


# ---------------------------------------------------------------------- backends
_BACKENDS_ARE_INITIALIZED = _private(_xla_bridge, "backends_are_initialized",
                                     without="device reports may start JAX's backends")


def backends_initialized() -> bool | None:
    """Whether JAX has already created its backends (None if we cannot tell). Asking
    ``jax.devices()`` before that would start them, and on a GPU take its memory."""
    initialized = _BACKENDS_ARE_INITIALIZED
    return bool(initialized()) if callable(initialized) else None


# ---------------------------------------------------------------------- Pallas
def pallas_grid(params: dict[str, Any]) -> tuple[int, ...] | None:
    """The grid a ``pallas_call`` equation runs its kernel over (``(2, 2)``: four
    instances), from its ``grid_mapping`` (Pallas' own class); None where a dimension is
    only known at run time or the params hold no grid."""
    grid = getattr(params.get("grid_mapping"), "grid", None)
    if not isinstance(grid, tuple) or not all(isinstance(d, int) for d in grid):
        return None
    return grid


# ---------------------------------------------------------------------- transformations
def transform_name(fun: Any) -> str | None:
    """``"grad"`` for what ``jax.grad(f)`` returned (``"vmap"``, ``"value_and_grad"``, …),
    or None: JAX names its transformations' inner functions ``grad_f``, ``vmap_f``, …, and
    wraps them in its traceback filter, which holds them in its closure."""
    for _ in range(3):
        code = getattr(fun, "__code__", None)
        if code is None or not is_jax_file(code.co_filename):
            return None
        if code.co_name.endswith("_f") and code.co_name != "_f":
            return code.co_name[:-2]
        cells = getattr(fun, "__closure__", None) or ()
        inner = [c.cell_contents for c in cells if callable(_cell(c))]
        fun = next((f for f in inner if getattr(f, "__code__", None) is not None), None)
    return None


def _cell(cell: Any) -> Any:
    try:
        return cell.cell_contents
    except ValueError:  # an empty cell
        return None


# ---------------------------------------------------------------------- cache clearing
class _CacheClearNotice:
    """Registered with JAX's own cache registry (``util.register_cache``), which
    ``jax.clear_caches()`` empties cache by cache: its ``cache_clear`` is JAX telling us,
    from the user's call (its caller's frames lead to the user's line). Nothing of JAX
    is replaced."""

    def __init__(self, callback: Callable[[Any], None]) -> None:
        self.callback = callback

    def cache_clear(self) -> None:
        try:
            self.callback(sys._getframe(1))
        except Exception:  # never break jax.clear_caches()
            pass

    def cache_info(self) -> None:
        return None

    def cache_keys(self) -> tuple[()]:
        return ()


_CLEAR_NOTICES: list[_CacheClearNotice] = []  # JAX's registry holds them weakly


def on_caches_cleared(callback: Callable[[Any], None]) -> None:
    """``callback(frame)`` each time ``jax.clear_caches()`` runs (``frame``: JAX's, below
    the user's call)."""
    register = getattr(_util, "register_cache", None)
    if register is None:  # JAX 0.6: no cache registry, so clears go unnoticed
        return
    notice = _CacheClearNotice(callback)
    _CLEAR_NOTICES.append(notice)
    register(notice, "jaxviz: notices jax.clear_caches()")


def off_caches_cleared(callback: Callable[[Any], None]) -> None:
    """Stop calling ``callback`` on ``jax.clear_caches()``: JAX's registry holds our notice
    weakly, so dropping it takes it out of JAX's registry."""
    _CLEAR_NOTICES[:] = [n for n in _CLEAR_NOTICES if n.callback is not callback]


# Whether ``on_caches_cleared`` can hear ``jax.clear_caches()`` (JAX 0.7 and later).
CACHE_CLEARS_HEARD = hasattr(_util, "register_cache")


def jit_cache_size(jitted: Any) -> int | None:
    """How many compiled entries a ``jax.jit`` function holds now (0 after its
    ``clear_cache()``), or None when it is not one."""
    size = getattr(jitted, "_cache_size", None)
    try:
        value = size() if callable(size) else None
    except Exception:
        return None
    return value if isinstance(value, int) else None


# A jitted function called under an eager transformation (``vmap``, ``grad`` outside
# ``jit``) gets tracers; JAX compiles the transformed program for the values under them.
_TRANSFORM_OF_TRACER = {"BatchTracer": "vmap", "JVPTracer": "jvp", "LinearizeTracer": "jvp"}


def eager_transform(tracer: Any) -> tuple[tuple[str, ...], Any] | None:
    """(the transformations, outermost first, and the value the compiled program is
    given) for a tracer of eager ``vmap``/``jvp`` (a vmapped array's full batch, the
    primal of a jvp), or None when the tracer is staged into a trace (``jit``)."""
    kinds: list[str] = []
    for _ in range(32):
        if not isinstance(tracer, Tracer):
            return tuple(kinds), tracer
        kind = _TRANSFORM_OF_TRACER.get(type(tracer).__name__)
        if kind is None:
            return None
        if type(getattr(tracer, "tangent", None)).__name__ == "BatchTracer":
            kind = "jvp with batched tangents"  # jacfwd: another program than jvp's
        inner = next((getattr(tracer, a) for a in ("val", "primal") if hasattr(tracer, a)), None)
        if inner is None:
            return None
        kinds.append(kind)
        tracer = inner
    return None


# Said once, at import: the features above already go without what is missing.
for _line in missing_internals():
    warnings.warn(_line, JaxInternalsWarning, stacklevel=2)
