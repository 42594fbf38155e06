"""Renderers: DOT/SVG (``dot``), an HTML listing that needs no Graphviz (``html``), ``rich``
for terminals (``terminal``), the notebook MIME bundle (``notebook``) and browser payload
(``payload``), and the views of the explainer (``errors``), the compile log
(``recompiles``), a trace diff (``diff``) and the devices and run reports (``devices``).
Each reads the objects it draws; none changes them. ``install()`` registers them in
``jaxviz.display``, the one way every jaxviz object draws itself."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from .. import display
from ..devices import DeviceTable
from ..diff import ProgramDiff
from ..errors import Explanation
from ..profiling import RunReport
from ..program import Program
from ..recompiles import CompileLog, Summary, Watch
from .devices import (
    device_table_mimebundle,
    device_table_rich,
    run_report_mimebundle,
    run_report_rich,
)
from .diff import diff_dot, diff_mimebundle, diff_rich, diff_svg
from .dot import program_dot
from .errors import explanation_dot, explanation_mimebundle, explanation_rich
from .notebook import program_mimebundle, program_mimebundles
from .payload import program_payload
from .recompiles import (
    log_mimebundle,
    log_rich,
    summary_mimebundle,
    summary_renderables,
    watch_mimebundle,
    watch_rich,
)
from .terminal import program_renderables


def _with_costs(draw: Callable[[Program], Any]) -> Callable[[Program], Any]:
    """A program's views show its FLOPs and bytes: estimated (once) before it is drawn."""
    def drawn(program: Program) -> Any:
        program.costs()
        return draw(program)
    return drawn


def _rich_of(draw: Callable[[Any], Any]) -> Callable[[Any], Iterator[Any]]:
    def renderables(obj: Any) -> Iterator[Any]:
        yield from draw(obj)
    return renderables


def install() -> None:
    """Register every object's views (idempotent: registering again replaces them)."""
    display.register(Program, mimebundle=_with_costs(program_mimebundle),
                     mimebundles=_with_costs(program_mimebundles),
                     rich=_with_costs(program_renderables), dot=program_dot, payload=program_payload)
    display.register(ProgramDiff, mimebundle=diff_mimebundle, rich=diff_rich, dot=diff_dot, svg=diff_svg)
    display.register(Explanation, mimebundle=explanation_mimebundle, rich=_rich_of(explanation_rich),
                     dot=explanation_dot)
    display.register(CompileLog, mimebundle=log_mimebundle, rich=log_rich)
    display.register(Watch, mimebundle=watch_mimebundle, rich=watch_rich)
    display.register(Summary, mimebundle=summary_mimebundle, rich=summary_renderables)
    display.register(RunReport, mimebundle=run_report_mimebundle, rich=run_report_rich)
    display.register(DeviceTable, mimebundle=device_table_mimebundle, rich=device_table_rich)
