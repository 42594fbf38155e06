"""The extension in a real Jupyter kernel (a separate process, via nbclient; run beside
the tests before this one: ``tests/background.py``)."""

import shutil

import background
import nbformat
import pytest
from execute_notebook import execute_notebook

from jaxviz.graph import MIME_TYPE


def execute() -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("%load_ext jaxviz\nimport jax.numpy as jnp\nx = jnp.arange(4.0)"),
        nbformat.v4.new_code_cell("%%jaxpr\ny = jnp.sin(x) * 2\ny.sum()"),
        nbformat.v4.new_code_cell("print(type(y).__name__, y.shape)"),
        nbformat.v4.new_code_cell("%%jaxpr\nif x.sum() > 0:\n    z = 1"),
        nbformat.v4.new_code_cell("print('alive', 'z' in dir())"),
    ]
    nb.cells[3].metadata["tags"] = ["raises-exception"]
    return execute_notebook(nb, timeout=120)


EXECUTED = background.job(__file__, execute)  # run beside the tests before this module's


def test_magic_in_a_real_kernel():
    nb = EXECUTED.result()
    graph_out = nb.cells[1].outputs
    displays = [o for o in graph_out if o.output_type == "display_data"]
    assert displays and MIME_TYPE in displays[0].data
    payload = displays[0].data[MIME_TYPE]
    assert payload["graph"]["groups"][0]["n_eqns"] == 3  # sin, mul, reduce_sum
    assert "text/html" in displays[0].data and "text/plain" in displays[0].data
    if shutil.which("dot"):
        assert "<svg" in displays[0].data["image/svg+xml"]
    result = [o for o in graph_out if o.output_type == "execute_result"]
    assert result and "Array" in result[0].data["text/plain"]
    assert "ArrayImpl (4,)" in nb.cells[2].outputs[0].text
    err = nb.cells[3].outputs[-1]
    assert err.output_type == "error" and err.ename == "TracerBoolConversionError"
    assert any("explained above" in line for line in err.traceback) and len(err.traceback) == 2
    shown = [o for o in nb.cells[3].outputs if o.output_type == "display_data"]
    # the explanation, then the full traceback folded under it
    assert len(shown) == 2 and "cell line 1" in shown[0].data["text/plain"]
    assert "<details class='jaxviz-traceback'" in shown[1].data["text/html"]
    assert "alive False" in nb.cells[4].outputs[0].text


def run_as_notebook_cell(kc, code: str) -> str:
    """Send ``code`` as JupyterLab runs a notebook's cell (its request's metadata names
    the cell); the request's id."""
    content = {"code": code, "silent": False, "store_history": True, "user_expressions": {},
               "allow_stdin": False, "stop_on_error": True}
    msg = kc.session.msg("execute_request", content, metadata={"cellId": "a-notebook-cell"})
    kc.shell_channel.send(msg)
    return msg["header"]["msg_id"]


def displays_of(kc, msg_id: str) -> list[tuple[str, dict]]:
    """The displays (and their updates) the request ``msg_id`` made, until it is done."""
    shown = []
    while True:
        reply = kc.get_iopub_msg(timeout=120)
        if reply["parent_header"].get("msg_id") != msg_id:
            continue
        if reply["msg_type"] in ("display_data", "update_display_data"):
            shown.append((reply["msg_type"], reply["content"]))
        elif reply["msg_type"] == "error":
            pytest.fail("\n".join(reply["content"]["traceback"]))
        elif reply["msg_type"] == "status" and reply["content"]["execution_state"] == "idle":
            return shown


@pytest.mark.skipif(not shutil.which("dot"), reason="Graphviz 'dot' not installed")
def test_the_graph_is_shown_before_dot_lays_it_out_and_the_drawing_follows():
    """In a real kernel, ``%%jaxpr`` run as a notebook's cell publishes what JupyterLab
    draws (the payload) before ``dot`` lays the view out, then updates that display with
    dot's drawing: one output, the same payload (the browser keeps the view it drew), and
    the drawing a saved notebook shows. Run from a console, it shows the whole drawing
    once."""
    from jupyter_client.manager import start_new_kernel

    km, kc = start_new_kernel(kernel_name="python3", startup_timeout=60)
    try:
        kc.execute_interactive("%load_ext jaxviz\nimport jax.numpy as jnp\nx = jnp.arange(4.0)", timeout=120)
        notebook = displays_of(kc, run_as_notebook_cell(kc, "%%jaxpr\ny = jnp.sin(x) * 2\ny.sum()"))
        console = displays_of(kc, kc.execute("%%jaxpr\ny = jnp.sin(x) * 2\ny.sum()"))
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    # a console's request names no cell (jupyter console and qtconsole ignore display
    # updates): the whole drawing, once
    assert [kind for kind, _ in console] == ["display_data"]
    assert "<svg" in console[0][1]["data"]["image/svg+xml"] and "sin" in console[0][1]["data"]["text/plain"]
    assert [kind for kind, _ in notebook] == ["display_data", "update_display_data"]
    (_, first), (_, update) = notebook
    assert first["transient"]["display_id"] == update["transient"]["display_id"]
    assert "image/svg+xml" not in first["data"] and first["data"][MIME_TYPE]["graph"]["nodes"]
    assert "<svg" in update["data"]["image/svg+xml"] and "text/html" in update["data"]
    assert update["data"][MIME_TYPE] == first["data"][MIME_TYPE]
    assert "sin" in update["data"]["text/plain"] and "sin" not in first["data"]["text/plain"]
