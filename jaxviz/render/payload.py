"""The JSON payload sent to the browser (MIME ``application/vnd.jaxviz+json``): the graph
model plus the program's summary, inputs and initial expansion.

Big graphs travel compressed: ``"graph"`` is then ``{"encoding": "gzip+base64", "data":
str, "bytes": int}`` holding the same JSON with each distinct source location and aval
written once (tables ``sources`` and ``avals``, referred to by index) and the nodes, edges
and groups written as columns (``Graph.to_columns``), which the browser inflates with the
standard ``DecompressionStream`` and restores (``labextension/src/shared/payload.ts``); a
12k-equation train step's 7.9 MB of JSON (1.7 MB in columns) travel as 0.25 MB. Notebooks
saved before hold one object per item, with the same tables: both are restored. A graph
travels inline, in full (one object per item, without tables), when its compact form's JSON
is at most ``MAX_INLINE_GRAPH_BYTES``.
Past ``MAX_SHIPPED_NODES`` the graph is not shipped at all (``"graph": null`` with
``"graph_omitted"`` saying why): the browser shows the static rendering of the bundle.
"""

from __future__ import annotations

import base64
import gzip
import json
from typing import Any

import orjson

# Of the compact form (columns, tables). A small MLP's (4 KB) travels inline, readable in
# the notebook's JSON; a Flax CNN's train step (44 KB compact, 190 KB in full) travels as
# 13 KB: the notebook keeps what travels.
MAX_INLINE_GRAPH_BYTES = 16_000
MAX_SHIPPED_NODES = 60_000


def encode_graph(graph: Any) -> tuple[Any, str | None]:
    """(the graph as it travels, why it was left out or None)."""
    if len(graph.nodes) > MAX_SHIPPED_NODES:
        return None, (f"{len(graph.nodes)} nodes is more than the browser view takes "
                      f"({MAX_SHIPPED_NODES}); showing the static rendering")
    data = graph.to_columns()  # once: its text decides how it travels
    text = json_bytes(data)
    if len(text) > MAX_INLINE_GRAPH_BYTES:
        return compressed_graph(text), None
    return without_tables(as_rows(data)), None


def json_bytes(data: Any) -> bytes:
    """``data``'s compact JSON text, UTF-8 encoded: written by orjson, a tenth of
    ``json.dumps``'s time on a big graph, which the first paint of a notebook's graph waits
    for (``program_mimebundles``); by ``json`` where orjson declines a value."""
    try:
        return orjson.dumps(data, option=orjson.OPT_SERIALIZE_NUMPY)  # (a NumPy scalar, as a number)
    except TypeError:  # what orjson does not write (an int past 64 bits, a key not a string)
        return json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


GRAPH_GZIP_LEVEL = 2  # a graph in columns comes out 3 to 10 % bigger than at 6, four times faster


def gzip_base64(text: str | bytes, level: int = GRAPH_GZIP_LEVEL) -> str:
    """``text`` as it travels in an output: gzip (at ``level``; no timestamp, so equal inputs
    give equal outputs), then base64 (nothing in it needs escaping in HTML or in the
    notebook's JSON); the browser's DecompressionStream inflates it."""
    data = text.encode("utf-8") if isinstance(text, str) else text
    return base64.b64encode(gzip.compress(data, compresslevel=level, mtime=0)).decode("ascii")


def compressed_graph(text: bytes) -> dict[str, Any]:
    """A graph's JSON text (UTF-8) as it travels compressed (the browser inflates it)."""
    return {"encoding": "gzip+base64", "data": gzip_base64(text), "bytes": len(text)}


def decode_graph(shipped: Any) -> Any:
    """The inverse of ``encode_graph`` (for tests and Python consumers): the graph's full
    JSON, as ``Graph.to_json()`` writes it."""
    if isinstance(shipped, dict) and shipped.get("encoding") == "gzip+base64":
        return without_tables(as_rows(json.loads(gzip.decompress(base64.b64decode(shipped["data"])))))
    return shipped


def as_rows(graph: dict[str, Any]) -> dict[str, Any]:
    """A graph's JSON written in columns (``Graph.to_columns``) with one object per node,
    edge and group (as ``shared/payload.ts`` does); one written so already as it is."""
    for kind in ("nodes", "edges", "groups"):
        columns = graph[kind]
        if isinstance(columns, dict):
            graph[kind] = [dict(zip(columns, values)) for values in zip(*columns.values())]
    return graph


def without_tables(graph: dict[str, Any]) -> dict[str, Any]:
    """A graph's JSON written with tables (``Graph.to_columns``'s) in full: each
    index replaced by its source location or aval (as ``shared/payload.ts`` does)."""
    if "avals" not in graph:
        return graph
    sources, avals = graph.pop("sources"), graph.pop("avals")
    for item in (*graph["nodes"], *graph["groups"]):
        if item["source"] is not None:
            item["source"] = sources[item["source"]]
    for node in graph["nodes"]:
        node["outputs"] = [avals[i] for i in node["outputs"]]
    for edge in graph["edges"]:
        edge["aval"] = avals[edge["aval"]]
    return graph


def program_payload(program: Any, expanded: frozenset[int] | None = None) -> dict[str, Any]:
    """``expanded``: the program's expansion where the caller resolved it already."""
    graph = program.graph
    shipped, omitted = encode_graph(graph)
    payload = {
        "schema": "jaxviz.program",
        "version": 1,
        "name": program.name,
        "summary": program.summary(),
        "timings": program.timings,
        "device": program.device,
        "inputs": [
            {"name": i.name, "kind": i.kind, "aval": i.aval.to_json() if i.aval else None,
             "value": i.value, "source": i.source}
            for i in program.inputs
        ],
        "trace_output": program.trace_output,
        "expanded": sorted(graph.expansion(program.expand) if expanded is None else expanded),
        "graph": shipped,
    }
    if omitted:
        payload["graph_omitted"] = omitted
    return payload
