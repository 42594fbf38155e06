"""jaxviz: see what JAX traced, what recompiles and why.

Public API:
- ``trace(fn, *args, **kwargs) -> Program`` and ``trace_cell(source, namespace) -> Program``
- ``explain(exc) -> Explanation``: why JAX refused a traced value, where it came from, the fixes
  (``with capture_tracer_errors():`` around code that raises it, outside ``trace`` and the notebook)
- ``watch() -> Watch``: every trace and compile, its cause and cost (``with jaxviz.watch() as log``)
- ``diff(program_a, program_b)`` or ``diff(fn, args_a, args_b) -> ProgramDiff``: what changed
  between two traces; ``recompile_diff(name)``: a function's last recompile against the one before
- ``expect_compiles(train_step=1)``, ``no_recompiles()``: fail with ``RecompileError`` (and
  jaxviz's causes) when functions compile more than they should
- ``profile(fn, *args, device=None, repeats=5) -> RunReport``: where it ran, compile vs run
  time, FLOPs, bytes and memory
- ``load_ipython_extension`` (``%load_ext jaxviz``): the ``%%jaxpr`` and ``%jaxviz`` magics.
"""

from __future__ import annotations

from typing import Any

import jax

from .jax_versions import check_jax_version

# Before any module touches JAX's private API: an unsupported JAX gets one clear line.
check_jax_version(jax.__version__)

from . import wiring  # noqa: E402
from .adapters import UnsplittableArgument  # noqa: E402
from .cells import trace_cell  # noqa: E402
from .diff import ProgramDiff, diff, recompile_diff  # noqa: E402
from .errors import Explanation, capture_tracer_errors, explain  # noqa: E402
from .graph import MIME_TYPE, Graph  # noqa: E402
from .guard import RecompileError, expect_compiles, no_recompiles  # noqa: E402
from .profiling import RunReport, profile  # noqa: E402
from .program import InputInfo, Program  # noqa: E402
from .recompiles import Cause, CompileEvent, watch  # noqa: E402
from .tracing import trace  # noqa: E402
from .version import VERSION as __version__  # noqa: E402

wiring.install()  # every connection between the parts, in one place (jaxviz.wiring)

__all__ = [
    "MIME_TYPE", "Cause", "CompileEvent", "Explanation", "Graph", "InputInfo", "Program",
    "ProgramDiff", "RecompileError", "RunReport", "UnsplittableArgument", "__version__", "capture_tracer_errors", "diff",
    "expect_compiles", "explain", "load_ipython_extension", "no_recompiles", "profile",
    "recompile_diff", "trace",
    "trace_cell", "unload_ipython_extension", "watch",
]


def load_ipython_extension(shell: Any) -> None:
    from .ipython.magics import load_ipython_extension as load

    load(shell)


def unload_ipython_extension(shell: Any) -> None:
    from .ipython.magics import unload_ipython_extension as unload

    unload(shell)
