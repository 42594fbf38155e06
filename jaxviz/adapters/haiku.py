"""Haiku, for the recompilation tracker: ``hk.transform(f)`` returns ``init`` and
``apply`` functions of Haiku's own code; Haiku ties each to the user's ``f``."""

from __future__ import annotations

import sys
from typing import Any


def original_function(fun: Any) -> tuple[Any, str] | None:
    """(the user's function, "init" or "apply") for a Haiku-transformed function, once the
    user has imported Haiku; None otherwise."""
    if "haiku" not in sys.modules:
        return None
    original = getattr(fun, "_original_fn", None)  # set by hk.transform on init and apply
    code = getattr(fun, "__code__", None)
    if original is None or not callable(original) or code is None:
        return None
    if "/haiku/" not in code.co_filename.replace("\\", "/"):
        return None
    return original, code.co_name.removesuffix("_fn")
