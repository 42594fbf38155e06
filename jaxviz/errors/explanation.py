"""What an explained tracer error says: the offending expression, which inputs the
value depends on (``TracedInput``), the ranked ``Fix``es, and how it reads as text."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import jax

from .. import _jax_internals as internals
from ..display import Displayed, render
from ..graph import Aval, Graph, SourceLoc
from .userline import UserLine


def tracer_error_types() -> tuple[type[BaseException], ...]:
    """The JAX errors ``explain`` is about (plus TypeError: a traced shape raises one)."""
    e = jax.errors
    return (e.TracerBoolConversionError, e.ConcretizationTypeError, e.TracerIntegerConversionError,
            e.NonConcreteBooleanIndexError, e.UnexpectedTracerError, e.TracerArrayConversionError)


def is_tracer_error(exc: BaseException) -> bool:
    if isinstance(exc, tracer_error_types()):
        return True
    cap = internals.captured_tracer_error(exc)
    return isinstance(exc, TypeError) and cap is not None and cap.tracer is not None


@dataclass(slots=True)
class Fix:
    """One way out, ``key`` naming the technique (``static``, ``where``, ``cond``,
    ``select``, ``while_loop``, ``fori_loop``, ``scan``, ``numpy``, ``size``,
    ``debug_print``, ``jnp``, ``pure_callback``, ``return``, ``checking_leaks``)."""

    key: str
    title: str
    code: str = ""
    note: str = ""  # the cost or the condition under which it applies


@dataclass(slots=True)
class TracedInput:
    """An input of a traced function that the refused value depends on."""

    name: str  # the user's name: "neg", "params['w']", "xs"
    function: str  # "f", or "this %%jaxpr cell"
    traced_for: str  # "jit", "scan", "while_loop", "cond", "vmap", "cell", ...
    position: int | None = None  # index among the function's parameters
    aval: Aval | None = None
    jax_name: str | None = None  # what JAX's message calls it ("args[0]")
    static: tuple[str, ...] | None = None  # the jitted function's static_argnames, if known
    linked_from: list[str] = field(default_factory=list)  # outer names passed into it
    node: int | None = None  # its node in the provenance graph

    @property
    def base_name(self) -> str:
        return re.split(r"[\[.]", self.name, maxsplit=1)[0]

    @property
    def can_be_static(self) -> bool:
        """A jit argument or cell variable can be made static (body arguments of scan,
        while_loop, cond cannot: JAX feeds them)."""
        if self.traced_for == "cell":
            return True
        return self.traced_for in ("jit", "pjit") and (self.aval is None or self.aval.shape == ())

    def describe(self) -> str:
        if self.traced_for == "cell":
            return (f"`{self.name}` is traced because it is an array this `%%jaxpr` cell "
                    "reads: jaxviz traces the cell's array variables")
        pos = f"argument {self.position}" if self.position is not None else "an argument"
        if self.traced_for in ("jit", "pjit"):
            how = ("which is jitted without `static_argnums`" if not self.static
                   else f"which is jitted with static_argnames={self.static!r} (not `{self.base_name}`)")
            return f"`{self.name}` is traced because it is {pos} of `{self.function}`, {how}"
        if self.traced_for == "vmap":
            return (f"`{self.name}` is traced because it is {pos} of `{self.function}`, which "
                    "is vmapped: inside vmap every argument stands for a whole batch")
        return (f"`{self.name}` is traced because it is {pos} of `{self.function}`, "
                f"the function `{_loop_api(self.traced_for)}` traces and calls for you")


def _grouped(inputs: list[TracedInput]) -> list[list[TracedInput]]:
    """Inputs grouped by argument (the leaves of one pytree argument together)."""
    groups: dict[tuple[str, str], list[TracedInput]] = {}
    for i in inputs:
        groups.setdefault((i.function, i.base_name), []).append(i)
    return list(groups.values())


def _describe_group(group: list[TracedInput]) -> str:
    first = group[0]
    text = first.describe()
    if len(group) > 1:
        text = text.replace(f"`{first.name}` is traced because it is",
                            f"the {len(group)} arrays in `{first.base_name}` are traced because "
                            f"`{first.base_name}` is", 1)
    return text


def _loop_api(traced_for: str) -> str:
    return {"scan": "lax.scan", "while_loop": "lax.while_loop", "while": "lax.while_loop",
            "cond": "lax.cond", "switch": "lax.switch", "fori_loop": "lax.fori_loop",
            "checkpoint": "jax.checkpoint", "remat": "jax.checkpoint"}.get(traced_for, traced_for)


NEEDS = {
    "TracerBoolConversionError": "a Python bool",
    "ConcretizationTypeError": "a concrete (Python/NumPy) value",
    "TracerIntegerConversionError": "a Python int",
    "NonConcreteBooleanIndexError": "a concrete boolean mask (the result's shape depends on it)",
    "TracerArrayConversionError": "a NumPy array",
    "UnexpectedTracerError": "a value of the current computation",
    "TypeError": "a concrete shape (Python ints)",
}


@dataclass(eq=False)
class Explanation(Displayed):
    """Why JAX refused a traced value, where the value came from, and how to fix it.

    Renders in notebooks (``_repr_mimebundle_``: HTML with the provenance graph, and text)
    and terminals (``__rich_console__``); ``text()`` is the plain-text form.
    """

    exc: BaseException
    kind: str  # the exception's class name
    needed: str  # what Python/JAX needed instead of a tracer
    line: UserLine | None
    value_name: str | None  # the user's name or expression for the refused value
    value_aval: Aval | None
    inputs: list[TracedInput]  # outermost traced inputs the value depends on
    direct_inputs: list[TracedInput]  # inputs of the function the failure happened in
    graph: Graph | None
    path: frozenset[int]  # highlighted node ids: the inputs' path to the value
    fixes: list[Fix]
    notes: list[str] = field(default_factory=list)
    created_at: SourceLoc | None = None  # for a leaked tracer: where it was made
    leaked_from: str | None = None  # for a leaked tracer: the function it escaped
    truncated: bool = False

    # ----------------------------------------------------------------- facts
    @property
    def jax_message(self) -> str:
        return str(self.exc)

    @property
    def input_names(self) -> list[str]:
        return [i.name for i in self.inputs]

    def headline(self) -> str:
        value = f"`{self.value_name}`" if self.value_name else "a value"
        aval = f" ({self.value_aval.text})" if self.value_aval else ""
        if self.kind == "UnexpectedTracerError":
            origin = f" inside `{self.leaked_from}`" if self.leaked_from else ""
            return (f"{value}{aval} is a tracer that escaped from an earlier trace{origin}: "
                    "it has no value outside that function")
        return f"JAX needed {self.needed} here, but {value}{aval} is a traced value"

    def why_lines(self) -> list[str]:
        out = [self.headline() + "."]
        if self.kind == "UnexpectedTracerError":
            if self.created_at is not None:
                out.append(f"it was created at {self.created_at.short()}: "
                           f"{(self.created_at.text or '').strip()} and stored outside the function")
            return out
        value = self.value_name or "the value"
        groups = _grouped(self.direct_inputs)
        names = [f"`{g[0].name}`" if len(g) == 1 else f"`{g[0].base_name}` ({len(g)} arrays)" for g in groups]
        if not names:
            out.append(f"`{value}` depends on no input: it was computed with jax.numpy from "
                       "static values (shapes, constants), which makes it a tracer anyway")
            return out
        if names != [f"`{value}`"]:
            out.append(f"`{value}` is computed from " + ", ".join(names)
                       + " (the highlighted path in the graph)")
        outer_groups = _grouped(self.inputs)
        for group in groups:
            out.append(_describe_group(group))
            linked = {n for i in group for n in i.linked_from}
            for og in outer_groups:
                if og[0] not in group and any(o.name in linked for o in og):
                    name = og[0].name if len(og) == 1 else og[0].base_name
                    out.append(f"  ← `{group[0].name}` receives `{name}`: " + _describe_group(og))
        return out

    def path_lines(self, limit: int = 16) -> list[str]:
        """The highlighted path, one equation per line, inputs first (long paths: the
        first inputs and the equations nearest the value)."""
        if self.graph is None:
            return []
        out = []
        ids = sorted(self.path)
        if len(ids) > limit:
            inputs = [n for n in ids if self.graph.nodes[n].kind == "input"]
            rest = [n for n in ids if self.graph.nodes[n].kind != "input"]
            shown_inputs, tail = inputs[:4], rest[-(limit - 4):]
            skipped = len(ids) - len(shown_inputs) - len(tail)
            ids = shown_inputs + [-skipped] + tail
        for nid in ids:
            if nid < 0:
                out.append(f"  … {-nid} more on the path")
                continue
            n = self.graph.nodes[nid]
            aval = ", ".join(a.text for a in n.outputs)
            where = f"  {n.source.short()}: {(n.source.text or '').strip()}" if n.source else ""
            if n.kind == "input":
                out.append(f"{n.label} {aval}  (input of {self.graph.groups[n.group].name})")
            elif n.kind == "output":
                out.append(f"→ {n.label} {aval}  ✗ refused here")
            elif n.kind == "eqn":
                lits = f" {', '.join(n.literals)}" if n.literals else ""
                out.append(f"  {n.label}{lits} → {aval}{where}")
        return out

    def text(self) -> str:
        lines = [f"jaxviz: {self.kind}"]
        if self.line is not None:
            lines.append(f"  at {self.line.where()}:")
            lines += ["    " + s for s in _caret_lines(self.line)]
        lines += ["  " + w for w in self.why_lines()]
        path = self.path_lines()
        if path:
            lines.append("  provenance (path from the inputs to the value):")
            lines += ["    " + p for p in path]
            if self.truncated:
                lines.append("    … (earlier equations not shown)")
        for note in self.notes:
            lines.append(f"  note: {note}")
        if self.fixes:
            lines.append("  fixes, best first:")
            for k, fix in enumerate(self.fixes, 1):
                lines.append(f"    {k}. {fix.title}")
                lines += ["         " + c for c in fix.code.splitlines()]
                if fix.note:
                    lines.append(f"         ({fix.note})")
        lines.append("  (the exception is unchanged; JAX's message and the traceback follow)")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.text()

    def __repr__(self) -> str:
        return f"<jaxviz.Explanation {self.kind}: {self.headline()}>"

    def to_dot(self) -> str | None:
        """Graphviz DOT of the provenance graph, the path highlighted."""
        return render(self, "dot")


def _caret_lines(line: UserLine) -> list[str]:
    num = f"{line.cell_line if line.cell_line is not None else line.line} | "
    out = [num + line.text.rstrip()]
    if line.expression and line.col is not None:
        out.append(" " * len(num) + " " * line.col + "^" * len(line.expression))
    return out
