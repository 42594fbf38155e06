"""The JupyterLab extension's TypeScript unit tests (``labextension/test``, Node's own
test runner), run from pytest, including a parity check of the TypeScript views against
``jaxviz.graph`` on the programs of the test zoo."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest
from zoo import ZOO

import jaxviz
from jaxviz.costs import annotate_collectives, group_heat
from jaxviz.render.dot import (
    chain_label,
    cluster_attrs,
    group_box_attrs,
    legend_kinds,
    node_attrs,
    program_dot,
)
from jaxviz.render.payload import decode_graph
from jaxviz.sharding import CollectiveCounts, HloCollective

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import programs  # noqa: E402

# Programs of benchmarks/programs/ whose first views open chains of groups that only wrap
# one another (forward › loss_fn › GPT), with the library each needs.
CHAIN_PROGRAMS = {"nanogpt": "flax", "numpyro_nuts": "numpyro"}
EXT = ROOT / "labextension"
# The DOT attributes that make the picture (colours, shapes, outlines, font sizes): the
# browser's drawing of every item must have the kernel's.
STYLE_KEYS = ("shape", "style", "fillcolor", "color", "fontcolor", "fontsize", "penwidth", "peripheries",
              "labeljust")

pytestmark = pytest.mark.skipif(shutil.which("node") is None or shutil.which("npm") is None,
                                reason="Node.js/npm not installed: the TypeScript tests need them")


def _expansions(graph) -> list[list[int]]:
    """Collapsed, auto, each top-level group opened alone, one level, everything."""
    out = [[0], sorted(graph.expansion(None)), sorted(graph.expansion(1)), sorted(graph.expansion("all"))]
    out += [[0, g] for g in graph.groups[0].groups[:4]]
    deep = [g.id for g in graph.groups if g.depth >= 2][:2]
    out += [[g] for g in deep]
    return out


def _clusters(view) -> dict[int, list[int]]:
    """The open groups the kernel's drawing has a cluster for, each with the chain of open
    groups it stands for (``forward › loss_fn › GPT``: one cluster, the outermost's)."""
    graph, out, stack = view.graph, {}, [0]
    while stack:
        for child in graph.groups[stack.pop()].groups:
            if child in view.expanded:
                out[child] = view.chain(child)
                stack.append(out[child][-1])
    return out


def _case(name, program) -> dict:
    program.costs()  # FLOP/byte estimates: the heat colours of groups
    graph = program.graph
    views = []
    for expanded in _expansions(graph):
        view = graph.view(expanded)
        nodes = sorted(n for g in view.expanded for n in graph.groups[g].nodes)
        groups = sorted(c for g in view.expanded for c in graph.groups[g].groups if c not in view.expanded)
        edges = [[f"{e.src[0]}{e.src[1]}", f"{e.dst[0]}{e.dst[1]}", len(e.avals), e.label] for e in view.edges]
        labels = {f"g{c}": group_box_attrs(graph, c, [], [])["label"] for c in groups}
        clusters = _clusters(view)
        labels.update({f"cluster_g{g}": chain_label(graph, chain) for g, chain in clusters.items()})
        drawn = {f"n{n}": node_attrs(graph, n) for n in nodes}
        drawn.update({f"g{c}": group_box_attrs(graph, c, [], []) for c in groups})
        drawn.update({f"cluster_g{g}": cluster_attrs(graph, g) for g in clusters})
        styles = {item: {k: v for k, v in attrs.items() if k in STYLE_KEYS} for item, attrs in drawn.items()}
        views.append({"expanded": expanded, "nodes": nodes, "groups": groups, "edges": edges, "labels": labels,
                      "styles": styles})
    heat = {}
    for g in graph.groups[1:]:
        h = group_heat(graph, g.id)
        if h is not None:
            heat[str(g.id)] = {"text": h.text, "fill": h.fill, "font": h.font}
    dot = program_dot(program).source
    dot_ids = sorted(set(re.findall(r"^\s*([ng]\d+) \[", dot, flags=re.M)))
    payload = program.to_json()
    payload["graph"] = decode_graph(payload["graph"])  # as the browser inflates a big one
    return {"name": name, "payload": payload, "views": views, "heat": heat, "dot_ids": dot_ids,
            "legend_kinds": legend_kinds(graph)}


def _sharded_program():
    """A shard_map with collectives on a one-device mesh with explicit axes (the sharded
    types and specs), and a compiled collective put on a call of the user's, as a compile
    on several devices would (``profiling.attach_report``): the communication nodes, specs
    and communication line the browser draws as the kernel does."""
    mesh = jax.make_mesh((1,), ("data",), axis_types=(jax.sharding.AxisType.Explicit,), devices=jax.devices()[:1])

    def norm(h):
        return h / jax.lax.psum(jnp.sum(h * h), "data")

    def block(x, w):
        h = jnp.tanh(x @ w)
        return jax.lax.all_gather(norm(h), "data", tiled=True)

    def step(x, w):
        spec = jax.sharding.PartitionSpec("data", None)
        return jax.shard_map(block, mesh=mesh, in_specs=(spec, jax.sharding.PartitionSpec()), out_specs=spec)(x, w)

    with jax.set_mesh(mesh):
        x = jax.device_put(jnp.ones((8, 4)), jax.sharding.PartitionSpec("data", None))
        program = jaxviz.trace(step, x, jnp.ones((4, 4)))
    outer, inner = sorted(program.call_groups)  # block's call, then norm's inside it
    fused = f"jit(step)/(jv{outer}:block/dot_general:jv{outer}:block/jv{inner}:norm/div)"  # on block itself
    counts = CollectiveCounts([HloCollective("all-reduce", 4096, f"jit(step)/jv{outer}:block/jv{inner}:norm/mul"),
                               HloCollective("all-gather", 512, fused)])
    annotate_collectives(program.graph, program.call_groups, counts)
    groups = {g.name: g for g in program.graph.groups}
    assert (groups["norm"].collectives, groups["block"].collectives, program.graph.groups[0].collectives) == (1, 2, 2)
    return program


@pytest.fixture(scope="module")
def parity_fixtures(tmp_path_factory) -> Path:
    cases = []
    for name, (fn, args, kwargs) in ZOO.items():
        cases.append(_case(name, jaxviz.trace(fn, *args, **kwargs)))
    cases.append(_case("shard_map with collectives", _sharded_program()))
    for name, library in CHAIN_PROGRAMS.items():
        if importlib.util.find_spec(library):
            case = programs.load(name)
            cases.append(_case(name, jaxviz.trace(case.fn, *case.args, **case.kwargs)))
    path = tmp_path_factory.mktemp("parity") / "cases.json"
    path.write_text(json.dumps(cases))
    return path


def test_typescript_unit_tests(parity_fixtures):
    if not (EXT / "node_modules").is_dir():
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=EXT, check=True,
                       capture_output=True, timeout=600)
    env = dict(os.environ, JAXVIZ_PARITY_FIXTURES=str(parity_fixtures))
    proc = subprocess.run(["npm", "test", "--silent"], cwd=EXT, env=env, capture_output=True,
                          text=True, timeout=600)
    out = proc.stdout + proc.stderr
    summary = dict(re.findall(r"^# (tests|pass|fail|skipped) (\d+)$", out, flags=re.M))
    assert proc.returncode == 0 and summary.get("fail") == "0", out[-6000:]
    assert int(summary["pass"]) >= 40, f"too few TypeScript tests ran: {summary}\n{out[-3000:]}"
    assert summary.get("skipped") == "0", f"parity tests were skipped: {out[-3000:]}"
