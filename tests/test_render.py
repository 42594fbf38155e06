"""Renderers: DOT parsed back (pydot and ``dot -Tjson``), SVG, the HTML listing without
Graphviz, the rich tree, and the JSON schema."""

import json
import shutil
import subprocess

import jax
import jax.numpy as jnp
import pydot
import pytest
from rich.console import Console
from zoo import ZOO, deep_loss

import jaxviz
from jaxviz.graph import LEGEND, MIME_TYPE, SCHEMA_VERSION
from jaxviz.render import dot as dot_render
from jaxviz.render.payload import decode_graph

needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz 'dot' not installed")


@pytest.fixture(scope="module")
def deep_program():
    ws = [jnp.eye(4) for _ in range(12)]
    return jaxviz.trace(jax.jit(jax.value_and_grad(deep_loss)), ws, jnp.ones((2, 4)))


def _parse(dot_source):
    (graph,) = pydot.graph_from_dot_data(dot_source)
    return graph


def _all_nodes(g):
    nodes = [n for n in g.get_nodes() if n.get_name() not in ("node", "edge", "graph")]
    for sub in g.get_subgraphs():
        nodes += _all_nodes(sub)
    return nodes


def _all_clusters(g):
    subs = []
    for sub in g.get_subgraphs():
        subs.append(sub.get_name())
        subs += _all_clusters(sub)
    return subs


def test_collapsed_dot_has_one_box_per_collapsed_group(deep_program):
    graph = deep_program.graph
    source = deep_program.to_dot(expand=1, legend=False)
    parsed = _parse(source)
    names = {n.get_name() for n in _all_nodes(parsed)}
    view = graph.view(1)
    expected_boxes = {f"g{c}" for g in view.expanded for c in graph.groups[g].groups
                      if c not in view.expanded}
    assert expected_boxes and expected_boxes <= names
    # In each of forward and backward: the first block on its own (its input needs no
    # derivative: fewer equations) and the 11 identical others folded into one box.
    labels = [n.get_attributes().get("label", "").strip('"') for n in _all_nodes(parsed)]
    assert sum(lbl.startswith("block 1/12\n") for lbl in labels) == 2
    assert sum(lbl.startswith("block ×11\n11 × ") for lbl in labels) == 2
    assert sum("block" in lbl for lbl in labels) == 4
    clusters = [c for c in _all_clusters(parsed) if c.startswith("cluster_")]
    assert {f"cluster_g{g}" for g in view.expanded if g != 0} == set(clusters)
    # Edges only join drawn items.
    for e in parsed.get_edges():
        assert e.get_source() in names and e.get_destination() in names


@pytest.mark.parametrize("name", ["grad", "scan", "custom_jvp_vjp", "jit_in_jit"])
def test_full_dot_has_every_equation(name):
    fn, args, kwargs = ZOO[name]
    program = jaxviz.trace(fn, *args, **kwargs)
    parsed = _parse(program.to_dot(expand="all", legend=False))
    eqn_nodes = [n for n in _all_nodes(parsed) if n.get_attributes().get("class") == '"jaxviz-eqn"']
    assert len(eqn_nodes) == program.eqn_count
    # Every underlying value edge is drawn (aggregated per pair of endpoints).
    pairs = {(f"n{e.src}", f"n{e.dst}") for e in program.graph.edges}
    drawn = {(e.get_source(), e.get_destination()) for e in parsed.get_edges()
             if e.get_attributes().get("style") != "invis"}  # phase-order anchors
    assert drawn == pairs


@needs_dot
def test_dot_layout_json_roundtrip(deep_program):
    source = deep_program.to_dot(expand=0)
    out = subprocess.run(["dot", "-Tjson"], input=source, capture_output=True, text=True, check=True)
    laid = json.loads(out.stdout)
    drawn = {o["name"] for o in laid["objects"] if "nodes" not in o and "name" in o}
    view = deep_program.graph.view(0)
    for gid in deep_program.graph.groups[0].groups:
        assert f"g{gid}" in drawn
    visible = [e for e in laid.get("edges", []) if e.get("style") != "invis"]  # phase-order anchors
    assert len(visible) == len(view.edges)
    legend = {f"legend_{k}" for k in ("traced", "output")}
    assert legend <= drawn


@needs_dot
def test_svg_has_ids_and_tooltips(deep_program):
    svg = dot_render.render_svg(dot_render.program_dot(deep_program, 0))
    assert svg.startswith("<?xml") or "<svg" in svg[:500]
    gid = deep_program.graph.groups[0].groups[0]
    assert f'id="g{gid}"' in svg
    assert "forward" in svg and "backward" in svg


def test_static_and_captured_are_drawn_in_their_colours():
    fn, args, kwargs = ZOO["static_neg"]
    program = jaxviz.trace(fn, *args, **kwargs)
    parsed = _parse(program.to_dot(expand="all"))
    attrs = {n.get_name(): n.get_attributes() for n in _all_nodes(parsed)}
    static = [a for a in attrs.values() if "neg = True" in a.get("label", "")]
    assert static and static[0]["fillcolor"].strip('"') == LEGEND["static"]["color"]
    traced = [a for a in attrs.values() if a.get("label", "").strip('"').startswith("x")]
    assert traced[0]["fillcolor"].strip('"') == LEGEND["traced"]["color"]


def test_mimebundle_without_dot_falls_back_to_listing(deep_program):
    from jaxviz.render.notebook import program_mimebundle

    bundle = program_mimebundle(deep_program, use_dot=False)
    assert "image/svg+xml" not in bundle
    assert "not found" in bundle["text/html"] and "<details" in bundle["text/html"]
    assert bundle["text/plain"].startswith(deep_program.name)
    payload = bundle[MIME_TYPE]
    assert decode_graph(payload["graph"])["version"] == SCHEMA_VERSION
    json.dumps(payload)  # serialisable


@needs_dot
def test_mimebundle_with_dot_has_svg(deep_program):
    bundle = deep_program._repr_mimebundle_()
    assert "image/svg+xml" in bundle, bundle["text/html"][-400:]
    assert "<svg" in bundle["image/svg+xml"]
    assert "<svg" in bundle["text/html"]


def test_json_schema_shape(deep_program):
    data = json.loads(deep_program.graph.to_json_str())
    assert data["schema"] == "jaxviz.graph" and data["version"] == SCHEMA_VERSION
    assert len(data["nodes"]) == len(deep_program.graph.nodes)
    root = data["groups"][0]
    assert root["parent"] is None and root["n_eqns"] == deep_program.eqn_count
    for e in data["edges"][:50]:
        assert set(e["aval"]) == {"shape", "dtype", "weak_type", "text"}
    kinds = {n["kind"] for n in data["nodes"]}
    assert {"eqn", "input", "output"} <= kinds


def test_rich_tree_lists_groups(deep_program):
    console = Console(width=400, record=True, color_system=None)
    deep_program.expand = 1
    console.print(deep_program)
    text = console.export_text()
    assert text.splitlines()[0].strip() == deep_program.summary()
    assert "forward" in text and "backward" in text and "block 1/12 (call, 27 eqns)" in text
    # The 11 identical blocks of each pass are one collapsed line, which lists no member.
    assert text.count("block ×11 (11 identical block layers, 11 × 31 eqns)") == 1
    assert text.count("block ×11 (11 identical block layers, 11 × 37 eqns)") == 1
    assert "block 12/12" not in text
    # Only expanded groups list their members: no block's equations are shown.
    assert "dot_general" not in text
