"""Numbers and text as every view writes them: durations, counts, FLOPs, bytes, and
text made safe for HTML. A leaf module: it imports nothing of jaxviz."""

from __future__ import annotations

import html
import re
from typing import Any

# A Markdown code span in our messages (`x`).
CODE_SPAN = re.compile(r"`([^`\n]+)`")

_PREFIXES = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))


def fmt_seconds(s: float | None) -> str:
    """``12 µs``, ``3.4 ms``, ``1.25 s``; ``—`` for a time not measured (None)."""
    if s is None:
        return "—"
    if s < 1e-3:
        return f"{s * 1e6:.0f} µs"
    if s < 1:
        return f"{s * 1e3:.1f} ms"
    return f"{s:.2f} s"


def fmt_count(value: float, unit: str = "") -> str:
    """``4.2e9`` → ``4.2 G`` + unit."""
    for scale, prefix in _PREFIXES:
        if abs(value) >= scale:
            return f"{value / scale:.3g} {prefix}{unit}"
    return f"{value:.3g} {unit}".rstrip()


def fmt_flops(value: float) -> str:
    return fmt_count(value, "FLOP")


def fmt_bytes(value: float) -> str:
    for scale, prefix in ((2 ** 40, "Ti"), (2 ** 30, "Gi"), (2 ** 20, "Mi"), (2 ** 10, "Ki")):
        if abs(value) >= scale:
            return f"{value / scale:.3g} {prefix}B"
    return f"{value:.0f} B"


def esc(text: Any) -> str:
    """Any value's text, escaped for HTML (quotes included: safe in attributes too)."""
    return html.escape(str(text))


def text_plain(text: str) -> str:
    """A message with its Markdown code spans' backticks dropped (for stderr, widgets)."""
    return CODE_SPAN.sub(r"\1", text)
