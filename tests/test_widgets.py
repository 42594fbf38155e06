"""The live monitor: what it shows, that it throttles, and that it updates in a real
kernel while a loop is still running in the same cell."""

import gc
import threading
import time
import weakref

import jax
import jax.numpy as jnp
import pytest

import jaxviz

pytest.importorskip("ipywidgets")

from jaxviz.visual import HTML_COLOR  # noqa: E402
from jaxviz.widgets import LiveMonitor  # noqa: E402


def shown(monitor: LiveMonitor) -> str:
    """The HTML the notebook's widget shows."""
    return monitor.widget.children[0].value


def timers() -> set[threading.Thread]:
    """The timers waiting to run."""
    return {t for t in threading.enumerate() if isinstance(t, threading.Timer)}


def test_monitor_shows_counts_timeline_causes_and_warnings():
    f = jax.jit(lambda x, n: x * n, static_argnums=1)
    with jaxviz.watch(storm=2) as log:
        monitor = LiveMonitor(log, interval=0)
        with pytest.warns(jaxviz.recompiles.RecompileWarning):
            for n in range(4):
                f(jnp.ones(2), n)
        html = monitor.render()
    assert "4 compiles of 1 functions (3 recompiles)" in html  # first compiles apart
    assert "&lt;lambda&gt;" in html and "static_value of <code>n</code>" in html
    assert "`" not in html  # Markdown code spans are <code>, not raw backticks
    assert "word-break:normal" in html
    # compiles, recompiles and time in their own right-aligned, padded cells
    assert ("tabular-nums;white-space:nowrap'>4</td><td style='padding:1px 10px 1px 0;"
            "vertical-align:top;text-align:right;font-variant-numeric:tabular-nums;"
            "white-space:nowrap'>3</td>") in html
    assert "timeline" in html and html.count("title='compile") == 4  # one bar per compile
    assert "static argument <code>n</code> changed 2 → 3" in html  # the latest event's causes
    assert "<details><summary>how to fix</summary>" in html
    assert f"color:{HTML_COLOR['error']};font-weight:600'>⚠ recompile storm" in html  # warnings in red
    assert monitor.updates >= 1 and "4 compiles of 1 functions" in shown(monitor)  # drawn into the widget
    monitor.close()
    assert monitor.closed
    gone = weakref.ref(monitor)
    del monitor
    gc.collect()
    assert gone() is None, "the log still holds the closed monitor"
    assert log.events  # the log itself is still there


def test_monitor_throttles_redraws():
    f = jax.jit(lambda x: x + 1)
    with jaxviz.watch() as log:
        before = timers()
        monitor = LiveMonitor(log, interval=60)
        for n in range(1, 6):
            f(jnp.ones(n))  # 5 compiles, several notifications each
        assert monitor.updates == 1  # the first drew at once; the rest wait for the timer
        (pending,) = timers() - before
        assert "5 compiles" not in shown(monitor)
        monitor.refresh()
        assert monitor.updates == 2 and "5 compiles" in shown(monitor)
        f(jnp.ones(6))  # within the interval again: another redraw waits
        (waiting,) = timers() - before - {pending}
    monitor.close()
    waiting.join(5)
    assert not waiting.is_alive() and monitor.updates == 2  # closing cancelled it


def test_monitor_redraws_from_the_timer():
    f = jax.jit(lambda x: x - 1)
    with jaxviz.watch() as log:
        monitor = LiveMonitor(log, interval=0.05)
        f(jnp.ones(1))
        f(jnp.ones(2))
        deadline = time.monotonic() + 5
        while "2 compiles" not in shown(monitor) and time.monotonic() < deadline:
            time.sleep(0.01)
    assert "2 compiles" in shown(monitor)
    monitor.close()


@pytest.mark.slow  # a real kernel
def test_live_updates_in_a_real_kernel_while_the_cell_runs():
    from jupyter_client.manager import start_new_kernel

    km, kc = start_new_kernel(kernel_name="python3")
    try:
        code = (
            "%load_ext jaxviz\n"
            "%jaxviz watch\n"
            "import time, jax, jax.numpy as jnp\n"
            "f = jax.jit(lambda x: x * 2)\n"
            "for n in range(1, 5):\n"
            "    f(jnp.ones(n))\n"
            "    time.sleep(0.7)\n"
            "print('loop done')\n"
        )
        msg_id = kc.execute(code)
        values_before_end = []
        done_printed = False
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            msg = kc.get_iopub_msg(timeout=60)
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            kind, content = msg["msg_type"], msg["content"]
            if kind == "stream" and "loop done" in content.get("text", ""):
                done_printed = True
            elif kind == "comm_msg" and not done_printed:
                value = content.get("data", {}).get("state", {}).get("value")
                if isinstance(value, str) and "jaxviz-monitor" in value:
                    values_before_end.append(value)
            elif kind == "error":
                pytest.fail("\n".join(content["traceback"]))
            elif kind == "status" and content["execution_state"] == "idle":
                break
        assert done_printed
        counts = [next(n for n in range(1, 5) if f"{n} compiles" in v) for v in values_before_end
                  if any(f"{n} compiles" in v for n in range(1, 5))]
        # The widget was redrawn during the loop, compile by compile, before it ended.
        assert len(set(counts)) >= 3 and counts == sorted(counts), counts
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def test_a_static_export_shows_the_monitors_state():
    """Through nbclient and nbconvert: a stopped monitor leaves its final state as HTML (no
    widget); a running one keeps the state of the last cell beside the widget, which an
    export shows when the notebook holds no widget state (JupyterLab's default save)."""
    import html

    import nbformat
    from nbclient import NotebookClient
    from nbconvert import HTMLExporter

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(src) for src in (
        "%load_ext jaxviz\nimport jax, jax.numpy as jnp",
        "%jaxviz watch",
        "f = jax.jit(lambda x: x * 2)\nfor n in range(1, 4):\n    f(jnp.ones(n))",
        "%jaxviz watch off",
        "%jaxviz watch",
        "f(jnp.ones(7))",
    )]
    NotebookClient(nb, timeout=120, kernel_name="python3").execute()
    (stopped,) = [o for o in nb.cells[1].outputs if o.output_type == "display_data"]
    assert set(stopped.data) == {"text/plain", "text/html"}  # the widget is gone
    assert "jaxviz · stopped · 3 compiles of 1 functions" in stopped.data["text/html"]
    (running,) = [o for o in nb.cells[4].outputs if o.output_type == "display_data"]
    assert "application/vnd.jupyter.widget-view+json" in running.data
    assert "jaxviz · watching · 4 compiles of 1 functions" in running.data["text/html"]  # after the last cell
    nb.metadata.pop("widgets", None)
    page = html.unescape(HTMLExporter(template_name="lab").from_notebook_node(nb)[0])
    assert "jaxviz · stopped · 3 compiles" in page and "jaxviz · watching · 4 compiles" in page
