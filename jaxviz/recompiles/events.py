"""``CompileEvent``: one trace, lowering or compile of a function, its causes, cost and
suggested fix."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..text import fmt_seconds
from .causes import Cause
from .signature import FunctionInfo, Signature, Site, ordinal


@dataclass(eq=False)
class CompileEvent:
    """One trace (and usually lowering and backend compile) of a jitted function."""

    function: FunctionInfo
    call_site: Site | None
    signature: Signature | None
    causes: list[Cause]
    count: int  # the n-th compile of this function seen by jaxviz
    time: float  # wall clock (time.time()) at the start
    kind: str = "call"  # "call" | "aot" (.trace/.lower) | "compile" (no new trace)
    durations: dict[str, float | None] = field(
        default_factory=lambda: {"trace": None, "lower": None, "compile": None})
    suggestion: str | None = None
    error: str | None = None
    thread: str = ""
    more_causes: int = 0  # causes left out beyond MAX_CAUSES
    note: str | None = None
    done: bool = False
    jax_name: str = ""  # the name JAX's monitoring events use (fun_name)

    @property
    def first_compile(self) -> bool:
        """The function's first compile (nothing before it to differ from)."""
        return not self.causes or self.causes[0].kind == "first_call"

    @property
    def name(self) -> str:
        return self.function.name

    @property
    def total_seconds(self) -> float:
        return sum(v for v in self.durations.values() if v)

    def reason(self) -> str:
        if self.kind == "compile" and not self.causes:
            return self.note or "compiled without a new trace"
        if not self.causes or self.causes[0].kind == "first_call":
            return "first compile seen"
        texts = [str(c) for c in self.causes[:4]]
        more = len(self.causes) - 4 + self.more_causes
        if more > 0:
            texts.append(f"{more} more")
        return "; ".join(texts)

    def message(self) -> str:
        nth = "for the first time" if self.count == 1 else f"for the {ordinal(self.count)} time"
        verb = {"aot": "traced ahead of time", "compile": "compiled"}.get(self.kind, "compiled")
        where = f" at {self.call_site}" if self.call_site else ""
        head = f"`{self.function.name}`"
        if self.function.defined:
            head += f" (defined at {self.function.defined})"
        costs = ", ".join(f"{k} {fmt_seconds(v)}" for k, v in self.durations.items() if v is not None)
        if self.error:
            return f"{head} failed to trace{where}: {self.error}" + (f" ({costs})" if costs else "") + "."
        if self.kind == "compile" and not self.causes:
            return f"{head} compiled{where} {self.note or 'without a new trace'}" + (f" ({costs})" if costs else "") + "."
        because = "" if self.count == 1 and (not self.causes or self.causes[0].kind == "first_call") \
            else f" because {self.reason()}"
        return f"{head} {verb} {nth}{where}{because}" + (f" ({costs})" if costs else "") + "."

    def __str__(self) -> str:
        return self.message()

    def __repr__(self) -> str:
        return f"<CompileEvent {self.message()}>"

    def to_json(self) -> dict[str, Any]:
        """The bridge's ``compile`` payload (plus a few extra keys)."""
        return {
            "function": self.function.name,
            "defined": str(self.function.defined) if self.function.defined else None,
            "call_site": str(self.call_site) if self.call_site else None,
            "count": self.count,
            "causes": [c.to_json() for c in self.causes],
            "message": self.message(),
            "suggestion": self.suggestion,
            "durations": dict(self.durations),
            "time": self.time,
            "kind": self.kind,
            # what the panel counts as a recompile: not a function's first compile
            "recompile": self.count > 1 and not (self.causes and self.causes[0].kind == "first_call"),
            "error": self.error,
            "signature": self.signature.describe() if self.signature else None,
            "thread": self.thread,
        }


def diff_command(e: CompileEvent) -> str | None:
    """``%jaxviz diff f 3``: the trace diff of a recompile against the compile before it
    (``jaxviz.diff``); None for a first compile or one that failed."""
    if e.error or e.first_compile or e.count < 2:
        return None
    return f"%jaxviz diff {e.function.name} {e.count}"


def is_first_compile(event: CompileEvent) -> bool:
    return event.first_compile
