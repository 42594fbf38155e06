"""Errors in the user's words: one screen, pointing at the user's line, and the tracer
error explainer.

``format_user_error`` is what the magics show for any exception raised by a cell or a
traced function: the error, the user's line (cell line numbers for notebook cells) with
a caret, and a hint when we know one. The full traceback stays available with ``%tb``.

``explain(exc)`` turns one of JAX's tracer errors (a Python ``if`` on a traced value, a
traced shape, ``np.asarray`` of a tracer, a leaked tracer, ...) into an ``Explanation``:
the user's failing line with the offending expression highlighted, the traced value
(name, aval) and its provenance -- the partial graph traced up to the failure, from the
traced function's inputs to that value, path highlighted -- and ranked concrete fixes.
``register(shell)`` shows it above the usual traceback for any notebook cell.

How the provenance is found: when jaxviz is imported, JAX's tracer errors record the
tracer they refused and the stack (``_jax_internals.install_tracer_error_capture``).
A tracer staged by ``jit`` links to the equation that produced it, and so on back to the
function's inputs; inputs are named by finding them among the Python frames' parameters
(so ``args[0]`` in JAX's message becomes the user's ``neg``), and an input of a nested
traced function (an inner ``jit``, a ``scan``/``while_loop``/``cond`` body) is linked to
the caller's values through the call expression on the caller's line.
"""

from __future__ import annotations

import ast
import html
import linecache
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from . import _jax_internals as internals
from .calls import ipython_cell_name, is_user_file
from .graph import LEGEND, Aval, Graph, SourceLoc
from .jaxprs import make_aval, short
from .render.dot import DotUnavailable, Marks, dot_available, render_svg, view_to_dot

MAX_MESSAGE_LINES = 12
MAX_PROVENANCE_EQNS = 20000  # nodes walked back from the failing value (all inputs found)
MAX_DRAWN_NODES = 40  # beyond this, the path's equations nearest the value are drawn
MAX_DRAWN_INPUTS = 12
CELL_FUNCTION = "__jaxviz_cell__"
HIGHLIGHT = "#D9534F"

internals.install_tracer_error_capture()


# ====================================================================== the user's line
@dataclass(slots=True)
class UserLine:
    file: str
    line: int
    function: str
    text: str
    cell_line: int | None = None
    col: int | None = None  # 0-based span of the failing expression on ``line``
    end_col: int | None = None
    cell: str | None = None  # "In[5]" for an ordinary IPython cell
    span: tuple[int, int, int, int] | None = None  # Python's (line, end_line, col, end_col)

    def where(self) -> str:
        if self.cell is not None:
            return f"cell {self.cell}, line {self.line}"
        if self.cell_line is not None:
            return f"cell line {self.cell_line}"
        return f"{self.file}:{self.line} in {self.function}"

    @property
    def expression(self) -> str | None:
        if self.col is None or self.end_col is None or self.end_col <= self.col:
            return None
        return self.text[self.col:self.end_col]


def _span(code: Any, lasti: int) -> tuple[int, int, int, int] | None:
    """(line, end_line, col, end_col) of the instruction at ``lasti`` (Python 3.11+)."""
    if lasti < 0 or not hasattr(code, "co_positions"):
        return None
    try:
        pos = list(code.co_positions())[lasti // 2]
    except IndexError:
        return None
    return pos if None not in pos else None


def _frame_line(file: str, line: int, function: str, span: tuple | None,
                cell_file: str | None) -> UserLine:
    text = linecache.getline(file, line).rstrip("\n")
    col = end_col = None
    if span is not None and span[0] == line:
        col = span[2]
        end_col = span[3] if span[1] == line else len(text)
    cell = ipython_cell_name(file)
    is_cell = file == cell_file or file.startswith("<jaxviz-cell-") or cell is not None
    return UserLine(file, line, function, text, line if is_cell else None, col, end_col, cell,
                    span if span is not None and span[0] == line else None)


def user_line(exc: BaseException, cell_file: str | None = None) -> UserLine | None:
    """The innermost frame of user code in the exception's traceback (or the syntax
    error's position), with the failing expression's columns when Python knows them."""
    if isinstance(exc, SyntaxError) and exc.lineno:
        file = exc.filename or ""
        text = (exc.text or linecache.getline(file, exc.lineno)).rstrip("\n")
        return UserLine(file, exc.lineno, "<cell>", text, exc.lineno if file == cell_file else None)
    found = None
    tb = exc.__traceback__
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        if is_user_file(name) and not name.startswith("<frozen"):
            found = tb
        tb = tb.tb_next
    if found is None:
        return None
    code = found.tb_frame.f_code
    return _frame_line(code.co_filename, found.tb_lineno, code.co_name,
                       _span(code, found.tb_lasti), cell_file)


# ====================================================================== one-screen errors
def hint_for(exc: BaseException, traced_names: list[str] = ()) -> str | None:
    """A one-line fix for the common cases (``explain`` goes further)."""
    import jax

    errors = jax.errors
    if isinstance(exc, (errors.TracerBoolConversionError, errors.ConcretizationTypeError,
                        errors.TracerIntegerConversionError)):
        names = ", ".join(traced_names) if traced_names else "the value"
        return (f"Python control flow or int()/bool() needs a concrete value, but {names} is traced "
                "here. Mark it static (`%%jaxpr --static NAME`, or `static_argnames=` for jit), "
                "or use jnp.where / lax.cond / lax.fori_loop instead of Python `if`/`for`.")
    if isinstance(exc, errors.TracerArrayConversionError):
        return "np.asarray() needs a concrete value; use jnp instead of np on traced values."
    if isinstance(exc, errors.NonConcreteBooleanIndexError):
        return "x[mask] has a data-dependent shape; use jnp.where(mask, x, 0) or jnp.nonzero(mask, size=N)."
    if isinstance(exc, NameError):
        return "Define the name in an earlier cell (and run it) before this one."
    return None


def format_user_error(exc: BaseException, cell_file: str | None = None,
                      traced_names: list[str] = (), title: str = "jaxviz") -> list[str]:
    """The one-screen message, as lines of plain text."""
    lines = [f"{title}: {type(exc).__name__} while running this cell"]
    explanation = _safe_explain(exc)
    where = explanation.line if explanation is not None and explanation.line else user_line(exc, cell_file)
    if where is not None:
        lines.append(f"  at {where.where()}:")
        lines.append(f"    {where.text.strip()}")
        if isinstance(exc, SyntaxError) and exc.offset:
            indent = len(where.text) - len(where.text.lstrip())
            lines.append("    " + " " * max(exc.offset - 1 - indent, 0) + "^")
        elif where.expression:
            indent = len(where.text) - len(where.text.lstrip())
            lines.append("    " + " " * max(where.col - indent, 0) + "^" * len(where.expression))
    relevant = [w for w in (traced_names or []) if where is not None and w in where.text]
    message = str(exc).strip().splitlines() or [""]
    if isinstance(exc, SyntaxError):
        message = [exc.msg]
    lines += [f"  {type(exc).__name__}: {message[0]}"]
    if explanation is not None:  # the message is JAX's long one: show ours instead
        lines += ["  " + w.replace("`", "") for w in explanation.why_lines()]
        if explanation.fixes:
            fix = explanation.fixes[0]
            lines.append(f"  fix: {fix.title.replace('`', '')}"
                         + (f": {fix.code.splitlines()[0]}" if fix.code else ""))
        lines.append("  (jaxviz.explain(exc) shows the value's provenance graph and every fix)")
    else:
        lines += ["    " + m for m in message[1:MAX_MESSAGE_LINES]]
        if len(message) > MAX_MESSAGE_LINES:
            lines.append(f"    … ({len(message) - MAX_MESSAGE_LINES} more lines)")
        hint = hint_for(exc, relevant)
        if hint:
            lines.append(f"  hint: {hint}")
    lines.append("  (your namespace is unchanged; %tb shows the full traceback)")
    return lines


def attach_rendering(exc: BaseException, lines: list[str]) -> BaseException:
    """Make IPython show ``lines`` instead of the long traceback, keeping the exception
    object itself (type, args, traceback) unchanged for anyone who catches it."""
    try:
        exc._render_traceback_ = lambda: list(lines)  # type: ignore[attr-defined]
    except (AttributeError, TypeError):
        pass
    return exc


class CellSyntaxError(Exception):
    """A syntax error in a ``%%jaxpr`` cell, shown as one screen. (Not a SyntaxError
    subclass: IPython renders those itself, ignoring ``_render_traceback_``.)"""

    def __init__(self, original: SyntaxError, lines: list[str]) -> None:
        super().__init__(f"{original.msg} (cell line {original.lineno})")
        self.original = original
        self.lineno = original.lineno
        self._lines = lines

    def _render_traceback_(self) -> list[str]:
        return list(self._lines)


# ====================================================================== the explanation
def tracer_error_types() -> tuple[type[BaseException], ...]:
    """The JAX errors ``explain`` is about (plus TypeError: a traced shape raises one)."""
    import jax

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


_NEEDS = {
    "TracerBoolConversionError": "a Python bool",
    "ConcretizationTypeError": "a concrete (Python/NumPy) value",
    "TracerIntegerConversionError": "a Python int",
    "NonConcreteBooleanIndexError": "a concrete boolean mask (the result's shape depends on it)",
    "TracerArrayConversionError": "a NumPy array",
    "UnexpectedTracerError": "a value of the current computation",
    "TypeError": "a concrete shape (Python ints)",
}


@dataclass(eq=False)
class Explanation:
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

    # ----------------------------------------------------------------- rendering
    def to_dot(self) -> str | None:
        """Graphviz DOT of the provenance graph, the path highlighted."""
        if self.graph is None:
            return None
        refused = frozenset(("n", n.id) for n in self.graph.nodes if n.kind == "output")
        marks = Marks(path=frozenset(("n", n) for n in self.path), path_ends=refused)
        return view_to_dot(self.graph.view("all"), legend=False, marks=marks).source

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        return {"text/plain": self.text(), "text/html": self.html()}

    def _repr_html_(self) -> str:
        return self.html()

    def html(self) -> str:
        svg = None
        if self.graph is not None and dot_available():
            try:
                svg = render_svg(self.to_dot())
            except DotUnavailable:
                svg = None
        return _explanation_html(self, svg)

    def __rich_console__(self, console: Any, options: Any) -> Any:
        yield from _explanation_rich(self)


def _caret_lines(line: UserLine) -> list[str]:
    num = f"{line.cell_line if line.cell_line is not None else line.line} | "
    out = [num + line.text.rstrip()]
    if line.expression:
        out.append(" " * len(num) + " " * line.col + "^" * len(line.expression))
    return out


def explain(exc: BaseException) -> Explanation | None:
    """Explain a JAX tracer error: the failing line, the traced value and its provenance
    graph, and ranked fixes. Returns None for an exception that is not a tracer error.
    The exception itself is not modified (the explanation is cached on it)."""
    if not is_tracer_error(exc):
        return None
    cached = getattr(exc, "_jaxviz_explanation", None)
    if isinstance(cached, Explanation):
        return cached
    explanation = _Explainer(exc).explain()
    try:
        exc._jaxviz_explanation = explanation  # type: ignore[attr-defined]
    except (AttributeError, TypeError):
        pass
    return explanation


def _safe_explain(exc: BaseException) -> Explanation | None:
    try:
        return explain(exc)
    except Exception:  # the explainer must never hide the user's error
        return None


# ====================================================================== source helpers
_AST_CACHE: dict[tuple[str, int], tuple[ast.AST, dict[int, ast.AST]] | None] = {}


def _parsed(file: str) -> tuple[ast.AST, dict[int, ast.AST]] | None:
    """The file's AST and a child → parent map (cached by file and size)."""
    lines = linecache.getlines(file)
    key = (file, sum(len(s) for s in lines))
    if key not in _AST_CACHE:
        try:
            tree = ast.parse("".join(lines))
        except (SyntaxError, ValueError):
            _AST_CACHE[key] = None
        else:
            parents = {id(c): p for p in ast.walk(tree) for c in ast.iter_child_nodes(p)}
            _AST_CACHE[key] = (tree, parents)
    return _AST_CACHE[key]


def _node_at(file: str, span: tuple[int, int, int, int] | None, types: tuple[type, ...] = (ast.expr,)
             ) -> tuple[ast.AST | None, dict[int, ast.AST]]:
    """The AST node of ``types`` exactly at ``span`` (else the smallest enclosing one)."""
    parsed = _parsed(file) if span else None
    if parsed is None:
        return None, {}
    tree, parents = parsed
    line, end_line, col, end_col = span
    best = None
    for node in ast.walk(tree):
        if not isinstance(node, types) or not hasattr(node, "end_lineno"):
            continue
        start, end = (node.lineno, node.col_offset), (node.end_lineno, node.end_col_offset)
        if (start, end) == ((line, col), (end_line, end_col)):
            return node, parents
        if start <= (line, col) and end >= (end_line, end_col):
            if best is None or (start, (-end[0], -end[1])) > (
                    (best.lineno, best.col_offset), (-best.end_lineno, -best.end_col_offset)):
                best = node
    return best, parents


def _src(node: ast.AST | None) -> str:
    if node is None:
        return ""
    try:
        return ast.unparse(node)
    except Exception:
        return ""


def _call_name(call: ast.Call) -> str:
    f = call.func
    if isinstance(f, ast.Attribute):
        return f.attr
    if isinstance(f, ast.Name):
        return f.id
    return ""


# ====================================================================== the explainer
@dataclass(slots=True)
class _PNode:
    """One node of the provenance walk: an equation, an input or a constant."""

    key: Any
    kind: str  # "eqn" | "input" | "const" | "unknown"
    tracers: list[Any]  # staged tracers this node produces (one per output reached)
    trace: int
    eqn: Any = None
    operands: list[Any] = field(default_factory=list)  # node keys (None: literal)
    literals: list[str] = field(default_factory=list)
    position: int | None = None
    const: Any = None
    links: list[Any] = field(default_factory=list)  # outer node keys feeding an input
    link_label: str = ""
    graph_id: int | None = None
    distance: int = 0  # steps back from the refused value


class _Explainer:
    def __init__(self, exc: BaseException) -> None:
        self.exc = exc
        self.kind = type(exc).__name__
        cap = internals.captured_tracer_error(exc)
        self.tracer = cap.tracer if cap is not None else None
        self.frames = self._user_frames(cap)
        self.cell_file = next((f.f_code.co_filename for f in self.frames
                               if f.f_code.co_filename.startswith("<jaxviz-cell-")), None)
        self.nodes: dict[Any, _PNode] = {}
        self.order: list[Any] = []
        self.functions: dict[int, Any] = {}  # trace id → TracerFunction
        self.inputs: dict[Any, TracedInput] = {}
        self.truncated = False
        self.notes: list[str] = []

    # ----------------------------------------------------------------- frames
    def _user_frames(self, cap: Any) -> list[Any]:
        """User-code Python frames, innermost first: from the stack recorded when JAX
        raised (complete), else from the traceback (JAX may have filtered it)."""
        frames = []
        frame = cap.frame if cap is not None else None
        while frame is not None:
            frames.append(frame)
            frame = frame.f_back
        if not frames:
            tb = self.exc.__traceback__
            while tb is not None:
                frames.append(tb.tb_frame)
                tb = tb.tb_next
            frames.reverse()
        return [f for f in frames if is_user_file(f.f_code.co_filename)
                and not f.f_code.co_filename.startswith("<frozen")]

    def _frame_span(self, frame: Any) -> tuple[int, int, int, int] | None:
        return _span(frame.f_code, frame.f_lasti)

    def _failing_line(self) -> UserLine | None:
        where = user_line(self.exc, self.cell_file)
        if where is not None:
            return where
        if self.frames:  # e.g. a traceback cut short: use the recorded stack
            f = self.frames[0]
            return _frame_line(f.f_code.co_filename, f.f_lineno, f.f_code.co_name,
                               self._frame_span(f), self.cell_file)
        return None

    def _failing_frame(self, line: UserLine | None) -> Any:
        for f in self.frames:
            if line is not None and f.f_code.co_filename == line.file and f.f_code.co_name == line.function:
                return f
        return self.frames[0] if self.frames else None

    # ----------------------------------------------------------------- names
    @staticmethod
    def _params(code: Any) -> list[str]:
        n = code.co_argcount + code.co_kwonlyargcount
        n += bool(code.co_flags & 0x04) + bool(code.co_flags & 0x08)  # *args, **kwargs
        return list(code.co_varnames[:n])

    @staticmethod
    def _holds(value: Any, target: Any, depth: int = 2) -> str | None:
        """The path ("", "['w']", "[0]") under which ``value`` holds ``target`` (a staged
        tracer), else None."""
        if internals.is_tracer(value):
            return "" if (value is target or internals.staged_tracer(value) is target) else None
        if depth == 0:
            return None
        items: Iterable[tuple[str, Any]] = ()
        if isinstance(value, dict) and len(value) <= 10000:
            items = ((f"[{k!r}]", v) for k, v in value.items())
        elif isinstance(value, (list, tuple)) and len(value) <= 10000:
            items = ((f"[{i}]", v) for i, v in enumerate(value))
        for key, v in items:
            sub = _Explainer._holds(v, target, depth - 1)
            if sub is not None:
                return key + sub
        return None

    def _find_in_frame(self, frame: Any, target: Any, params_only: bool) -> str | None:
        code = frame.f_code
        try:
            local = frame.f_locals
        except Exception:
            return None
        names = self._params(code) if params_only else list(local)
        for name in names:
            if name in local and name != "self":
                path = self._holds(local[name], target)
                if path is not None:
                    return name + path
        return None

    def _function_frame(self, fn: Any, input_tracer: Any) -> Any:
        """The Python frame of the traced function ``fn`` (matched by name and file), else
        the innermost frame that received ``input_tracer`` as a parameter."""
        if fn is not None:
            for f in self.frames:
                if f.f_code.co_name == fn.name and (fn.file is None or f.f_code.co_filename == fn.file):
                    return f
        for f in self.frames:
            if self._find_in_frame(f, input_tracer, params_only=True) is not None:
                return f
        return None

    # ----------------------------------------------------------------- provenance
    def _node_key(self, t: Any) -> Any:
        origin = internals.tracer_origin(t)
        if origin.kind == "eqn":
            return ("eqn", origin.eqn_id), origin
        return ("var", id(internals.tracer_key(t))), origin

    def _walk(self, start: Any) -> Any:
        """Collect ``start``'s provenance (an equation DAG, across traces when inputs or
        closed-over values link to an enclosing function), nearest first, then order it
        inputs-first. Returns the key of ``start``'s node."""
        from collections import deque

        root_key = self._node_key(start)[0]
        queue = deque([(start, 0)])
        while queue:
            t, dist = queue.popleft()
            key, origin = self._node_key(t)
            if key in self.nodes:
                if not any(x is t for x in self.nodes[key].tracers):
                    self.nodes[key].tracers.append(t)
                continue
            trace = internals.tracer_trace_id(t)
            if trace not in self.functions:
                self.functions[trace] = internals.tracer_function(t)
            node = _PNode(key, origin.kind, [t], trace, eqn=origin.eqn, position=origin.position,
                          const=origin.const, distance=dist)
            self.nodes[key] = node
            if len(self.nodes) > MAX_PROVENANCE_EQNS:
                self.truncated = True
                continue
            follow: list[Any] = []
            if origin.kind == "eqn":
                for v, op in zip(origin.eqn.invars, origin.operands):
                    if op is None:
                        node.operands.append(None)
                        node.literals.append(short(getattr(v, "val", v), 40))
                    else:
                        node.operands.append(self._node_key(op)[0])
                        follow.append(op)
            elif origin.kind == "const" and internals.is_tracer(origin.const):
                outer = internals.staged_tracer(origin.const)  # a closed-over outer tracer
                if outer is not None:
                    node.links.append(self._node_key(outer)[0])
                    node.link_label = "closed over"
                    follow.append(outer)
            elif origin.kind == "input":
                for outer, label in self._link_input(t, trace):
                    node.links.append(self._node_key(outer)[0])
                    node.link_label = label
                    follow.append(outer)
            queue.extend((op, dist + 1) for op in follow)
        # inputs-first order: post-order over the collected nodes
        done: set[Any] = set()
        stack: list[tuple[Any, bool]] = [(root_key, False)]
        while stack:
            key, expanded = stack.pop()
            if expanded:
                if key not in done:
                    done.add(key)
                    self.order.append(key)
                continue
            if key in done or key not in self.nodes:
                continue
            stack.append((key, True))
            node = self.nodes[key]
            stack.extend((k, False) for k in reversed(node.operands + node.links)
                         if k is not None and k not in done)
        return root_key

    def _link_input(self, t: Any, trace: int) -> list[tuple[Any, str]]:
        """The caller's tracers that an input of a nested traced function receives: found
        through the call expression the caller frame is executing."""
        fn = self.functions.get(trace)
        frame = self._function_frame(fn, t)
        if frame is None:
            return []
        name = self._find_in_frame(frame, t, params_only=True)
        idx = self.frames.index(frame)
        if name is None or idx + 1 >= len(self.frames):
            return []
        caller = self.frames[idx + 1]
        call, _ = _node_at(caller.f_code.co_filename, self._frame_span(caller), (ast.Call,))
        if not isinstance(call, ast.Call):
            return []
        base = re.split(r"[\[.]", name, maxsplit=1)[0]
        params = self._params(frame.f_code)
        expr = _argument_expression(call, base, params.index(base) if base in params else None,
                                    fn.traced_for if fn else "")
        if expr is None:
            return []
        try:
            local = caller.f_locals
        except Exception:
            return []
        out = []
        for n in ast.walk(expr):
            if isinstance(n, ast.Name) and n.id in local:
                outer = internals.staged_tracer(local[n.id]) if internals.is_tracer(local[n.id]) else None
                if outer is not None and internals.tracer_trace_id(outer) != trace:
                    out.append((outer, f"{_src(expr)} → {base}"))
        return out

    # ----------------------------------------------------------------- inputs
    def _describe_input(self, node: _PNode) -> TracedInput:
        t = node.tracers[0]
        fn = self.functions.get(node.trace)
        jax_name = None
        if fn is not None and fn.arg_names and node.position is not None and node.position < len(fn.arg_names):
            jax_name = fn.arg_names[node.position] or None
        frame = self._function_frame(fn, t)
        name = self._find_in_frame(frame, t, params_only=True) if frame is not None else None
        if name is None and jax_name and not jax_name.startswith(("args[", "kwargs[")):
            name = jax_name
        if name is None:
            for f in self.frames:
                name = self._find_in_frame(f, t, params_only=False)
                if name is not None:
                    break
        name = name or jax_name or f"input {node.position}"
        function = frame.f_code.co_name if frame is not None else (fn.name if fn else "?")
        traced_for = fn.traced_for if fn is not None else "jit"
        position = None
        if frame is not None:
            params = self._params(frame.f_code)
            base = re.split(r"[\[.]", name, maxsplit=1)[0]
            position = params.index(base) if base in params else None
            if frame.f_code.co_name == CELL_FUNCTION:
                function, traced_for = "this %%jaxpr cell", "cell"
        static = self._static_argnames(function, frame) if traced_for in ("jit", "pjit") else None
        return TracedInput(name, function, traced_for, position, make_aval(t.aval), jax_name, static)

    def _static_argnames(self, function: str, frame: Any) -> tuple[str, ...] | None:
        """The static argument names the jitted ``function`` was created with, looked up by
        name where it was called from."""
        if frame is None or frame not in self.frames:
            return None
        for f in self.frames[self.frames.index(frame) + 1:]:
            for space in (f.f_locals, f.f_globals):
                obj = space.get(function)
                if obj is not None:
                    info = internals.jit_static_args(obj)
                    if info is None:
                        return None
                    nums, names = info
                    params = self._params(frame.f_code)
                    return tuple(names) + tuple(params[i] for i in nums if i < len(params))
        return None

    # ----------------------------------------------------------------- graph
    def _build_graph(self, root_key: Any, value_name: str, aval: Aval | None) -> tuple[Graph, frozenset[int]]:
        from .calls import make_source

        g = Graph(f"provenance of {value_name}")
        groups: dict[int, int] = {}

        def group_of(trace: int) -> int:
            if trace not in groups:
                fn = self.functions.get(trace)
                inputs = [self.inputs[k] for k, n in self.nodes.items() if n.trace == trace and k in self.inputs]
                label = inputs[0].function if inputs else (fn.name if fn else "traced function")
                how = inputs[0].traced_for if inputs else (fn.traced_for if fn else "")
                src = None
                if fn is not None and fn.file and fn.line:
                    src = make_source(fn.file, fn.line, fn.name, self.cell_file)
                groups[trace] = g.add_group(f"{label} ({how})" if how and how != "cell" else label,
                                            "call", 0, source=src)
            return groups[trace]

        keep = set(self.order)
        elided = 0
        if len(keep) > MAX_DRAWN_NODES:  # the path only, nearest the value, and its inputs
            path = self._on_path(root_key)
            inputs = sorted((k for k in path if self.nodes[k].kind == "input"),
                            key=lambda k: self.nodes[k].distance)[:MAX_DRAWN_INPUTS]
            near = sorted((k for k in path if self.nodes[k].kind != "input"),
                          key=lambda k: self.nodes[k].distance)[:MAX_DRAWN_NODES]
            keep = set(inputs) | set(near) | {root_key}
            elided = len(path) - len(keep)
            self.truncated = True
        for key in self.order:
            if key not in keep:
                continue
            node = self.nodes[key]
            gid = group_of(node.trace)
            outs = [make_aval(t.aval) for t in node.tracers]
            if node.kind == "input":
                info = self.inputs[key]
                node.graph_id = g.add_node("input", info.name, gid, input_kind="traced", outputs=outs)
                info.node = node.graph_id
            elif node.kind == "eqn":
                eqn = node.eqn
                src = None
                for f in internals.user_frames(eqn):
                    if is_user_file(f.file):
                        src = make_source(f.file, f.line, f.function, self.cell_file)
                        break
                label = eqn.primitive.name
                name = eqn.params.get("name")
                if isinstance(name, str) and name and name != label:
                    label = f"{label}: {name}"
                node.graph_id = g.add_node("eqn", label, gid, primitive=eqn.primitive.name,
                                           params={k: short(v, 40) for k, v in eqn.params.items()
                                                   if not _is_jaxpr(v)},
                                           outputs=[make_aval(v.aval) for v in eqn.outvars],
                                           literals=node.literals, source=src)
            else:
                label = "closed-over value" if internals.is_tracer(node.const) else (
                    short(node.const, 30) if node.const is not None else "constant")
                node.graph_id = g.add_node("const", label, gid, input_kind="constant", outputs=outs)
        gap = g.add_node("eqn", f"… {elided} more equations", 0) if elided else None
        for key in self.order:
            node = self.nodes[key]
            if node.graph_id is None:
                continue
            for op in node.operands + node.links:
                src_node = self.nodes.get(op) if op is not None else None
                if src_node is None:
                    continue
                a = make_aval(src_node.tracers[0].aval)
                if src_node.graph_id is not None:
                    g.add_edge(src_node.graph_id, node.graph_id, a, node.link_label if op in node.links else "")
                elif gap is not None:  # the cut: inputs → "… N more" → what we drew
                    g.add_edge(gap, node.graph_id, a, "")
        if gap is not None:
            for key in keep:
                if self.nodes[key].kind == "input" and self.nodes[key].graph_id is not None:
                    g.add_edge(self.nodes[key].graph_id, gap, make_aval(self.nodes[key].tracers[0].aval), "")
        out = g.add_node("output", value_name, group_of(self.nodes[root_key].trace),
                         outputs=[aval] if aval else [])
        root = self.nodes[root_key]
        if root.graph_id is not None:
            g.add_edge(root.graph_id, out, aval or Aval((), "?"), "")
        g.finish()
        return g, _highlight(g, out)

    def _on_path(self, root_key: Any) -> set[Any]:
        """Keys of nodes that lie on a path from an input to the value."""
        feeds: dict[Any, set[Any]] = {}
        for key, node in self.nodes.items():
            for op in node.operands + node.links:
                if op is not None:
                    feeds.setdefault(op, set()).add(key)
        from_inputs = set()
        stack = [k for k, n in self.nodes.items() if n.kind == "input"]
        while stack:
            k = stack.pop()
            if k not in from_inputs:
                from_inputs.add(k)
                stack.extend(feeds.get(k, ()))
        return (from_inputs | {root_key}) & set(self.order)

    # ----------------------------------------------------------------- main
    def explain(self) -> Explanation:
        line = self._failing_line()
        frame = self._failing_frame(line)
        tracer = self.tracer
        staged = internals.staged_tracer(tracer) if tracer is not None else None
        aval = make_aval(tracer.aval) if tracer is not None and getattr(tracer, "aval", None) is not None else None
        value_name = self._value_name(tracer, staged, frame, line)
        if line is not None and value_name:
            _refine_span(line, value_name)
        graph, path, root_key = None, frozenset(), None
        if staged is not None:
            root_key = self._walk(staged)
            for key in self.order:
                node = self.nodes[key]
                if node.kind == "input":
                    self.inputs[key] = self._describe_input(node)
            for key, info in self.inputs.items():
                info.linked_from = [self.inputs[k].name for k in self.nodes[key].links if k in self.inputs]
            try:
                graph, path = self._build_graph(root_key, value_name or "value", aval)
            except Exception as err:  # a drawing problem must not lose the explanation
                self.notes.append(f"could not draw the provenance graph: {err}")
        elif tracer is not None:
            graph, path = self._eager_graph(tracer, frame, value_name or "value", aval)
        direct, outer = self._input_levels(root_key)
        created_at, leaked_from = self._leak_origin(tracer, staged)
        explanation = Explanation(
            self.exc, self.kind, _NEEDS.get(self.kind, "a concrete value"), line, value_name, aval,
            outer, direct, graph, path, [], self.notes, created_at, leaked_from, self.truncated)
        explanation.fixes = _fixes(explanation, self._statement(line, frame), frame)
        return explanation

    def _input_levels(self, root_key: Any) -> tuple[list[TracedInput], list[TracedInput]]:
        """(inputs of the failing value's own function, the outermost inputs reached)."""
        if root_key is None:
            return list(self.inputs.values()), list(self.inputs.values())
        root_trace = self.nodes[root_key].trace
        direct = [i for k, i in self.inputs.items() if self.nodes[k].trace == root_trace]
        outer = [i for k, i in self.inputs.items() if not self.nodes[k].links]
        if not direct:  # e.g. a closed-over value: the inputs come from outside
            direct = outer
        return direct, outer

    def _value_name(self, tracer: Any, staged: Any, frame: Any, line: UserLine | None) -> str | None:
        if tracer is None:
            return line.expression if line is not None else None
        for f in ([frame] if frame is not None else []) + self.frames:
            try:
                local = f.f_locals
            except Exception:
                continue
            for name, value in local.items():
                if value is tracer:
                    return name
            if self.kind == "UnexpectedTracerError":  # held in a global list/dict, say
                for name, value in list(local.items()) + list(f.f_globals.items()):
                    path = self._holds(value, staged if staged is not None else tracer, depth=1)
                    if path is not None and not name.startswith("_"):
                        return name + path
        if staged is not None:
            origin = internals.tracer_origin(staged)
            if origin.kind == "eqn":
                for uf in internals.user_frames(origin.eqn):
                    if line is not None and uf.file == line.file and uf.line == line.line == uf.end_line:
                        return line.text[uf.column:uf.end_column] or None
                    break
            elif origin.kind == "input" and frame is not None:
                name = self._find_in_frame(frame, staged, params_only=False)
                if name:
                    return name
        return line.expression if line is not None else None

    def _eager_graph(self, tracer: Any, frame: Any, value_name: str, aval: Aval | None
                     ) -> tuple[Graph | None, frozenset[int]]:
        """Without ``jit`` nothing is staged (e.g. eager ``vmap``): the inputs are the
        frame's traced parameters; the computation between them is not recorded."""
        if frame is None:
            return None, frozenset()
        params = self._params(frame.f_code)
        g = Graph(f"provenance of {value_name}")
        gid = g.add_group(f"{frame.f_code.co_name} (vmap)", "call", 0)
        for pos, name in enumerate(params):
            value = frame.f_locals.get(name)
            if internals.is_tracer(value) and internals.same_trace(value, tracer):
                info = TracedInput(name, frame.f_code.co_name, "vmap", pos, make_aval(value.aval))
                info.node = g.add_node("input", name, gid, input_kind="traced", outputs=[info.aval])
                self.inputs[name] = info
        mid = g.add_node("eqn", "(not recorded: nothing is staged outside jit)", gid)
        for info in self.inputs.values():
            g.add_edge(info.node, mid, info.aval, info.name)
        out = g.add_node("output", value_name, gid, outputs=[aval] if aval else [])
        g.add_edge(mid, out, aval or Aval((), "?"), "")
        g.finish()
        if self.kind != "UnexpectedTracerError":
            self.notes.append("nothing is staged outside jit, so the equations between the inputs "
                              "and the value were not recorded; wrap the call in jax.jit to see them")
        return g, _highlight(g, out)

    def _leak_origin(self, tracer: Any, staged: Any) -> tuple[SourceLoc | None, str | None]:
        if self.kind != "UnexpectedTracerError" or tracer is None:
            return None, None
        from .calls import make_source

        frames = internals.tracer_created_at(staged if staged is not None else tracer)
        fn = internals.tracer_function(staged) if staged is not None else None
        created = None
        for f in frames:
            if is_user_file(f.file):
                created = make_source(f.file, f.line, f.function, self.cell_file)
                break
        return created, fn.name if fn is not None else None

    def _statement(self, line: UserLine | None, frame: Any) -> _Statement:
        if line is None or frame is None:
            return _Statement("", None, None)
        span = (line.line, line.line, line.col, line.end_col) if line.expression else self._frame_span(frame)
        if line.span is not None and line.span[1] != line.span[0] and line.span[2] == line.col:
            span = line.span  # an expression over several lines (not cut at the line's end)
        node, parents = _node_at(line.file, span)
        if node is None and span is not None:  # the position of a whole `if`/`while` statement
            node, parents = _node_at(line.file, span, (ast.If, ast.While, ast.Assert))
            node = getattr(node, "test", None)
        stmt = _classify_statement(node, parents)
        _point_at_test(line, stmt)
        return stmt


def _point_at_test(line: UserLine, stmt: _Statement) -> None:
    """Python (3.11) gives a conditional expression's jump the position of the whole
    ``a if c else b``: highlight the condition ``c``, which is what was refused."""
    node = stmt.node
    if stmt.kind != "ifexp" or not isinstance(node, ast.IfExp) or stmt.expr is not node:
        return
    test = node.test
    if test.lineno == test.end_lineno == line.line:
        line.col, line.end_col = test.col_offset, test.end_col_offset
    elif node.lineno != node.end_lineno:  # the condition is on another line: no highlight
        line.col = line.end_col = None


def _is_expression(text: str | None) -> bool:
    try:
        ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError, AttributeError):
        return False
    return True


def _refine_span(line: UserLine, value_name: str) -> None:
    """Point the highlight at the value itself when Python's position covers a whole
    statement (``if flag:``) rather than an expression."""
    if _is_expression(line.expression):
        return
    pattern = re.compile(r"(?<![\w.])" + re.escape(value_name) + r"(?!\w)")
    m = pattern.search(line.text, line.col or 0) or pattern.search(line.text)
    if m:
        line.col, line.end_col = m.start(), m.end()


def _highlight(g: Graph, out: int) -> frozenset[int]:
    """Nodes on a path from an input node to ``out``."""
    fwd: dict[int, list[int]] = {}
    back: dict[int, list[int]] = {}
    for e in g.edges:
        fwd.setdefault(e.src, []).append(e.dst)
        back.setdefault(e.dst, []).append(e.src)

    def reach(starts: Iterable[int], adj: dict[int, list[int]]) -> set[int]:
        seen: set[int] = set()
        stack = list(starts)
        while stack:
            n = stack.pop()
            if n not in seen:
                seen.add(n)
                stack.extend(adj.get(n, ()))
        return seen

    inputs = [n.id for n in g.nodes if n.kind == "input"]
    if not inputs:  # computed from constants only: everything that led to it
        return frozenset(reach([out], back))
    return frozenset(reach(inputs, fwd) & reach([out], back))


def _argument_expression(call: ast.Call, param: str, index: int | None, traced_for: str) -> ast.AST | None:
    """The expression in ``call`` that becomes the callee's parameter ``param`` (number
    ``index``): plain calls by position or keyword; the loop/branch APIs by their own
    argument layout."""
    name = _call_name(call)
    args = list(call.args)
    kw = {k.arg: k.value for k in call.keywords if k.arg}

    def arg(i: int, key: str | None = None) -> ast.AST | None:
        if key and key in kw:
            return kw[key]
        if i < len(args) and not any(isinstance(a, ast.Starred) for a in args[: i + 1]):
            return args[i]
        return None

    if index is None:
        return None
    if name == "scan" or traced_for == "scan":
        return arg(1, "init") if index == 0 else arg(2, "xs") if index == 1 else None
    if name == "fori_loop":
        return arg(3, "init_val") if index == 1 else None
    if name == "while_loop":
        return arg(2, "init_val") if index == 0 else None
    if name == "cond":
        return arg(3 + index)
    if name == "switch":
        return arg(2 + index)
    if name == "map":
        return arg(1, "xs") if index == 0 else None
    return kw.get(param) or arg(index)


# ====================================================================== fixes
@dataclass(slots=True)
class _Statement:
    """What the failing expression was used for, from the source."""

    kind: str  # if | while | ifexp | boolop | not | assert | range | index | call | print | ""
    node: ast.AST | None  # the statement or expression using the value
    expr: ast.AST | None  # the failing expression itself
    parents: dict[int, ast.AST] = field(default_factory=dict)
    test: ast.AST | None = None  # the whole condition (an if/while/assert test, a/b in `a and b`)

    @property
    def cond(self) -> str:
        """The condition as code that works on traced values (jnp.logical_and for
        ``and``, ...), or "" when the failing value is not a condition."""
        return _traced_condition(self.test) if self.test is not None else ""


_PRINTS = {"print", "format", "str", "repr", "float", "int", "item", "tolist", "display"}


def _classify_statement(node: ast.AST | None, parents: dict[int, ast.AST]) -> _Statement:
    stmt = _classify(node, parents)
    stmt.parents = parents
    return stmt


def _is_boolean(node: ast.AST) -> bool:
    """``a and b``, ``not a``, ``a < b < c``: Python turns the operands into bools."""
    return (isinstance(node, ast.BoolOp) or (isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not))
            or (isinstance(node, ast.Compare) and len(node.ops) > 1))


def _classify(node: ast.AST | None, parents: dict[int, ast.AST]) -> _Statement:
    if isinstance(node, ast.IfExp):  # the position of the jump of `a if c else b` (3.11)
        return _Statement("ifexp", node, node, test=node.test)
    expr = node
    seen_print = False
    child = node
    boolean = None  # the outermost `and`/`or`/`not` the value is an operand of
    while node is not None:
        parent = parents.get(id(node))
        if isinstance(node, ast.Call) and _call_name(node) in _PRINTS and node is not expr:
            seen_print = True
        if isinstance(node, ast.Call) and _call_name(node) == "print":
            seen_print = True
        for kind, types in (("if", ast.If), ("while", ast.While), ("ifexp", ast.IfExp), ("assert", ast.Assert)):
            if isinstance(parent, types) and node is parent.test:
                return _Statement(kind, parent, expr, test=parent.test)
        if _is_boolean(node):
            boolean = node
        if boolean is not None and not _is_boolean(parent) and not _is_unwrapping(parent):
            kind = "not" if isinstance(boolean, ast.UnaryOp) else "boolop"
            return _Statement(kind, boolean, expr, test=boolean)
        if isinstance(node, ast.Call) and _call_name(node) == "range":
            return _Statement("range", node, expr)
        if isinstance(node, ast.Subscript) and child is node.slice:
            return _Statement("index", node, expr)
        if isinstance(node, ast.stmt):
            break
        child, node = node, parent
    if seen_print:
        return _Statement("print", None, expr)
    if isinstance(expr, ast.Call):
        return _Statement("call", expr, expr)
    return _Statement("", None, expr)


_UNWRAP = {"bool", "float", "int"}


def _is_unwrapping(node: ast.AST | None) -> bool:
    """``bool(c)``, ``float(c)``, ``c.item()``: a concrete Python value of ``c``."""
    if not isinstance(node, ast.Call) or node.keywords:
        return False
    if isinstance(node.func, ast.Name) and node.func.id in _UNWRAP and len(node.args) == 1:
        return True
    return isinstance(node.func, ast.Attribute) and node.func.attr == "item" and not node.args


class _ToTraced(ast.NodeTransformer):
    """A Python condition rewritten to work on traced values."""

    @staticmethod
    def _jnp(name: str, *args: ast.expr) -> ast.expr:
        return ast.Call(ast.Attribute(ast.Name("jnp", ast.Load()), name, ast.Load()), list(args), [])

    def visit_BoolOp(self, node: ast.BoolOp) -> ast.expr:
        values = [self.visit(v) for v in node.values]
        name = "logical_and" if isinstance(node.op, ast.And) else "logical_or"
        out = values[-1]
        for v in reversed(values[:-1]):
            out = self._jnp(name, v, out)
        return out

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.expr:
        if isinstance(node.op, ast.Not):
            return self._jnp("logical_not", self.visit(node.operand))
        return self.generic_visit(node)

    def visit_Compare(self, node: ast.Compare) -> ast.expr:
        node = self.generic_visit(node)
        if len(node.ops) == 1:
            return node
        operands = [node.left, *node.comparators]
        parts = [ast.Compare(operands[i], [op], [operands[i + 1]]) for i, op in enumerate(node.ops)]
        out = parts[-1]
        for p in reversed(parts[:-1]):
            out = self._jnp("logical_and", p, out)
        return out

    def visit_Call(self, node: ast.Call) -> ast.expr:
        if _is_unwrapping(node):
            inner = node.args[0] if isinstance(node.func, ast.Name) else node.func.value
            return self.visit(inner)
        return self.generic_visit(node)


def _traced_condition(test: ast.AST) -> str:
    import copy

    try:
        return ast.unparse(_ToTraced().visit(copy.deepcopy(test)))
    except Exception:
        return _src(test)


def _static_fix(e: Explanation, inputs: list[TracedInput]) -> Fix:
    names = tuple(dict.fromkeys(i.base_name for i in inputs))
    if all(i.traced_for == "cell" for i in inputs):
        return Fix("static", f"Fold {', '.join(f'`{n}`' for n in names)} into the trace as a constant",
                   f"%%jaxpr --static {','.join(names)}",
                   "the cell is re-traced and recompiled whenever that value changes")
    fn = inputs[0].function
    floats = [i.base_name for i in inputs if i.aval is not None and i.aval.dtype.startswith(("float", "complex"))]
    note = (f"each distinct value of {', '.join(f'`{n}`' for n in names)} compiles a separate version "
            f"of `{fn}` (cached afterwards): cheap for flags, modes and sizes with a few values, "
            "costly for a value that changes on every call")
    if floats:
        note += f"; `{floats[0]}` is a float, so almost every call would recompile"
    note += "; pass it as a hashable Python value (bool, int, str), not an array"
    code = (f"{fn} = jax.jit({fn}, static_argnames={names!r})\n"
            f"# or: @functools.partial(jax.jit, static_argnames={names!r})")
    return Fix("static", f"Mark {', '.join(f'`{n}`' for n in names)} static so Python sees its value",
               code, note)


def _if_branches(stmt: _Statement) -> tuple[str, str] | None:
    """(value if true, value if false) when an ``if`` just picks between two returns or two
    assignments of the same name."""
    node = stmt.node
    if not isinstance(node, ast.If) or len(node.body) != 1:
        return None
    first = node.body[0]
    other = node.orelse[0] if len(node.orelse) == 1 else None
    if not node.orelse and isinstance(first, ast.Return):  # `if c: return a` then `return b`
        parent = stmt.parents.get(id(node))
        body = getattr(parent, "body", [])
        k = next((i for i, n in enumerate(body) if n is node), None)
        if k is not None and k + 1 < len(body) and isinstance(body[k + 1], ast.Return):
            other = body[k + 1]
    if isinstance(first, ast.Return) and isinstance(other, ast.Return):
        return _src(first.value), _src(other.value)
    if (isinstance(first, ast.Assign) and isinstance(other, ast.Assign)
            and _src(first.targets[0]) == _src(other.targets[0])):
        return _src(first.value), _src(other.value)
    if isinstance(first, ast.Assign) and other is None and len(first.targets) == 1:
        target = _src(first.targets[0])
        return _src(first.value), target  # `if c: y = f(y)` → keep y otherwise
    return None


def _is_tuple(text: str) -> bool:
    try:
        return isinstance(ast.parse(text, mode="eval").body, ast.Tuple)
    except SyntaxError:
        return False


def _control_flow_fixes(e: Explanation, stmt: _Statement) -> list[Fix]:
    cond = stmt.cond or _src(stmt.expr) or e.value_name or "pred"
    if stmt.kind == "while":
        return [
            Fix("while_loop", "Replace the Python `while` by lax.while_loop (the loop runs on device)",
                f"state = lax.while_loop(lambda state: <{cond} in terms of state>,\n"
                "                       lambda state: <one iteration>, init_state)",
                "the state must keep the same shapes and dtypes across iterations"),
            Fix("fori_loop", "If the number of iterations is known, use lax.fori_loop",
                "state = lax.fori_loop(0, n, lambda i, state: <one iteration>, init_state)"),
            Fix("scan", "If you need every iteration's result, use lax.scan",
                "final, per_step = lax.scan(lambda carry, x: (new_carry, y), init, xs)")]
    branches = _if_branches(stmt) if stmt.kind == "if" else None
    if stmt.kind == "ifexp" and isinstance(stmt.node, ast.IfExp):
        branches = (_src(stmt.node.body), _src(stmt.node.orelse))
    a, b = branches if branches else ("<value if true>", "<value if false>")
    test = stmt.test
    if branches and isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        cond, a, b = _traced_condition(test.operand), b, a  # `if not c: a else b` → where(c, b, a)
    pytree = any(_is_tuple(x) for x in (a, b))
    target = ""
    if branches and isinstance(stmt.node, ast.If) and isinstance(stmt.node.body[0], ast.Assign):
        target = _src(stmt.node.body[0].targets[0]) + " = "
    elif branches and isinstance(stmt.node, ast.If):
        target = "return "
    elif branches and isinstance(stmt.node, ast.IfExp):  # `return a if c else b`, `y = ...`
        parent = stmt.parents.get(id(stmt.node))
        if isinstance(parent, ast.Return):
            target = "return "
        elif isinstance(parent, ast.Assign) and len(parent.targets) == 1:
            target = _src(parent.targets[0]) + " = "
    where_code = (f"{target}jax.tree.map(lambda a, b: jnp.where({cond}, a, b), {a}, {b})" if pytree
                  else f"{target}jnp.where({cond}, {a}, {b})")
    where = Fix("where", "Compute both branches and select elementwise with jnp.where",
                where_code,
                "both sides are computed; fine when they are cheap and have the same shape")
    cond_fix = Fix("cond", "Or branch on device with lax.cond (only the taken branch runs)",
                   f"{target}lax.cond({cond}, lambda: {a}, lambda: {b})",
                   "both branches must return the same shapes and dtypes; under vmap both run")
    select = Fix("select", "Or lax.select for a scalar/array predicate of exactly matching shape",
                 f"{target}lax.select({cond}, {a}, {b})", "no broadcasting: all three must have one shape")
    if stmt.kind in ("boolop", "not"):
        return [Fix("where", "Combine traced conditions with jnp.logical_and / logical_or / "
                    "logical_not (Python's and/or/not need a bool), then select with jnp.where",
                    f"ok = {cond}\nresult = jnp.where(ok, <value if true>, <value if false>)"),
                Fix("cond", cond_fix.title, "result = lax.cond(ok, lambda: <value if true>, "
                    "lambda: <value if false>)", cond_fix.note)]
    if stmt.kind == "assert":
        return [Fix("checkify", "Check traced values with jax.experimental.checkify (or drop the "
                    "assert under jit)",
                    f"checkify.check({cond}, 'message')\nf = checkify.checkify(f)", ""),
                Fix("debug_print", "Or print it at run time with jax.debug.print",
                    f'jax.debug.print("{cond}: {{}}", {cond})')]
    return [where, cond_fix, select]


def _fixes(e: Explanation, stmt: _Statement, frame: Any) -> list[Fix]:
    kind = e.kind
    msg = e.jax_message
    static_inputs = [i for i in e.inputs if i.can_be_static] if e.inputs else []
    scalar = bool(e.inputs) and len(static_inputs) == len(e.inputs)
    no_inputs = not e.direct_inputs and e.graph is not None
    fixes: list[Fix] = []
    debug = Fix("debug_print", "To look at the value, print it at run time with jax.debug.print "
                "(Python's print runs once, while tracing, and sees a tracer)",
                f'jax.debug.print("{e.value_name or "x"} = {{}}", {e.value_name or "x"})')
    numpy_fix = Fix("numpy", "Compute it with numpy / Python instead of jax.numpy: shapes and "
                    "constants are static, so the result stays a concrete value",
                    _numpy_rewrite(e), "jnp operations inside jit always produce tracers")

    if kind == "UnexpectedTracerError":
        where = f"`{e.leaked_from}`" if e.leaked_from else "the function"
        fixes.append(Fix("return", f"Return the value from {where} instead of storing it "
                         "in a global, a closure or an object (`self.x = ...`, `list.append`)",
                         "def f(x):\n    y = ...\n    return out, y   # and use the returned y",
                         "JAX transformations only see what goes in as arguments and out as results"))
        fixes.append(Fix("debug_print", "If you stored it to look at it, use jax.debug.print or "
                         "jax.debug.callback inside the function",
                         'jax.debug.print("y = {}", y)'))
        fixes.append(Fix("checking_leaks", "Find every leak at the point it happens with "
                         "jax.checking_leaks()", "with jax.checking_leaks():\n    f(x)"))
        return fixes
    if kind == "NonConcreteBooleanIndexError":
        mask = _mask_expr(stmt) or e.value_name or "mask"
        arr = _masked_array(stmt) or "x"
        fixes.append(Fix("where", "Keep the shape: select with jnp.where instead of dropping elements",
                         f"jnp.where({mask}, {arr}, 0)   # e.g. jnp.where({mask}, {arr}, 0).sum()",
                         "the result keeps the full shape; the fill value (0 here) must be neutral for "
                         "what follows"))
        fixes.append(Fix("size", "Or give the number of selected elements a static upper bound "
                         "with size=", f"idx = jnp.nonzero({mask}, size=N, fill_value=0)\n{arr}[idx]",
                         "N must be a Python int; missing entries are filled"))
        if static_inputs and scalar:
            fixes.append(_static_fix(e, static_inputs))
        return fixes
    if kind == "TracerArrayConversionError":
        if stmt.kind == "print":
            fixes.append(debug)
        fixes.append(Fix("jnp", "Use jax.numpy instead of numpy on traced values",
                         _jnp_rewrite(e.line), "numpy needs the actual numbers, which only exist at run time"))
        fixes.append(Fix("pure_callback", "If it must be NumPy code, call it at run time with "
                         "jax.pure_callback", "jax.pure_callback(np_fn, jax.ShapeDtypeStruct(shape, dtype), x)",
                         "runs on the host: slower, and not differentiable"))
        if stmt.kind != "print":
            fixes.append(debug)
        return fixes

    # bool / int / concretization / traced shape
    nonzero = re.search(r"size argument of (jnp\.\w+)", msg)
    if nonzero:
        fixes.append(Fix("size", f"Pass size= to {nonzero.group(1)} so its output shape is static",
                         f"{nonzero.group(1)}(..., size=N, fill_value=0)",
                         "N must be a Python int (an upper bound); missing entries are filled"))
    if no_inputs and not nonzero:
        fixes.append(numpy_fix)
    if stmt.kind == "print" and not nonzero:
        fixes.append(debug)
    if static_inputs and scalar:
        fixes.append(_static_fix(e, static_inputs))
    if kind == "TracerIntegerConversionError" or stmt.kind == "range":
        if stmt.kind == "range" or "range(" in (e.line.text if e.line else ""):
            fixes.append(Fix("fori_loop", "Replace the Python loop by lax.fori_loop (the trip count "
                             "may be traced)", "out = lax.fori_loop(0, n, lambda i, out: <body>, out)",
                             "with a traced trip count it lowers to a while loop (not reverse-differentiable)"))
            fixes.append(Fix("scan", "Or lax.scan when the number of steps is static and you need "
                             "per-step outputs", "out, ys = lax.scan(step, out, xs)"))
        else:
            fixes.append(Fix("dynamic_slice", "Index with a traced position via lax.dynamic_slice / "
                             "dynamic_index_in_dim, or x[i] on a jnp array",
                             "lax.dynamic_index_in_dim(x, i, keepdims=False)"))
    elif kind in ("TracerBoolConversionError",) or stmt.kind in ("if", "while", "ifexp", "boolop", "not", "assert"):
        fixes += _control_flow_fixes(e, stmt)
    elif kind == "TypeError" or "shape" in msg.lower():
        if not any(f.key == "numpy" for f in fixes):
            fixes.append(numpy_fix)
    if not static_inputs or not scalar:
        if static_inputs and all(i.traced_for == "cell" for i in static_inputs):
            fixes.append(_static_fix(e, static_inputs))
    if not any(f.key == "debug_print" for f in fixes):
        fixes.append(debug)
    return _dedupe(fixes)


def _dedupe(fixes: list[Fix]) -> list[Fix]:
    seen, out = set(), []
    for f in fixes:
        if (f.key, f.code) not in seen:
            seen.add((f.key, f.code))
            out.append(f)
    return out


def _mask_expr(stmt: _Statement) -> str | None:
    node = stmt.expr
    if isinstance(node, ast.Subscript):
        return _src(node.slice)
    if stmt.kind == "index" and isinstance(stmt.node, ast.Subscript):
        return _src(stmt.node.slice)
    return None


def _masked_array(stmt: _Statement) -> str | None:
    node = stmt.expr if isinstance(stmt.expr, ast.Subscript) else stmt.node
    return _src(node.value) if isinstance(node, ast.Subscript) else None


def _numpy_rewrite(e: Explanation) -> str:
    text = (e.value_name or "").strip()
    if "jnp." in text:
        return text.replace("jnp.array(", "np.array(").replace("jnp.", "np.") + "   # numpy, not jax.numpy"
    return "n = math.prod(x.shape)   # or np.prod(x.shape): Python ints, not tracers"


def _jnp_rewrite(line: UserLine | None) -> str:
    if line is None:
        return "jnp.asarray(x)"
    text = line.text.strip()
    new = re.sub(r"\b(np|numpy|onp)\.", "jnp.", text)
    return new if new != text else "jnp.asarray(x)   # and jnp.* functions instead of np.*"


# ====================================================================== small helpers
def _is_jaxpr(value: Any) -> bool:
    import jax.extend.core as jcore

    vals = value if isinstance(value, (tuple, list)) else (value,)
    return any(isinstance(v, (jcore.ClosedJaxpr, jcore.Jaxpr)) for v in vals)


# ====================================================================== rendering
def _esc(text: Any) -> str:
    return html.escape(str(text))


def _code_html(text: str) -> str:
    """Inline code for backquoted spans in our sentences."""
    parts = _esc(text).split("`")
    return "".join(f"<code>{p}</code>" if k % 2 else p for k, p in enumerate(parts))


def _explanation_html(e: Explanation, svg: str | None) -> str:
    parts = [f'<div class="jaxviz-explanation" style="border-left:4px solid {HIGHLIGHT};'
             'padding:4px 10px;margin:4px 0;font-size:13px">',
             f'<div style="font-weight:bold;color:{HIGHLIGHT}">jaxviz · {_esc(e.kind)}</div>',
             f"<div>{_code_html(e.headline())}.</div>"]
    if e.line is not None:
        t = e.line.text
        num = e.line.cell_line if e.line.cell_line is not None else e.line.line
        if e.line.expression:
            code = (_esc(t[: e.line.col]) + f'<mark style="background:#F9D6D5;color:inherit;'
                    f'border-bottom:2px solid {HIGHLIGHT}">{_esc(e.line.expression)}</mark>'
                    + _esc(t[e.line.end_col:]))
        else:
            code = _esc(t)
        parts.append(f'<div style="color:#666;font-size:11px;margin-top:4px">{_esc(e.line.where())}</div>'
                     f'<pre style="margin:2px 0;padding:4px;background:#F7F7F7">'
                     f'<span style="color:#999">{num} │ </span>{code}</pre>')
    why = e.why_lines()[1:]
    if why:
        parts.append("<ul style='margin:4px 0'>" + "".join(f"<li>{_code_html(w.strip().lstrip('← '))}</li>"
                                                           for w in why) + "</ul>")
    for note in e.notes:
        parts.append(f'<div style="color:#a15c00;font-size:12px">note: {_esc(note)}</div>')
    if e.fixes:
        items = []
        for k, f in enumerate(e.fixes):
            code = f'<pre style="margin:2px 0;padding:4px;background:#F3F8F3">{_esc(f.code)}</pre>' if f.code else ""
            note = f'<div style="color:#666;font-size:11px">{_esc(f.note)}</div>' if f.note else ""
            first = ' style="font-weight:bold"' if k == 0 else ""
            items.append(f"<li><span{first}>{_code_html(f.title)}</span>{code}{note}</li>")
        parts.append(f'<div style="margin-top:6px"><b>Fixes</b>, best first:<ol style="margin:2px 0">'
                     f'{"".join(items)}</ol></div>')
    if e.graph is not None:
        legend = (f'<span style="color:{HIGHLIGHT}">red</span>: the path from the inputs '
                  "to the refused value")
        body = (f'<div style="overflow:auto;max-height:600px">{svg}</div>' if svg is not None else
                "<pre style='font-size:12px'>" + _esc("\n".join(e.path_lines())) + "</pre>")
        parts.append(f'<details open><summary><b>Provenance</b> ({legend})</summary>{body}</details>')
    parts.append("<details><summary style='color:#666'>JAX's message</summary><pre style='font-size:11px;"
                 f"white-space:pre-wrap'>{_esc(e.jax_message)}</pre></details></div>")
    return "".join(parts)


def _explanation_rich(e: Explanation) -> Any:
    from rich.panel import Panel
    from rich.text import Text
    from rich.tree import Tree

    body = Text()
    body.append(e.headline() + ".\n", style="bold")
    if e.line is not None:
        body.append(f"{e.line.where()}\n", style="dim")
        num = f"{e.line.cell_line if e.line.cell_line is not None else e.line.line} │ "
        body.append(num, style="dim")
        t = e.line.text
        if e.line.expression:
            body.append(t[: e.line.col])
            body.append(e.line.expression, style=f"bold underline {HIGHLIGHT}")
            body.append(t[e.line.end_col:] + "\n")
        else:
            body.append(t + "\n")
    for w in e.why_lines()[1:]:
        body.append("• " + w.strip().replace("`", "") + "\n")
    for note in e.notes:
        body.append(f"note: {note}\n", style="yellow")
    yield Panel(body, title=f"jaxviz · {e.kind}", border_style=HIGHLIGHT, expand=False)
    path = e.path_lines()
    if path:
        tree = Tree("[bold]provenance[/bold] (path from the inputs to the value)")
        for p in path:
            color = LEGEND["traced"]["color"] if not p.startswith(" ") and not p.startswith("→") else None
            tree.add(Text(p.strip(), style=f"bold {color}" if color else (HIGHLIGHT if p.startswith("→") else "")))
        yield tree
    if e.fixes:
        fixes = Text("fixes, best first:\n", style="bold")
        for k, f in enumerate(e.fixes, 1):
            fixes.append(f"{k}. {f.title.replace('`', '')}\n", style="bold" if k == 1 else "")
            for c in f.code.splitlines():
                fixes.append(f"     {c}\n", style="green")
            if f.note:
                fixes.append(f"     ({f.note})\n", style="dim")
        yield fixes


# ====================================================================== IPython hook
_HOOKS: dict[int, tuple[tuple[type, ...], Any]] = {}  # id(shell) → previous custom exc


def user_frames(tb: Any) -> list[UserLine]:
    """The traceback's frames in the user's code (cells, the user's files), outermost
    first: what a traceback of an explained error keeps."""
    out = []
    while tb is not None:
        code = tb.tb_frame.f_code
        if is_user_file(code.co_filename) and not code.co_filename.startswith("<frozen"):
            out.append(_frame_line(code.co_filename, tb.tb_lineno, code.co_name,
                                   _span(code, tb.tb_lasti), None))
        tb = tb.tb_next
    return out


_RED, _GREEN, _BOLD, _RESET = "\x1b[0;31m", "\x1b[0;32m", "\x1b[1m", "\x1b[0m"
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def short_traceback(exc: BaseException) -> list[str]:
    """An explained error's traceback: the error, then only the user's frames (line and
    caret), then where the rest is. IPython shows these lines instead of the long one."""
    message = (str(exc).strip().splitlines() or [""])[0]
    lines = [f"{_RED}{_BOLD}{type(exc).__name__}{_RESET}: {message}"]
    for frame in user_frames(exc.__traceback__):
        where = frame.where() if frame.cell else f"{frame.file}:{frame.line}"
        function = "" if frame.function == "<module>" else f", in {frame.function}"
        lines.append(f"  {_GREEN}{where}{function}{_RESET}")
        lines.append(f"    {frame.text.strip()}")
        if frame.expression and frame.expression.strip() != frame.text.strip():
            indent = len(frame.text) - len(frame.text.lstrip())
            lines.append("    " + " " * max(frame.col - indent, 0) + "^" * len(frame.expression))
    lines.append("(explained above; your frames only: the full traceback is folded above, "
                 "or run %tb)")
    return lines


def _full_traceback_html(shell: Any, etype: type, value: BaseException, tb: Any,
                         tb_offset: Any) -> str | None:
    """The full traceback as a folded block: one click away."""
    try:
        stb = shell.InteractiveTB.structured_traceback(etype, value, tb, tb_offset=tb_offset)
    except Exception:
        return None
    text = _ANSI.sub("", "\n".join(stb))
    frames = sum(1 for _ in _walk_tb(tb))
    return (f"<details class='jaxviz-traceback' style='font:12px var(--jp-ui-font-family,sans-serif)'>"
            f"<summary>full traceback ({frames} frames)</summary><pre style='font-size:11px;"
            f"white-space:pre-wrap'>{html.escape(text)}</pre></details>")


def _walk_tb(tb: Any) -> Iterable[Any]:
    while tb is not None:
        yield tb
        tb = tb.tb_next


def _handler(shell: Any, etype: type, value: BaseException, tb: Any, tb_offset: Any = None) -> None:
    """IPython custom exception handler: for an explained tracer error, the explanation,
    the full traceback folded under it, and a short traceback of the user's frames (``%tb``
    shows the full one); anything else is shown exactly as IPython would have."""
    previous = _HOOKS.get(id(shell))
    explanation = None
    if is_tracer_error(value):
        explanation = _safe_explain(value)
    elif previous is not None and previous[0] and isinstance(value, previous[0]):
        return previous[1](etype, value, tb, tb_offset=tb_offset)
    if explanation is None:
        shell.showtraceback((etype, value, tb), tb_offset=tb_offset, running_compiled_code=True)
        return None
    try:
        from IPython.display import HTML, display

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
            del value._render_traceback_
        except AttributeError:
            pass
    return None


def register(shell: Any) -> None:
    """Show an explanation above the traceback of JAX tracer errors in every cell
    (``%load_ext jaxviz`` calls this). The exception is still raised as usual. Installs
    the capture of JAX's tracer errors if it is not (``import jaxviz`` installs it;
    ``unregister`` removes it)."""
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
    ``import jaxviz`` or ``register`` installed is removed; ``register`` installs it again)."""
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
