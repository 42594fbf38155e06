"""Kernel side of the jaxviz JupyterLab panel: a comm target named ``"jaxviz"``.

The magics report programs with :func:`publish_program`; the tracker's compile and stale
events arrive through ``jaxviz.recompiles.SUBSCRIBERS``, which :func:`register` joins and
:func:`unregister` leaves. The panel (``labextension/``) gets a snapshot when it connects
and every event after that, pushed as it happens.
Nothing polls and nothing is executed in the user's namespace on the panel's behalf.

Protocol (JSON over the comm; every message is described in ``jaxviz/schema/messages.json``,
the one source of the panel's types and of the checks on both sides):

* frontend → kernel: ``snapshot_request`` (as the comm's open data or as a message),
  ``graph_request``, ``devices_request``, ``diff_request`` (a compile of the log against
  the one before it).
* kernel → frontend: ``snapshot``, ``event`` (one), ``events`` (a batch, when events come
  faster than ``FLUSH_INTERVAL``), ``graph`` (a kept program payload, or None), ``diff``,
  and, as the data of a comm the kernel opens itself when jaxviz is loaded after the
  panel connected, ``hello``.

Event kinds (kept as given, bounded history per kind): ``"program"`` (its program MIME
payload, built only while a panel listens, is kept for ``graph_request``, not pushed),
``"compile"``, ``"stale"``, ``"devices"``.

Without a kernel (plain IPython, a script) ``register`` does nothing and ``publish`` only
records history.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import OrderedDict, deque
from typing import Any

import comm
import jax
import numpy as np

from .. import _jax_internals as internals
from ..devices import memory_stats
from ..diff import recompile_diff
from ..recompiles import SUBSCRIBERS
from ..version import VERSION

TARGET = "jaxviz"
HISTORY = {"program": 200, "compile": 2000, "stale": 500}
FLUSH_INTERVAL = 0.05  # seconds: events closer together than this are sent in batches
MAX_BATCH = 1000  # a batch this big is sent at once
MAX_FUNCTIONS = 1000  # functions listed in snapshots
MAX_GRAPHS = 32  # latest program payloads kept for the panel's graph requests
KINDS = ("program", "compile", "stale", "devices")

log = logging.getLogger(__name__)


class _State:
    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.history: dict[str, deque[dict[str, Any]]] = {k: deque(maxlen=n) for k, n in HISTORY.items()}
        self.totals: dict[str, int] = dict.fromkeys(HISTORY, 0)
        # name -> {"name", "summary", "eqn_count", "compiles", "traces"}; most recent last
        self.functions: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self.graphs: OrderedDict[str, dict[str, Any]] = OrderedDict()  # name -> payload
        self.devices: list[dict[str, Any]] | None = None  # last "devices" event
        self.comms: dict[str, Any] = {}  # comm_id -> comm (all open ones)
        self.live: dict[str, Any] = {}  # comm_id -> comm that asked for a snapshot
        self.manager: Any = None  # the comm manager our target is registered with
        self.shell: Any = None
        self.pending: list[tuple[str, Any]] = []  # events not sent yet (batching)
        self.timer: threading.Timer | None = None  # flushes ``pending`` if nothing else does
        self.last_flush = 0.0
        self.sent_devices: Any = None  # the device list panels last got

    def reset(self) -> None:
        with self.lock:
            self.pending.clear()
            for k in self.history:
                self.history[k].clear()
                self.totals[k] = 0
            self.functions.clear()
            self.graphs.clear()
            self.devices = None


_state = _State()


# ---------------------------------------------------------------------- lifecycle
def register(shell: Any) -> bool:
    """Register the ``"jaxviz"`` comm target with the shell's kernel and announce
    ourselves to frontends that are already listening. Returns False (and does
    nothing) when there is no kernel, e.g. in terminal IPython. Idempotent."""
    kernel = getattr(shell, "kernel", None)
    if kernel is None:
        return False
    manager = _comm_manager(kernel)
    if manager is None:
        return False
    with _state.lock:
        if _state.manager is manager:
            return True
        _state.manager = manager
        _state.shell = shell
    manager.register_target(TARGET, _on_comm_open)
    if publish not in SUBSCRIBERS:  # the tracker's compile and stale events
        SUBSCRIBERS.append(publish)
    events = getattr(shell, "events", None)
    if events is not None:
        events.register("post_execute", _post_execute)
    _announce()
    return True


def unregister(shell: Any = None) -> None:
    """Close every panel comm and unregister the target (``%unload_ext jaxviz``)."""
    if publish in SUBSCRIBERS:
        SUBSCRIBERS.remove(publish)
    flush()
    with _state.lock:
        manager, old_shell = _state.manager, _state.shell
        _state.manager = _state.shell = None
        comms = list(_state.comms.values())
        _state.comms.clear()
        _state.live.clear()
    for c in comms:
        try:
            c.close()
        except Exception:  # the frontend may be gone already
            log.debug("jaxviz: closing a comm failed", exc_info=True)
    if manager is not None:
        try:
            manager.unregister_target(TARGET, _on_comm_open)
        except Exception:
            log.debug("jaxviz: unregistering the comm target failed", exc_info=True)
    events = getattr(old_shell or shell, "events", None)
    if events is not None:
        try:
            events.unregister("post_execute", _post_execute)
        except ValueError:
            pass


def connected() -> int:
    """How many panels are listening."""
    return len(_state.live)


def _comm_manager(kernel: Any) -> Any:
    manager = getattr(kernel, "comm_manager", None)
    if manager is not None:
        return manager
    try:
        return comm.get_comm_manager()
    except Exception:
        return None


def _announce() -> None:
    """Open a comm to the frontend: a panel already showing 'not loaded' adopts it."""
    try:
        c = comm.create_comm(target_name=TARGET, data={"type": "hello"})
    except Exception:
        log.debug("jaxviz: announcing to the frontend failed", exc_info=True)
        return
    if getattr(c, "comm_id", None) is None or type(c).__name__ == "DummyComm":
        return
    _track(c)


def _track(c: Any) -> None:
    with _state.lock:
        _state.comms[c.comm_id] = c
    c.on_msg(lambda msg: _on_msg(c, msg))
    c.on_close(lambda msg: _forget(c))


def _forget(c: Any) -> None:
    with _state.lock:
        _state.comms.pop(c.comm_id, None)
        _state.live.pop(c.comm_id, None)


def _on_comm_open(c: Any, open_msg: dict[str, Any]) -> None:
    _track(c)
    data = (open_msg.get("content") or {}).get("data") or {}
    if data.get("type"):
        _handle(c, data)


def _on_msg(c: Any, msg: dict[str, Any]) -> None:
    data = (msg.get("content") or {}).get("data") or {}
    _handle(c, data)


def _handle(c: Any, data: dict[str, Any]) -> None:
    kind = data.get("type")
    try:
        if kind == "snapshot_request":
            flush()  # what is pending goes to the other panels; this one gets it below
            snap = snapshot()
            _state.sent_devices = snap["devices"] or None
            _send(c, snap)
            with _state.lock:
                if c.comm_id in _state.comms:
                    _state.live[c.comm_id] = c
        elif kind == "graph_request":
            name = str(data.get("name", ""))
            with _state.lock:
                payload = _state.graphs.get(name)
            _send(c, {"type": "graph", "name": name, "payload": payload})
        elif kind == "diff_request":
            count = data.get("count")
            _send(c, diff_reply(str(data.get("function", "")), int(count) if count is not None else None))
        elif kind == "devices_request":
            devices, _note = device_list()
            _send(c, {"type": "event", "kind": "devices", "payload": _jsonable(devices)})
    except Exception:
        log.warning("jaxviz: answering the panel failed", exc_info=True)


def _send(c: Any, msg: dict[str, Any]) -> bool:
    try:
        c.send(msg)
        return True
    except Exception:
        log.debug("jaxviz: sending on a comm failed; dropping it", exc_info=True)
        _forget(c)
        return False


# ---------------------------------------------------------------------- events
def publish(kind: str, payload: Any) -> None:
    """Record an event and push it to every listening panel.

    Near-free without a panel: an append to a bounded deque. Never raises. With a
    panel, an event is sent at once unless another was sent less than
    ``FLUSH_INTERVAL`` ago; then it waits for the next batch (sent by a later event,
    after ``FLUSH_INTERVAL`` by a timer, at the end of the cell, or before a snapshot), so
    that a flood of events costs a few messages, not thousands (IOPub drops messages
    beyond its high-water mark).
    """
    try:
        event = _record(kind, payload)
    except Exception:
        log.warning("jaxviz: could not record a %r event", kind, exc_info=True)
        return
    st = _state
    if not st.live or event is None:
        return
    with st.lock:
        st.pending.append((kind, event))
        if len(st.pending) < MAX_BATCH and time.monotonic() - st.last_flush < FLUSH_INTERVAL:
            if st.timer is None:
                st.timer = threading.Timer(FLUSH_INTERVAL, _timer_flush)
                st.timer.daemon = True
                st.timer.start()
            return
    flush()


def _post_execute() -> None:
    """After every cell: send what is pending, and the devices when they changed (JAX
    initialised them, memory use moved). Cheap, and nothing at all without a panel."""
    if not _state.live:
        return
    flush()
    devices, _note = device_list()
    if devices and devices != _state.sent_devices:
        _state.sent_devices = devices
        msg = {"type": "event", "kind": "devices", "payload": _jsonable(devices)}
        with _state.lock:
            targets = list(_state.live.values())
        for c in targets:
            _send(c, msg)


def _timer_flush() -> None:
    with _state.lock:
        _state.timer = None
    try:
        flush()
    except Exception:  # a background thread must not die noisily
        log.debug("jaxviz: flushing events failed", exc_info=True)


def flush() -> None:
    """Send the pending events: one ``event`` message, or one ``events`` batch
    ``{"type": "events", "events": [{"kind", "payload"}]}``."""
    st = _state
    with st.lock:
        st.last_flush = time.monotonic()
        if not st.pending:
            return
        batch, st.pending = st.pending, []
        targets = list(st.live.values())
    if not targets:
        return
    try:
        if len(batch) == 1:
            kind, event = batch[0]
            msg = {"type": "event", "kind": kind, "payload": _jsonable(event)}
        else:
            msg = {"type": "events", "events": _jsonable([{"kind": k, "payload": e} for k, e in batch])}
    except Exception:
        log.warning("jaxviz: could not encode events for the panel", exc_info=True)
        return
    for c in targets:
        _send(c, msg)


def _record(kind: str, payload: Any) -> Any:
    """Update the history; returns the event as it goes on the wire (None: nothing).

    Payloads are kept as given (a shallow copy); they are made JSON-safe only when
    sent, so that recording costs next to nothing without a panel.
    """
    st = _state
    with st.lock:
        if kind == "program":
            name = str(payload.get("name") or "program")
            entry = _function(name)
            entry["summary"] = payload.get("summary") or entry["summary"]
            if payload.get("eqn_count") is not None:
                entry["eqn_count"] = payload["eqn_count"]
            entry["traces"] += 1
            if payload.get("payload") is not None:
                st.graphs[name] = payload["payload"]
                st.graphs.move_to_end(name)
                while len(st.graphs) > MAX_GRAPHS:
                    st.graphs.popitem(last=False)
            event = {k: v for k, v in payload.items() if k != "payload"}
            event["has_graph"] = name in st.graphs
        elif kind in ("compile", "stale"):
            event = dict(payload)
            event.setdefault("time", time.time())
            if kind == "compile":
                entry = _function(str(event.get("function") or "?"))
                try:
                    count = int(event.get("count") or 0)
                except (TypeError, ValueError):
                    count = 0
                entry["compiles"] = max(entry["compiles"] + 1, count)
        elif kind == "devices":
            st.devices = list(payload)
            return st.devices
        else:
            raise ValueError(f"unknown jaxviz event kind {kind!r}; expected one of {KINDS}")
        st.history[kind].append(event)
        st.totals[kind] += 1
        return event


def _function(name: str) -> dict[str, Any]:
    fns = _state.functions
    entry = fns.get(name)
    if entry is None:
        entry = fns[name] = {"name": name, "summary": None, "eqn_count": None, "compiles": 0, "traces": 0}
        while len(fns) > MAX_FUNCTIONS:
            fns.popitem(last=False)
    fns.move_to_end(name)
    return entry


def _jsonable(value: Any) -> Any:
    """JSON as ``jaxviz/schema/messages.json`` describes it: numpy scalars become the
    numbers they hold (a duration stays a number); anything else JSON cannot carry
    (dtypes, shapes...) becomes its ``str``."""
    return json.loads(json.dumps(value, default=_json_default))


def _json_default(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else str(value)


def publish_program(program: Any) -> None:
    """Publish a traced ``Program`` as a ``"program"`` event. Its graph payload is built
    and kept (the last ``MAX_GRAPHS``) only while a panel listens: the ``Program`` itself
    is never kept, since its jaxpr holds the captured arrays (device memory) alive."""
    payload = program.to_json() if _state.live else None
    publish("program", {"name": program.name, "summary": program.summary(),
                        "eqn_count": program.eqn_count, "payload": payload})


def reset() -> None:
    """Forget all history (the comms stay open)."""
    _state.reset()


# ---------------------------------------------------------------------- snapshots
def snapshot() -> dict[str, Any]:
    devices, note = device_list()
    with _state.lock:
        functions = [dict(f, has_graph=f["name"] in _state.graphs) for f in _state.functions.values()]
        return _jsonable({
            "type": "snapshot",
            "version": VERSION,
            "functions": functions,
            "compiles": list(_state.history["compile"]),
            "stale": list(_state.history["stale"]),
            "devices": devices,
            "devices_note": note,
            "totals": dict(_state.totals),
        })


def diff_reply(function: str, count: int | None = None) -> dict[str, Any]:
    """The answer to the panel's ``diff_request`` (``jaxviz.ipython.bridge``): the diff graph
    payload (``ProgramDiff.to_json``) of a compile in the log, its summary and its drawing
    (SVG, with the added/removed/changed colours; None without Graphviz or when nothing
    changed), or why there is none."""
    reply: dict[str, Any] = {"type": "diff", "function": function, "count": count,
                             "payload": None, "svg": None, "summary": None, "error": None}
    try:
        result = recompile_diff(function, count)
    except LookupError as exc:
        reply["error"] = exc.args[0]
        return reply
    reply["payload"], reply["summary"] = result.to_json(), result.summary()
    reply["svg"] = result.svg()  # drawn with its colours
    return reply


def device_list() -> tuple[list[dict[str, Any]], str | None]:
    """The devices JAX sees, with memory statistics where the backend reports them.

    JAX is not initialised just for the panel (on GPUs that would allocate memory):
    until the user's code has used a device, this returns ``[]`` and a note.
    """
    published = _state.devices
    if internals.backends_initialized() is False:
        if published is not None:
            return published, None
        return [], "JAX has not initialised its devices yet (run some JAX code)."
    out = []
    try:
        devices = jax.devices()
    except Exception as exc:
        return [], f"jax.devices() failed: {exc}"
    for d in devices:
        stats = memory_stats(d)
        out.append({"id": d.id, "platform": d.platform, "kind": d.device_kind, "memory": stats})
    return out, None
