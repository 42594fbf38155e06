"""Errors in the user's words: the user's line (``userline``), errors on one screen
(``messages``), and the tracer-error explainer: ``explain`` → an ``Explanation``
(``explanation``) of where the refused value came from (``provenance``, over the user's
source: ``source``) and how to fix it (``fixes``). Its HTML and rich views are in
``jaxviz.render.errors``; the IPython exception hook is in ``jaxviz.ipython.exceptions``."""

from .capture import capture_tracer_errors, explain
from .explanation import Explanation, Fix, TracedInput, is_tracer_error, tracer_error_types
from .messages import CellSyntaxError, attach_rendering, format_user_error, hint_for
from .userline import UserLine, short_traceback, user_frames, user_line

__all__ = [
    "CellSyntaxError", "Explanation", "Fix", "TracedInput", "UserLine", "attach_rendering",
    "capture_tracer_errors",
    "explain", "format_user_error", "hint_for", "is_tracer_error", "short_traceback",
    "tracer_error_types", "user_frames", "user_line",
]
