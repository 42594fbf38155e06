"""The kernel side of the panel (``jaxviz.ipython.bridge``): in-process for the bookkeeping, and
against a real ipykernel, speaking the comm protocol as JupyterLab's panel does."""

from __future__ import annotations

import json
import shutil
import time
import uuid
from collections.abc import Callable
from importlib import resources
from typing import Any

import comm
import jsonschema
import numpy as np
import pytest

from jaxviz.ipython import bridge

# The messages' one source, as the wheel ships it (the panel's types and checks are
# generated from the same file: labextension/build-schema.mjs).
SCHEMA = json.loads(resources.files("jaxviz").joinpath("schema/messages.json").read_text())
jsonschema.Draft7Validator.check_schema(SCHEMA)


def _validator(definition: str) -> jsonschema.Draft7Validator:
    return jsonschema.Draft7Validator({**SCHEMA, "$ref": f"#/definitions/{definition}"})


KERNEL_MESSAGE = _validator("KernelMessage")
FRONTEND_MESSAGE = _validator("FrontendMessage")


def assert_valid(validator: jsonschema.Draft7Validator, message: Any) -> None:
    """The message matches the schema, or the failure names the first wrong key."""
    errors = list(validator.iter_errors(message))
    error = max(errors, key=jsonschema.exceptions.relevance) if errors else None
    while error is not None and error.context:
        # Of a oneOf, the errors of the kind the message claims to be, not the other kinds'.
        other_kinds = {e.schema_path[0] for e in error.context
                       if e.validator == "const" and list(e.path) in (["type"], ["kind"])}
        theirs = [e for e in error.context if e.schema_path[0] not in other_kinds]
        error = max(theirs or error.context, key=jsonschema.exceptions.relevance)
    if error is not None:
        where = "/".join(map(str, error.absolute_path)) or "(message)"
        raise AssertionError(f"{where}: {error.message}\nin {json.dumps(message)[:500]}")


# ---------------------------------------------------------------------- in process


@pytest.fixture
def clean_bridge():
    bridge.reset()
    yield
    bridge.reset()


def test_register_is_a_noop_without_a_kernel(clean_bridge):
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    assert bridge.register(shell) is False
    assert bridge.TARGET not in comm.get_comm_manager().targets
    bridge.unregister(shell)  # harmless
    bridge.publish("compile", {"function": "f", "count": 1, "causes": []})
    assert bridge.snapshot()["compiles"][-1]["function"] == "f"


def test_publish_without_panel_is_cheap_and_bounded(clean_bridge):
    n = 20_000
    payload = {"function": "step", "call_site": "cell line 3", "causes": [
        {"kind": "shape", "path": "x", "before": (3,), "after": np.int64(4)}],
        "message": "m", "suggestion": None, "durations": {"trace": np.float32(0.1)}}
    for i in range(n):
        bridge.publish("compile", dict(payload, count=i + 1))
    snap = bridge.snapshot()
    kept = snap["compiles"]
    assert len(kept) == bridge.HISTORY["compile"]
    assert kept[-1]["count"] == n and kept[0]["count"] == n - len(kept) + 1
    assert_valid(KERNEL_MESSAGE, snap)
    assert snap["totals"]["compile"] == n
    assert snap["functions"] == [{"name": "step", "summary": None, "eqn_count": None,
                                  "compiles": n, "traces": 0, "has_graph": False}]
    # numpy values and tuples became JSON: numbers stay numbers.
    cause = snap["compiles"][-1]["causes"][0]
    assert cause["before"] == [3] and cause["after"] == 4
    assert snap["compiles"][-1]["durations"]["trace"] == pytest.approx(0.1)


def test_publish_never_raises_and_rejects_unknown_kinds(clean_bridge, caplog):
    bridge.publish("nonsense", {"x": 1})
    bridge.publish("compile", None)  # a broken publisher must not break user code
    assert "could not record" in caplog.text
    assert bridge.snapshot()["totals"] == {"program": 0, "compile": 0, "stale": 0}


def test_program_events_keep_few_graphs_and_build_payloads_lazily(clean_bridge):
    import gc
    import weakref

    import jax.numpy as jnp

    import jaxviz

    captured = jnp.ones(3)
    prog = jaxviz.trace(lambda x: jnp.sin(x) * captured, jnp.ones(3))
    bridge.publish_program(prog)
    snap = bridge.snapshot()
    assert_valid(KERNEL_MESSAGE, snap)
    (fn,) = snap["functions"]
    assert fn["name"] == prog.name and fn["eqn_count"] == prog.eqn_count
    # No panel listens: nothing heavy is kept, so the Program (and the arrays its jaxpr
    # captured) can go.
    assert not fn["has_graph"]
    ref = weakref.ref(prog)
    del prog
    gc.collect()
    assert ref() is None
    bridge.publish("program", {"name": "lambda", "summary": "", "eqn_count": 2,
                               "payload": {"schema": "jaxviz.program"}})
    for i in range(bridge.MAX_GRAPHS + 5):
        bridge.publish("program", {"name": f"f{i}", "summary": "", "eqn_count": 1,
                                   "payload": {"schema": "jaxviz.program"}})
    snap = bridge.snapshot()
    has_graph = {f["name"]: f["has_graph"] for f in snap["functions"]}
    assert not has_graph["lambda"], "the oldest graphs are evicted"
    assert sum(has_graph.values()) == bridge.MAX_GRAPHS


def test_schema_holds_real_payloads_and_refuses_what_the_panel_cannot_read(clean_bridge):
    import jax.numpy as jnp

    import jaxviz

    program = jaxviz.trace(lambda x, w: jnp.tanh(x @ w).sum(), jnp.ones((2, 3)), jnp.ones((3, 4)))
    # As the panel receives it: JSON over the comm.
    reply = json.loads(json.dumps({"type": "graph", "name": program.name, "payload": program.to_json()}))
    assert_valid(KERNEL_MESSAGE, reply)
    compile_event = {"function": "step", "count": 2, "causes": [{"kind": "shape", "path": "x"}]}
    assert_valid(KERNEL_MESSAGE, {"type": "event", "kind": "compile", "payload": compile_event})

    def refused(message: dict[str, Any]) -> str:
        with pytest.raises(AssertionError) as info:
            assert_valid(KERNEL_MESSAGE, message)
        return str(info.value)

    assert "'function' is a required property" in refused(
        {"type": "event", "kind": "compile", "payload": {"count": 2}})
    assert "'devices' is a required property" in refused(
        {"type": "snapshot", "functions": [], "compiles": [], "stale": []})
    broken = dict(reply, payload=dict(reply["payload"], graph={"nodes": 3}))
    assert refused(broken).startswith("payload")
    assert refused({"type": "events", "events": [{"kind": "stale", "payload": {"baked": 1}}]})
    with pytest.raises(AssertionError, match="name"):
        assert_valid(FRONTEND_MESSAGE, {"type": "graph_request"})


# ---------------------------------------------------------------------- real kernel


class Frontend:
    """Just enough of a Jupyter frontend to open comms on a real kernel."""

    def __init__(self, kc: Any) -> None:
        self.kc = kc
        self.seen: list[dict[str, Any]] = []
        self.checked = 0  # messages from the kernel checked against the schema

    def _pump(self, timeout: float) -> dict[str, Any] | None:
        try:
            msg = self.kc.get_iopub_msg(timeout=timeout)
        except Exception:
            return None
        self.seen.append(msg)
        # Every message the bridge sends matches the schema the panel checks it against.
        content = msg["content"]
        if msg["msg_type"] == "comm_msg" or (msg["msg_type"] == "comm_open"
                                             and content["target_name"] == bridge.TARGET):
            assert_valid(KERNEL_MESSAGE, content["data"])
            self.checked += 1
        return msg

    def wait_for(self, pred: Callable[[dict[str, Any]], bool], timeout: float = 30,
                 what: str = "message") -> dict[str, Any]:
        for msg in self.seen:
            if pred(msg):
                self.seen.remove(msg)
                return msg
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            msg = self._pump(0.2)
            if msg is not None and pred(msg):
                self.seen.remove(msg)
                return msg
        raise AssertionError(f"no {what} within {timeout}s; saw {[m['msg_type'] for m in self.seen][-30:]}")

    def execute(self, code: str, timeout: float = 60) -> None:
        msg_id = self.kc.execute(code)
        reply = self.kc.get_shell_msg(timeout=timeout)
        while reply["parent_header"].get("msg_id") != msg_id:
            reply = self.kc.get_shell_msg(timeout=timeout)
        if reply["content"]["status"] != "ok":
            raise AssertionError(f"{code!r} failed: {reply['content'].get('evalue')}")
        self.wait_for(lambda m: m["msg_type"] == "status" and m["content"]["execution_state"] == "idle"
                      and m["parent_header"].get("msg_id") == msg_id, timeout, "idle")

    def open(self, data: dict[str, Any], target: str = "jaxviz") -> str:
        assert_valid(FRONTEND_MESSAGE, data)
        comm_id = uuid.uuid4().hex
        self.kc.shell_channel.send(self.kc.session.msg(
            "comm_open", {"comm_id": comm_id, "target_name": target, "data": data}))
        return comm_id

    def send(self, comm_id: str, data: dict[str, Any]) -> None:
        assert_valid(FRONTEND_MESSAGE, data)
        self.kc.shell_channel.send(self.kc.session.msg("comm_msg", {"comm_id": comm_id, "data": data}))

    def event(self, comm_id: str, kind: str, timeout: float = 30) -> dict[str, Any]:
        """The payload of the next pushed event of a kind, single or in a batch."""
        def has(m: dict[str, Any]) -> bool:
            if m["msg_type"] != "comm_msg" or m["content"]["comm_id"] != comm_id:
                return False
            data = m["content"]["data"]
            events = [data] if data.get("type") == "event" else data.get("events") or []
            return any(e["kind"] == kind for e in events)

        msg = self.wait_for(has, timeout, f"{kind!r} event")
        data = msg["content"]["data"]
        events = [data] if data.get("type") == "event" else data["events"]
        found = next(e for e in events if e["kind"] == kind)
        rest = [e for e in events if e is not found]
        if rest:  # put the others back for later waits
            self.seen.insert(0, {**msg, "content": {**msg["content"], "data": {"type": "events", "events": rest}}})
        return found["payload"]

    def comm_msg(self, comm_id: str, type_: str, timeout: float = 30,
                 pred: Callable[[dict[str, Any]], bool] = lambda d: True) -> dict[str, Any]:
        msg = self.wait_for(lambda m: m["msg_type"] == "comm_msg" and m["content"]["comm_id"] == comm_id
                            and m["content"]["data"].get("type") == type_ and pred(m["content"]["data"]),
                            timeout, f"{type_!r} on comm {comm_id[:6]}")
        return msg["content"]["data"]


@pytest.fixture(scope="module")
def kernel():
    from jupyter_client.manager import start_new_kernel

    km, kc = start_new_kernel(kernel_name="python3", startup_timeout=60)
    try:
        fe = Frontend(kc)
        yield fe
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def test_kernel_without_jaxviz_closes_the_panel_comm(kernel):
    comm_id = kernel.open({"type": "snapshot_request"})
    kernel.wait_for(lambda m: m["msg_type"] == "comm_close" and m["content"]["comm_id"] == comm_id,
                    what="comm_close from a kernel without jaxviz")


@pytest.fixture(scope="module")
def loaded(kernel):
    kernel.execute("import jaxviz, jaxviz.ipython.bridge\nassert jaxviz.ipython.bridge.register(get_ipython())")
    return kernel


def test_register_announces_itself_to_the_frontend(loaded):
    msg = loaded.wait_for(lambda m: m["msg_type"] == "comm_open"
                          and m["content"]["target_name"] == "jaxviz", what="hello comm_open")
    assert msg["content"]["data"] == {"type": "hello"}
    # A panel adopting that comm asks for a snapshot on it.
    comm_id = msg["content"]["comm_id"]
    loaded.send(comm_id, {"type": "snapshot_request"})
    snap = loaded.comm_msg(comm_id, "snapshot")
    assert set(snap) >= {"functions", "compiles", "stale", "devices", "totals", "version"}


def test_snapshot_events_and_graphs_over_the_comm(loaded):
    # Before any JAX computation the devices are not initialised for the panel's sake.
    comm_id = loaded.open({"type": "snapshot_request"})
    snap = loaded.comm_msg(comm_id, "snapshot")
    assert snap["devices"] == [] and "not initialised" in snap["devices_note"]

    loaded.execute(
        "import jax.numpy as jnp\n"
        "jnp.ones(1).block_until_ready()\n"
        "def step(x):\n    return jnp.tanh(x) * 2\n"
        "p = jaxviz.trace(step, jnp.ones(3))\n"
        "jaxviz.ipython.bridge.publish_program(p)\n"
        "jaxviz.ipython.bridge.publish('compile', {'function': 'step', 'call_site': 'cell line 4', 'count': 2,\n"
        "    'causes': [{'kind': 'shape', 'path': 'x', 'before': 'f32[3]', 'after': 'f32[4]'}],\n"
        "    'message': 'x changed shape', 'suggestion': 'pad x', 'durations': {'trace': 0.01},\n"
        "    'time': None})\n"
        "jaxviz.ipython.bridge.publish('stale', {'function': 'step', 'name': 'lr', 'baked': 0.1,\n"
        "    'current': 0.01, 'message': 'lr changed after tracing'})\n")
    # JAX initialised its devices in that cell: the panel is told after the cell.
    (dev,) = loaded.event(comm_id, "devices")
    assert dev["platform"] == "cpu"
    prog = loaded.event(comm_id, "program")
    assert prog["name"] == "step" and prog["eqn_count"] >= 2 and prog["has_graph"]
    assert "payload" not in prog, "graphs are sent on request only"
    comp = loaded.event(comm_id, "compile")
    assert comp["causes"][0] == {"kind": "shape", "path": "x", "before": "f32[3]", "after": "f32[4]"}
    stale = loaded.event(comm_id, "stale")
    assert stale["name"] == "lr" and stale["baked"] == 0.1

    loaded.send(comm_id, {"type": "graph_request", "name": "step"})
    graph = loaded.comm_msg(comm_id, "graph")
    assert graph["name"] == "step"
    assert graph["payload"]["schema"] == "jaxviz.program"
    assert {n["primitive"] for n in graph["payload"]["graph"]["nodes"]} >= {"tanh", "mul"}
    loaded.send(comm_id, {"type": "graph_request", "name": "nope"})
    assert loaded.comm_msg(comm_id, "graph")["payload"] is None

    # A second panel connecting now gets it all in its snapshot, devices included.
    other = loaded.open({"type": "snapshot_request"})
    snap = loaded.comm_msg(other, "snapshot")
    assert [f["name"] for f in snap["functions"]] == ["step"]
    assert snap["functions"][0]["compiles"] == 2
    assert snap["compiles"][-1]["message"] == "x changed shape"
    assert snap["stale"][-1]["current"] == 0.01
    (dev,) = snap["devices"]
    assert dev["platform"] == "cpu" and dev["id"] == 0 and "kind" in dev
    assert snap["devices_note"] is None
    assert loaded.checked >= 8, "the messages above were checked against the schema"


def test_diff_of_a_compile_in_the_log(loaded):
    comm_id = loaded.open({"type": "snapshot_request"})
    loaded.comm_msg(comm_id, "snapshot")
    loaded.execute(
        "import jax, jax.numpy as jnp\n"
        "@jax.jit\ndef norm(x):\n    return x / jnp.sqrt((x * x).sum())\n"
        "with jaxviz.watch():\n    norm(jnp.ones(3)); norm(jnp.ones(5))\n")
    loaded.send(comm_id, {"type": "diff_request", "function": "norm", "count": 2})
    reply = loaded.comm_msg(comm_id, "diff")
    assert reply["error"] is None and reply["function"] == "norm"
    payload = reply["payload"]
    assert payload["schema"] == "jaxviz.graph"
    assert "every change is a shape change (3 → 5)" in payload["diff"]["summary"]
    assert set(payload["diff"]["nodes"].values()) == {"changed"}
    assert reply["summary"] == payload["diff"]["summary"]
    if shutil.which("dot"):  # drawn by the kernel, with the diff's colours, for the panel's tab
        assert reply["svg"].lstrip().startswith(("<?xml", "<svg")) and "changed" in reply["svg"]
    loaded.send(comm_id, {"type": "diff_request", "function": "norm", "count": 1})
    reply = loaded.comm_msg(comm_id, "diff", pred=lambda d: d["count"] == 1)
    assert reply["payload"] is None and "no earlier compile" in reply["error"]


def _flood_events(fe: Frontend, comm_id: str) -> tuple[int, list[dict[str, Any]]]:
    """(messages, events) received on a comm so far, batches unpacked."""
    n_msgs, events = 0, []
    for m in list(fe.seen):
        if m["msg_type"] != "comm_msg" or m["content"]["comm_id"] != comm_id:
            continue
        data = m["content"]["data"]
        if data.get("type") == "event":
            n_msgs += 1
            events.append(data)
        elif data.get("type") == "events":
            n_msgs += 1
            events += data["events"]
        else:
            continue
        fe.seen.remove(m)
    return n_msgs, events


def test_a_flood_of_events_is_batched_and_arrives_complete_in_order(loaded):
    comm_id = loaded.open({"type": "snapshot_request"})
    loaded.comm_msg(comm_id, "snapshot")
    # Runs until the kernel is idle again: with one message per event IOPub would
    # drop messages (the idle status among them) and this would never end. (The wait is
    # a guard against that hang, generous: 5000 events take a minute on a loaded machine.)
    loaded.execute(
        "import time\n"
        "for i in range(5000):\n"
        "    jaxviz.ipython.bridge.publish('compile', {'function': 'flood', 'count': i + 1, 'causes': []})\n",
        timeout=300)
    n_msgs, events = _flood_events(loaded, comm_id)
    counts = [e["payload"]["count"] for e in events if e["payload"].get("function") == "flood"]
    assert counts == list(range(1, 5001)), "every event, in order, none twice"
    assert n_msgs < 200, f"{n_msgs} messages for 5000 events"
    # Events right after others are not held back until the cell ends: a timer sends them.
    msg_id = loaded.kc.execute(
        "jaxviz.ipython.bridge.publish('stale', {'name': 'a'})\n"
        "jaxviz.ipython.bridge.publish('stale', {'name': 'b'})\n"
        "time.sleep(3)\n")
    assert loaded.event(comm_id, "stale")["name"] == "a"
    assert loaded.event(comm_id, "stale")["name"] == "b"
    # Both arrived while the cell still ran (it sleeps 3 s): no idle status of it came first.
    assert not [m for m in loaded.seen if m["msg_type"] == "status"
                and m["content"]["execution_state"] == "idle"
                and m["parent_header"].get("msg_id") == msg_id], \
        "the trailing event waited for the end of the cell"
    loaded.wait_for(lambda m: m["msg_type"] == "status" and m["content"]["execution_state"] == "idle"
                    and m["parent_header"].get("msg_id") == msg_id, what="idle")
    # A single event after a quiet moment goes out at once, unbatched.
    time.sleep(2 * bridge.FLUSH_INTERVAL)
    loaded.execute("jaxviz.ipython.bridge.publish('stale', {'name': 'lr'})")
    single = loaded.comm_msg(comm_id, "event", pred=lambda d: d["kind"] == "stale")
    assert single["payload"]["name"] == "lr"


def test_unregister_closes_panel_comms(loaded):
    comm_id = loaded.open({"type": "snapshot_request"})
    loaded.comm_msg(comm_id, "snapshot")
    loaded.execute("import comm\njaxviz.ipython.bridge.unregister(get_ipython())\n"
                   "assert 'jaxviz' not in comm.get_comm_manager().targets")
    loaded.wait_for(lambda m: m["msg_type"] == "comm_close" and m["content"]["comm_id"] == comm_id,
                    what="comm_close on unregister")
    again = loaded.open({"type": "snapshot_request"})
    loaded.wait_for(lambda m: m["msg_type"] == "comm_close" and m["content"]["comm_id"] == again,
                    what="comm_close after unregister")
    # ... and loading again works.
    loaded.execute("assert jaxviz.ipython.bridge.register(get_ipython())")
    fresh = loaded.open({"type": "snapshot_request"})
    assert loaded.comm_msg(fresh, "snapshot")["totals"]["compile"] >= 5001
