"""A graph output's HTML outside JupyterLab (``jaxviz/render/embed.py``): the static drawing,
the payload as JSON, the loader, and the standalone viewer once per page. (The browser side
is ``test_frontends_browser.py``.)"""

from __future__ import annotations

import base64
import gzip
import json
import re
import sys
import types

import jax.numpy as jnp
import pytest

import jaxviz
from jaxviz.graph import MIME_TYPE
from jaxviz.render import embed
from jaxviz.render.payload import decode_graph

pytestmark = pytest.mark.skipif(embed.viewer_payload() is None,
                                reason="the standalone viewer is not built (npm run build)")

VIEWER = 'class="jaxviz-viewer"'


@pytest.fixture(scope="module")
def program():
    def layer(x, w):
        return jnp.tanh(x @ w)

    return jaxviz.trace(lambda x, w: layer(layer(x, w), w).sum(), jnp.ones((2, 3)), jnp.ones((3, 3)))


@pytest.fixture()
def placement(monkeypatch):
    """A fresh session: no output has carried the viewer yet."""
    fresh = embed.ViewerPlacement()
    monkeypatch.setattr(embed, "PLACEMENT", fresh)
    return fresh


def payload_in(html: str) -> dict:
    """The payload an output's HTML carries, its graph inflated."""
    data = re.search(r'<script type="application/json" class="jaxviz-data">(.*?)</script>', html, re.S)
    payload = json.loads(data.group(1))
    assert payload["graph"]["encoding"] == "gzip+base64"  # the second copy travels compressed
    return {**payload, "graph": decode_graph(payload["graph"])}


def test_the_first_output_carries_the_viewer_later_ones_the_loader(program, placement):
    first = program._repr_mimebundle_()
    second = program._repr_mimebundle_()
    assert VIEWER in first["text/html"] and VIEWER not in second["text/html"]
    for bundle in (first, second):
        html = bundle["text/html"]
        assert html.startswith('<div class="jaxviz-out"><div class="jaxviz-static"><div class="jaxviz-program">')
        shipped = bundle[MIME_TYPE]
        assert payload_in(html) == json.loads(json.dumps({**shipped, "graph": decode_graph(shipped["graph"])}))
        assert html.count("<script>") == 1  # the loader
        # every script in a hidden box, after the static drawing
        static_end = html.index('<div class="jaxviz-scripts" hidden style="display:none">')
        assert "<script" not in html[:static_end] and html.endswith("</script></div></div>")
    # the viewer travels gzipped and base64'd: no character in it to escape in the .ipynb
    packed = re.search(r'class="jaxviz-viewer">([^<]*)</script>', first["text/html"]).group(1)
    assert re.fullmatch(r"[A-Za-z0-9+/=]+", packed)
    assert len(packed) < 0.55 * embed.VIEWER_PATH.stat().st_size


def test_colab_outputs_each_carry_the_viewer(program, placement, monkeypatch):
    # Colab draws each output in an iframe of its own: no output can use another's viewer.
    monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    assert all(VIEWER in program._repr_mimebundle_()["text/html"] for _ in range(2))


def test_payload_cannot_close_its_script_element(placement):
    payload = {"name": "</script><script>alert(1)</script><!--", "graph": {"nodes": []}}
    html = embed.graph_output_html("<p>static</p>", payload, viewer=False)
    data = re.search(r'class="jaxviz-data">(.*?)</script>', html, re.S).group(1)
    assert "</" not in data and "<!--" not in data
    assert json.loads(data)["name"] == payload["name"]


def test_a_graph_too_big_to_ship_is_the_static_drawing_only(placement):
    static = "<div>svg here</div>"
    assert embed.graph_output_html(static, {"graph": None, "graph_omitted": "too big"}) == static
    assert not placement.sent  # the next output still carries the viewer


def test_a_rerun_of_the_cell_that_carried_it_carries_it_again():
    """In a real kernel, cells sent with their ids (as JupyterLab, Notebook 7 and VS Code
    send them): clearing the carrier's old output must not leave the page without it."""
    from jupyter_client.manager import start_new_kernel

    km, kc = start_new_kernel(kernel_name="python3", startup_timeout=60)
    try:
        kc.execute_interactive(
            "import jax.numpy as jnp, jaxviz\n"
            "p = jaxviz.trace(lambda x: jnp.sin(x).sum(), jnp.ones(3))\n"
            "from IPython.display import display", timeout=120)

        def run(cell_id: str) -> str:
            content = {"code": "display(p)", "silent": False, "store_history": True,
                       "user_expressions": {}, "allow_stdin": False, "stop_on_error": True}
            msg = kc.session.msg("execute_request", content, metadata={"cellId": cell_id})
            kc.shell_channel.send(msg)
            html = None
            while True:
                reply = kc.get_iopub_msg(timeout=60)
                if reply["parent_header"].get("msg_id") != msg["header"]["msg_id"]:
                    continue
                if reply["msg_type"] == "display_data":
                    html = reply["content"]["data"]["text/html"]
                elif reply["msg_type"] == "error":
                    pytest.fail("\n".join(reply["content"]["traceback"]))
                elif reply["msg_type"] == "status" and reply["content"]["execution_state"] == "idle":
                    return html

        carried = [VIEWER in run(cell) for cell in ("a", "b", "a", "b")]
        assert carried == [True, False, True, False]
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def test_the_viewer_packed_beside_the_first_cell_is_the_script_gzipped():
    thread = embed.prepare_viewer()  # as %load_ext does
    thread.join(timeout=120)
    assert not thread.is_alive()
    packed = embed.viewer_payload()
    assert packed is not None and gzip.decompress(base64.b64decode(packed)).decode("utf-8") == embed.viewer_source()
