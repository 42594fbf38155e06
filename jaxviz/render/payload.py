"""The JSON payload sent to the browser (MIME ``application/vnd.jaxviz+json``): the graph
model plus the program's summary, inputs and initial expansion."""

from __future__ import annotations

from typing import Any


def program_payload(program: Any) -> dict[str, Any]:
    graph = program.graph
    return {
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
        "expanded": sorted(graph.expansion(program.expand)),
        "graph": graph.to_json(),
    }
