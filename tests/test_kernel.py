"""The extension in a real Jupyter kernel (a separate process, via nbclient; run beside
the tests before this one: ``tests/background.py``)."""

import shutil

import background
import nbformat

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
    return background.execute_notebook(nb, timeout=120)


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
