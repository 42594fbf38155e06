"""The ``jax.monitoring`` listeners (registered while a watch is active) and the
dispatcher that turns JAX's trace/lower/compile events into ``CompileEvent``s for every
active watch; the hooks other modules subscribe to (``SUBSCRIBERS``: events as JSON;
``COMPILE_LISTENERS``: each compile with its call).

The dispatcher (``DISPATCHER``) owns the routing and what it knows of an event while JAX
is still working on it (the watches that saw it start, the function object it compiled);
a watch is a ``Receiver``: it is told of each event (``record``), each stage's time
(``stage_done``) and each update (``notify``), through those public methods only."""

from __future__ import annotations

import dataclasses
import sys
import threading
import warnings
from collections.abc import Callable
from typing import Any, Protocol

import jax

from .. import _jax_internals as internals
from ..adapters import equinox, wrappers
from ..call_scopes import PACKAGE_DIR, is_user_file
from ..text import text_plain
from .causes import Cause
from .events import CompileEvent
from .history import (
    FunctionHistory,
    ObjectHistory,
    explain_compile,
    function_history,
    learn_from_jax_cache,
    same_key,
)
from .processes import compare_compile
from .signature import (
    MAX_CAUSES,
    FunctionInfo,
    RecompileWarning,
    Signature,
    Site,
    describe_function,
    is_eager_transform,
    is_internal,
    signature_of,
    site_of_frame,
)
from .stale import track_globals
from .suggestions import suggest_fix


class Receiver(Protocol):
    """What the dispatcher needs of a watch (``jaxviz.recompiles.watch.Watch``)."""

    include_jax: bool

    def record(self, event: CompileEvent, tracked: int | None) -> None: ...

    def stage_done(self, event: CompileEvent, stage: str, seconds: float) -> None: ...

    def notify(self, event: CompileEvent | None) -> None: ...

    def warn_once(self, text: str) -> None: ...


# Who hears of each event, as JSON: ``subscriber(kind, payload)``, kind "compile" or
# "stale", on the compiling thread (the JupyterLab panel's comm, ``jaxviz.ipython.bridge``,
# subscribes while the extension is loaded). A subscriber that raises is skipped.
SUBSCRIBERS: list[Callable[[str, dict[str, Any]], None]] = []


def publish(kind: str, payload: dict[str, Any]) -> None:
    for subscriber in list(SUBSCRIBERS):
        try:
            subscriber(kind, payload)
        except Exception:  # never break the user's compile
            pass


# ====================================================================== the dispatcher
class _Pending:
    """An event being traced/lowered/compiled on one thread (``event`` None: ignored, e.g.
    JAX's own eager operations)."""

    __slots__ = ("event", "name", "module", "stage", "t0", "deferred")

    def __init__(self, event: CompileEvent | None, name: str, stage: str = "trace",
                 t0: float = 0.0) -> None:
        self.event = event
        self.name = name  # fun_name of the trace event
        self.module = f"jit({name})"  # fun_name of its lowering/compile events
        self.stage = stage
        self.t0 = t0  # wall clock at the start
        self.deferred = False  # a trace whose event is made when it ends


class _InFlight:
    """What the dispatcher knows of an event until JAX is done with it: the watches that
    saw it start, and the function object it compiled (kept off the event, which a log
    keeps after its watches and objects are gone)."""

    __slots__ = ("watches", "obj")

    def __init__(self, watches: list[Receiver], obj: ObjectHistory | None) -> None:
        self.watches = watches
        self.obj = obj


_NEXT = {"trace": ("lower", "compile"), "lower": ("compile",), "compile": ()}


class Dispatcher:
    """Owns the ``jax.monitoring`` listeners (registered while any watch is active) and
    fans each event out to every active watch."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.watches: list[Receiver] = []
        self.in_flight: dict[int, _InFlight] = {}  # id(event) → its watches and object
        self.registered = False
        self.pending: dict[int, list[_Pending]] = {}  # per thread, most recent last
        # Per thread: the last traced recompile (JAX's name, the user's line, its causes).
        # A compile with no call to read right after it, from the same line and of the same
        # function, is another pass of that call (grad's backward) and shares its causes.
        self.last_recompile: dict[str, tuple[str, Site | None, list[Cause]]] = {}
        self.internal_errors = 0

    # ------------------------------------------------------------ watches
    def attach(self, w: Receiver) -> None:
        with self.lock:
            if w not in self.watches:
                self.watches.append(w)
            if not self.registered:
                jax.monitoring.register_scalar_listener(_on_scalar)
                jax.monitoring.register_event_duration_secs_listener(_on_duration)
                self.registered = True

    def detach(self, w: Receiver) -> None:
        with self.lock:
            if w in self.watches:
                self.watches.remove(w)
            if not self.watches and self.registered:
                _unregister(internals.unregister_scalar_listener, _on_scalar)
                _unregister(internals.unregister_event_duration_listener, _on_duration)
                self.registered = False
                for stack in self.pending.values():
                    for p in stack:
                        if p.event is not None:
                            self._finish(p.event)
                self.pending.clear()

    # ------------------------------------------------------------ stages
    def start(self, stage: str, jax_name: str, t0: float) -> None:
        stack = self.pending.setdefault(threading.get_ident(), [])
        if stage != "trace":  # part of a pending trace, or a compile with no new trace
            for p in reversed(stack):
                if p.module == jax_name and stage in _NEXT[p.stage]:
                    p.stage = stage
                    return
            name = jax_name[4:-1] if jax_name.startswith("jit(") and jax_name.endswith(")") else jax_name
            p = self._new(name, internals.current_jit_call(), stage, t0)
            p.module = jax_name
        else:
            # JAX's trace timer is already running: do the work when it stops, so that our
            # cost is not counted as tracing (JAX's frames are still there then).
            p = _Pending(None, jax_name, stage, t0)
            p.deferred = True
        stack.append(p)
        while len(stack) > 4:  # e.g. AOT .trace() never lowered
            old = stack.pop(0)
            if old.event is not None:
                self._finish(old.event)

    def end(self, stage: str, jax_name: str, seconds: float, exc: BaseException | None) -> None:
        stack = self.pending.get(threading.get_ident())
        if not stack:
            return
        for i in range(len(stack) - 1, -1, -1):
            p = stack[i]
            if p.stage == stage and (p.name if stage == "trace" else p.module) == jax_name:
                break
        else:
            return
        if p.deferred:
            p.deferred = False
            p.event = self._new(p.name, internals.current_jit_call(), stage, p.t0).event
        # A trace we ignore inside another trace (jnp's own jitted helpers, which JAX 0.6
        # traces inside the user's) is done with: left pending, it would push the user's
        # trace out. One that is not nested (jaxviz's own) stays, to ignore its compile too.
        nested = any(q.stage == "trace" for q in stack[:i])
        finished = (stage == "compile" or exc is not None
                    or (stage == "trace" and p.event is None and nested))
        if finished:
            del stack[i]
            if not stack:
                self.pending.pop(threading.get_ident(), None)
        event = p.event
        if event is None:
            return
        event.durations[stage] = seconds
        watches = self._watches_of(event)
        for w in watches:
            w.stage_done(event, stage, seconds)
        if exc is not None:
            text = str(exc).strip().splitlines()
            event.error = f"{type(exc).__name__}: {text[0] if text else ''}"[:300]
            obj = self.object_of(event)
            if obj is not None and event.signature is not None:
                obj.last_error = (event.signature, type(exc).__name__)
                if obj.signatures and obj.signatures[-1] is event.signature:
                    obj.signatures.pop()
            for w in watches:
                w.stage_done(event, "error", 0.0)
        if finished:
            self._finish(event)
        else:
            for w in watches:
                w.notify(event)

    # ------------------------------------------------------------ events
    def object_of(self, event: CompileEvent) -> ObjectHistory | None:
        """The function object an event compiled, while JAX is still working on it."""
        flight = self.in_flight.get(id(event))
        return flight.obj if flight is not None else None

    def _new(self, jax_name: str, call: internals.JitCall | None, stage: str,
             t0: float) -> _Pending:
        watches = list(self.watches)
        include_jax = any(w.include_jax for w in watches)
        if call is not None:
            caller_file = call.caller.f_code.co_filename if call.caller is not None else ""
            if caller_file.startswith(PACKAGE_DIR):  # jaxviz's own tracing (%%jaxpr)
                return _Pending(None, jax_name, stage)
            if not include_jax and is_internal(call.fun):  # jnp.sin, eager primitives
                return _Pending(None, jax_name, stage)
            site = site_of_frame(call.caller, call.fun)
        else:
            site = site_of_frame(sys._getframe(2))
            if site is None and not include_jax:
                return _Pending(None, jax_name, stage)
        if not watches:
            return _Pending(None, jax_name, stage)
        thread = threading.current_thread().name

        def untraced(fh: FunctionHistory, info: FunctionInfo, note: str,
                     causes: list[Cause] | None = None) -> _Pending:
            """A compile without a call we can read (no signature; the causes of the call
            it is another pass of, if any)."""
            fh.count += 1
            event = CompileEvent(info, site, None, list(causes or []), fh.count, t0, kind="compile",
                                 thread=thread, jax_name=jax_name, note=note)
            return self._publish_new(event, jax_name, stage, watches, None, None)

        if call is None:
            info = FunctionInfo(jax_name, jax_name, None)
            fh = function_history(("<compile>", jax_name), info)
            same = self.last_recompile.get(thread)
            if same is not None and same[0] == jax_name and same[1] == site:
                return untraced(fh, info, _SAME_CALL, same[2])
            return untraced(fh, info, _NO_TRACE)
        jax_call = call
        call, is_static_leaf = _through_wrapper(call)
        key, info, _ = describe_function(call.fun, call.transform)
        fh = function_history(key, info)
        if _has_tracers(call) and not is_eager_transform(call):  # staged into another trace
            return untraced(fh, info, _UNDER_TRANSFORM)
        obj, previous = fh.object_for(call.fun, (call.static_argnums, call.static_argnames))
        try:
            sig: Signature | None = signature_of(call, is_static_leaf)
        except Exception as exc:
            self.internal_errors += 1
            sig, unreadable = None, f"{type(exc).__name__}: {exc}"[:120]
        causes: list[Cause] = []
        if sig is not None and previous is None and not obj.signatures and obj.last_error is None:
            causes = learn_from_jax_cache(fh, obj, jax_call, sig, user_words=jax_call is call)
        if not causes:
            causes = (explain_compile(fh, obj, previous, sig, call) if sig is not None
                      else [Cause("unknown", info.name, unreadable, detail="unreadable")])
        more = max(0, len(causes) - MAX_CAUSES)
        causes = causes[:MAX_CAUSES]
        fh.count += 1
        kind = "aot" if call.aot else ("call" if stage == "trace" else "compile")
        event = CompileEvent(info, site, sig, causes, fh.count, t0, kind=kind,
                             thread=thread, more_causes=more, jax_name=jax_name)
        if fh.count > 1 and causes:
            self.last_recompile[thread] = (jax_name, site, causes)
        else:
            self.last_recompile.pop(thread, None)
        if sig is not None:
            obj.note(causes)
            obj.signatures.append(sig)
            if obj.last_error is not None and same_key(obj.last_error[0], sig):
                obj.last_error = None
        event.suggestion = suggest_fix(event, obj)
        obj.last_site = site
        tracked = track_globals(call.fun, info.name) if stage == "trace" else None
        _call_compile_listeners(event, call)
        pending = self._publish_new(event, jax_name, stage, watches, tracked, obj)
        if sig is not None:
            _tell_process_mismatches(event, watches)
        return pending

    def _publish_new(self, event: CompileEvent, jax_name: str, stage: str, watches: list[Receiver],
                     tracked: int | None, obj: ObjectHistory | None) -> _Pending:
        self.in_flight[id(event)] = _InFlight(watches, obj)
        for w in watches:
            w.record(event, tracked)
            w.notify(event)
        return _Pending(event, jax_name, stage)

    def _watches_of(self, event: CompileEvent) -> list[Receiver]:
        flight = self.in_flight.get(id(event))
        return flight.watches if flight is not None else []

    def _finish(self, event: CompileEvent) -> None:
        if event.done:
            return
        event.done = True
        flight = self.in_flight.pop(id(event), None)  # a logged event keeps neither
        for w in flight.watches if flight is not None else []:
            w.notify(event)
        publish("compile", event.to_json())


def _tell_process_mismatches(event: CompileEvent, watches: list[Receiver]) -> None:
    """Under ``jax.distributed``: the processes that compiled another program than process
    0, in every watch's log and as a warning at the user's call."""
    try:
        found = compare_compile(event)
    except Exception:  # never break the user's compile
        DISPATCHER.internal_errors += 1
        return
    for mismatch in found:
        text = mismatch.text()
        for w in watches:
            w.warn_once(text)
        site = event.call_site
        try:
            if site is not None:
                warnings.warn_explicit(text_plain(text), RecompileWarning, site.file, site.line)
            else:
                warnings.warn(text_plain(text), RecompileWarning, stacklevel=2)
        except Exception:  # warnings turned into errors must not break the compile
            pass


# ====================================================================== compile listeners
# Other modules keep what they need of each compile (jaxviz.diff: the function and its
# abstract arguments, to re-trace it later). ``listener(event, call)`` runs on the compiling
# thread, on a cache miss only, for every compile of a user function the tracker reads
# while a watch is active; ``call`` (the arguments, a frame) is valid only during the call.
COMPILE_LISTENERS: list[Callable[[CompileEvent, internals.JitCall], None]] = []


def _call_compile_listeners(event: CompileEvent, call: internals.JitCall) -> None:
    for listener in list(COMPILE_LISTENERS):
        try:
            listener(event, call)
        except Exception:  # never break the user's compile
            DISPATCHER.internal_errors += 1


_NO_TRACE = ("without a new trace (a transformation such as grad of a jitted function "
             "outside jit, or an ahead-of-time compile)")


_SAME_CALL = ("without a new trace: another pass of the call just recompiled (the backward "
              "pass of grad outside jit), for the same reason")


_UNDER_TRANSFORM = ("without a new trace: it was called under a transformation (grad, vmap, "
                    "...) outside jit, so JAX compiles the transformed programs separately; "
                    "jit the whole transformed function to compile once")


def _is_user_frame(frame: Any) -> bool:
    return is_user_file(frame.f_code.co_filename)


def _through_wrapper(call: internals.JitCall
                     ) -> tuple[internals.JitCall, Callable[[Any], bool] | None]:
    """A call made through a jit-like wrapper (``eqx.filter_jit``, ``nnx.jit``) as the
    user made it: their function and arguments (and the leaves the wrapper holds static),
    so that causes name ``model.step_count``, not ``static`` or ``dynamic_nodonate``."""
    try:
        user = wrappers.user_call(call.caller, _is_user_frame)
    except Exception:  # an unexpected wrapper: explain the call JAX sees
        return call, None
    if user is None:
        return call, None
    is_static_leaf = equinox.is_static_leaf if equinox.is_filter_jit(user.wrapper) else None
    # A wrapper that passes the arguments through one for one (nnx.jit) keeps jax.jit's
    # static and donated ones; one that regroups them (filter_jit) says what it holds static.
    one_for_one = is_static_leaf is None and len(user.args) == len(call.args) \
        and set(user.kwargs) == set(call.kwargs)
    kept = {f: getattr(call, f) for f in ("static_argnums", "static_argnames", "donate_argnums",
                                           "donate_argnames")} if one_for_one else \
        dict.fromkeys(("static_argnums", "static_argnames", "donate_argnums", "donate_argnames"), ())
    return dataclasses.replace(call, fun=user.fun, args=user.args, kwargs=user.kwargs,
                               signature=user.signature, caller=user.caller,
                               **kept), is_static_leaf


def _has_tracers(call: internals.JitCall) -> bool:
    try:
        leaves = jax.tree_util.tree_leaves((call.args, call.kwargs))
    except Exception:
        return False
    return any(internals.is_tracer(v) for v in leaves)


DISPATCHER = Dispatcher()
_STAGES = {internals.TRACE_EVENT: "trace", internals.LOWER_EVENT: "lower",
           internals.COMPILE_EVENT: "compile"}


def _unregister(fn: Callable[[Any], None], callback: Any) -> None:
    try:
        fn(callback)
    except (AssertionError, ValueError):
        pass


def _on_scalar(event: str, value: float, **kwargs: Any) -> None:
    stage = _STAGES.get(event)
    if stage is None:
        return
    try:
        with DISPATCHER.lock:
            DISPATCHER.start(stage, str(kwargs.get("fun_name", "?")), float(value))
    except Exception:  # never break the user's compile
        DISPATCHER.internal_errors += 1


def _on_duration(event: str, duration_secs: float, **kwargs: Any) -> None:
    stage = _STAGES.get(event)
    if stage is None:
        return
    exc = sys.exc_info()[1]  # set while JAX's timer exits because the stage raised
    try:
        with DISPATCHER.lock:
            DISPATCHER.end(stage, str(kwargs.get("fun_name", "?")), duration_secs, exc)
    except Exception:
        DISPATCHER.internal_errors += 1


def active_watches() -> list[Receiver]:
    return list(DISPATCHER.watches)
