"""The IPython exception hook: errors JAX raises on traced values, in any cell, shown
with jaxviz's explanation and the traceback cut to the user's frames (the full one
folded above it)."""

from __future__ import annotations

import html
from typing import Any

from IPython.display import HTML, display

from .. import _jax_internals as internals
from ..errors.capture import safe_explain
from ..errors.explanation import is_tracer_error, tracer_error_types
from ..errors.messages import attach_rendering
from ..errors.userline import ANSI, short_traceback, walk_tb

_HOOKS: dict[int, tuple[tuple[type, ...], Any]] = {}  # id(shell) → previous custom exc


def _full_traceback_html(shell: Any, etype: type, value: BaseException, tb: Any,
                         tb_offset: Any) -> str | None:
    """The full traceback as a folded block: one click away."""
    try:
        stb = shell.InteractiveTB.structured_traceback(etype, value, tb, tb_offset=tb_offset)
    except Exception:
        return None
    text = ANSI.sub("", "\n".join(stb))
    frames = sum(1 for _ in walk_tb(tb))
    return (f"<details class='jaxviz-traceback' style='font:12px var(--jp-ui-font-family,sans-serif)'>"
            f"<summary>full traceback ({frames} frames)</summary><pre style='font-size:11px;"
            f"white-space:pre-wrap'>{html.escape(text)}</pre></details>")


def _handler(shell: Any, etype: type, value: BaseException, tb: Any, tb_offset: Any = None) -> None:
    """IPython custom exception handler: for an explained tracer error, the explanation,
    the full traceback folded under it, and a short traceback of the user's frames (``%tb``
    shows the full one); anything else is shown exactly as IPython would have."""
    previous = _HOOKS.get(id(shell))
    explanation = None
    if is_tracer_error(value):
        explanation = safe_explain(value)
    elif previous is not None and previous[0] and isinstance(value, previous[0]):
        return previous[1](etype, value, tb, tb_offset=tb_offset)
    if explanation is None:
        shell.showtraceback((etype, value, tb), tb_offset=tb_offset, running_compiled_code=True)
        return None
    try:
        display(explanation)
        folded = _full_traceback_html(shell, etype, value, tb, tb_offset)
        if folded is not None:
            display(HTML(folded))
    except Exception:
        pass
    if hasattr(value, "_render_traceback_"):  # a %%jaxpr cell's own short rendering
        shell.showtraceback((etype, value, tb), tb_offset=tb_offset, running_compiled_code=True)
        return None
    attach_rendering(value, short_traceback(value))
    try:
        shell.showtraceback((etype, value, tb), tb_offset=tb_offset, running_compiled_code=True)
    finally:  # %tb, later, shows the full traceback
        try:
            delattr(value, "_render_traceback_")  # set by attach_rendering
        except AttributeError:
            pass
    return None


def register(shell: Any) -> None:
    """Show an explanation above the traceback of JAX tracer errors in every cell
    (``%load_ext jaxviz`` calls this). The exception is still raised as usual. Installs
    the capture of JAX's tracer errors until ``unregister`` (``import jaxviz`` does not;
    ``jaxviz.trace`` installs it for the trace only)."""
    internals.install_tracer_error_capture()
    if id(shell) in _HOOKS:
        return
    previous_types = tuple(getattr(shell, "custom_exceptions", ()) or ())
    previous = (previous_types, getattr(shell, "CustomTB", None))
    types = tuple(dict.fromkeys(tracer_error_types() + (TypeError,) + previous_types))
    _HOOKS[id(shell)] = previous
    shell.set_custom_exc(types, _handler)
    shell._jaxviz_custom_tb = shell.CustomTB


def unregister(shell: Any) -> None:
    """Remove the hook ``register`` installed, restoring any previous one. When no shell
    is left registered, JAX's tracer errors are restored exactly (the capture that
    ``register`` installed is removed; ``register`` installs it again)."""
    previous = _HOOKS.pop(id(shell), None)
    if previous is None:
        return
    if not _HOOKS:
        internals.uninstall_tracer_error_capture()
    if getattr(shell, "CustomTB", None) is getattr(shell, "_jaxviz_custom_tb", None):
        shell.custom_exceptions = previous[0]
        shell.CustomTB = previous[1]
    try:
        del shell._jaxviz_custom_tb
    except AttributeError:
        pass
