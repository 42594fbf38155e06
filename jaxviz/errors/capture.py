"""``explain(exc)``: a tracer error JAX raised, explained (``Explanation``), or None."""

from __future__ import annotations

import sys
from contextlib import AbstractContextManager

from .. import _jax_internals as internals
from ..tracing import TRACE_ERROR_HOOKS
from .explanation import Explanation, is_tracer_error
from .provenance import Explainer


def explain(exc: BaseException) -> Explanation | None:
    """Explain a JAX tracer error: the failing line, the traced value and its provenance
    graph, and ranked fixes. Returns None for an exception that is not a tracer error.
    The exception itself is not modified (the explanation is cached on it)."""
    if not is_tracer_error(exc):
        return None
    cached = getattr(exc, "_jaxviz_explanation", None)
    if isinstance(cached, Explanation):
        return cached
    explanation = Explainer(exc).explain()
    try:
        exc._jaxviz_explanation = explanation  # type: ignore[attr-defined]
    except (AttributeError, TypeError):
        pass
    return explanation


def safe_explain(exc: BaseException) -> Explanation | None:
    try:
        return explain(exc)
    except Exception:  # the explainer must never hide the user's error
        return None


def capture_tracer_errors() -> AbstractContextManager[None]:
    """A ``with`` block in which JAX's tracer errors record the value they refused and
    the frame that refused it: what ``explain`` walks back from to the inputs. ``import
    jaxviz`` patches nothing; ``%load_ext jaxviz`` captures for the session and
    ``jaxviz.trace`` for its trace. Without a capture, ``explain`` knows only the line."""
    return internals.tracer_errors_captured()


def note_explanation(exc: BaseException) -> None:
    """Outside IPython (scripts, plain Python), a tracer error from ``jaxviz.trace``
    carries the explanation as an exception note, printed with the traceback. In IPython
    the extension's exception hook shows it instead."""
    if not hasattr(exc, "add_note") or not is_tracer_error(exc):
        return
    ipython = sys.modules.get("IPython")
    if ipython is not None and ipython.get_ipython() is not None:
        return
    explanation = safe_explain(exc)
    if explanation is not None:
        exc.add_note(explanation.text())


def install() -> None:
    """``jaxviz.trace`` notes the explanation on the tracer errors it raises (idempotent;
    ``jaxviz.wiring`` calls it)."""
    if note_explanation not in TRACE_ERROR_HOOKS:
        TRACE_ERROR_HOOKS.append(note_explanation)
