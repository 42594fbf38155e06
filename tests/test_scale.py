"""Big programs stay usable: collapsed views stay small, nothing is laid out or shipped
in full by accident. (Speed targets live in benchmarks/bench_scale.py.)"""

import json
import os
import sys

import jax.numpy as jnp
import numpy as np
import pytest

import jaxviz
from jaxviz.graph import MIME_TYPE
from jaxviz.render import payload as payload_module
from jaxviz.render.notebook import MAX_DOT_ITEMS, program_mimebundle

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "benchmarks"))
import models  # noqa: E402
from views import edges_problem  # noqa: E402


@pytest.fixture(scope="module")
def transformer():
    return jaxviz.trace(models.train_step, models.init_params(4), models.tokens())


def test_train_step_first_view_is_small(transformer):
    graph = transformer.graph
    assert graph.eqn_count > 800
    view = graph.view("auto")
    assert sum(view.visible_counts()) <= 60
    top = {graph.groups[g].kind for g in graph.groups[0].groups}
    assert {"inputs", "phase", "outputs"} <= top  # params; forward, backward, update; results
    phases = [graph.groups[g].name for g in graph.groups[0].groups if graph.groups[g].kind == "phase"]
    assert phases == ["forward", "backward", "update"]


def test_big_payload_travels_compressed_and_decodes_to_the_graph(transformer):
    shipped, omitted = payload_module.encode_graph(transformer.graph)
    assert omitted is None
    assert shipped["encoding"] == "gzip+base64"
    full = transformer.graph.to_json_str()
    assert len(shipped["data"]) < len(full) / 10  # in columns, with tables, gzipped, in base64
    decoded = payload_module.decode_graph(shipped)
    assert decoded == json.loads(full)


def test_a_big_graph_travels_in_columns_with_each_source_and_aval_written_once(transformer):
    data = transformer.graph.to_columns()
    text = payload_module.json_bytes(data)  # as it travels: UTF-8
    full = payload_module.json_bytes(transformer.graph.to_json())
    assert len({json.dumps(s, sort_keys=True) for s in data["sources"]}) == len(data["sources"])
    assert len(set(map(json.dumps, data["avals"]))) == len(data["avals"])
    nodes = data["nodes"]
    assert set(nodes) == set(transformer.graph.nodes[0].to_json())  # one column per field
    assert all(len(column) == len(transformer.graph.nodes) for column in nodes.values())
    assert all(isinstance(s, (int, type(None))) for s in nodes["source"])
    assert len(text) < len(full) / 3  # fields named once; a layer's equations share lines and types
    # the full form again, as decode_graph and the browser restore it
    restored = payload_module.without_tables(payload_module.as_rows(json.loads(text)))
    assert restored == json.loads(full)


def test_rows_written_with_tables_as_notebooks_saved_before_still_decode(transformer):
    text = payload_module.json_bytes(payload_module.as_rows(transformer.graph.to_columns()))  # rows, tables
    shipped = payload_module.compressed_graph(text)
    assert payload_module.decode_graph(shipped) == json.loads(transformer.graph.to_json_str())


def test_a_graph_travels_inline_exactly_when_its_compact_json_fits(monkeypatch, transformer):
    compact = payload_module.json_bytes(transformer.graph.to_columns())
    full = json.loads(transformer.graph.to_json_str())
    for limit, inline in ((len(compact), True), (len(compact) - 1, False)):
        monkeypatch.setattr(payload_module, "MAX_INLINE_GRAPH_BYTES", limit)
        shipped, _ = payload_module.encode_graph(transformer.graph)
        assert ("encoding" not in shipped) == inline
        assert payload_module.decode_graph(shipped) == full


def test_huge_program_is_collapsed_and_not_shipped(monkeypatch):
    program = jaxviz.trace(models.unrolled(3_000), jnp.ones(3))
    assert program.eqn_count >= 3_000
    # One long same-line run: a single group, so the first view is a handful of items.
    assert sum(program.graph.view("auto").visible_counts()) < 10
    monkeypatch.setattr(payload_module, "MAX_SHIPPED_NODES", 1_000)
    bundle = program_mimebundle(program, use_dot=False)
    assert bundle[MIME_TYPE]["graph"] is None and "static rendering" in bundle[MIME_TYPE]["graph_omitted"]
    assert "<details" in bundle["text/html"]


def test_fully_expanded_huge_view_is_not_laid_out():
    program = jaxviz.trace(models.unrolled(2_000), jnp.ones(3))
    program.expand = "all"
    bundle = program_mimebundle(program, use_dot=True)
    assert program.eqn_count > MAX_DOT_ITEMS
    assert "image/svg+xml" not in bundle and "too many to lay out" in bundle["text/html"]


def test_huge_program_text_is_the_summary_only():
    from jaxviz.render.notebook import MAX_TEXT_EQNS

    program = jaxviz.trace(models.unrolled(MAX_TEXT_EQNS + 200), jnp.ones(3))
    text = program_mimebundle(program, use_dot=False)["text/plain"]
    assert text.startswith(program.summary()) and len(text.splitlines()) == 2
    assert "program.text()" in text and len(program.text().splitlines()) > MAX_TEXT_EQNS


def test_listing_of_a_big_program_is_bounded(transformer, monkeypatch):
    from jaxviz.render import html as html_module

    monkeypatch.setattr(html_module, "MAX_LISTED_TOTAL", 300)
    monkeypatch.setattr(transformer, "expand", "all")
    html = html_module.program_html(transformer)
    assert html.count("<li data-node=") == 300 < len(transformer.graph.nodes)
    assert "groups not listed" in html and "more</li>" in html


@pytest.mark.parametrize("expand", ["auto", 1, "all", "each group"])
def test_every_value_is_drawn_between_the_items_around_its_ends(transformer, expand):
    """Edge buckets are made per group when a view first opens it: whatever was opened
    before, each value crossing between two visible items is drawn once between them,
    with its type (as the model's edges and parent chains say)."""
    graph = transformer.graph
    requests = [[gid] for gid in range(1, len(graph.groups), 7)] if expand == "each group" else [expand]
    for request in requests:
        problem = edges_problem(graph, request)
        assert not problem, problem


def test_the_payload_json_is_written_whatever_the_values():
    """orjson writes the payload (a NumPy scalar as a number, text as UTF-8); what it
    declines (a key not a string, an int past 64 bits) is written by ``json``."""
    written = payload_module.json_bytes({"flops": np.float32(0.5), "n": np.int64(3), "name": "block ×12"})
    assert json.loads(written) == {"flops": 0.5, "n": 3, "name": "block ×12"} and "×".encode() in written
    assert json.loads(payload_module.json_bytes({1: "a", "big": 2**70})) == {"1": "a", "big": 2**70}
