"""Where a refused traced value came from: the equations and inputs walked back from
it, the path drawn as a graph, the frame and argument each input was traced for."""

from __future__ import annotations

import ast
import re
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import jax

from .. import _jax_internals as internals
from ..call_scopes import CELL_FUNCTION, is_user_file, make_source
from ..graph import Aval, Graph, SourceLoc
from ..jaxprs import make_aval, short
from .explanation import NEEDS, Explanation, TracedInput
from .fixes import Statement, classify_statement, is_jaxpr, ranked_fixes
from .source import call_name, node_at, source_text
from .userline import UserLine, code_span, frame_line, user_line

MAX_PROVENANCE_EQNS = 20000  # nodes walked back from the failing value (all inputs found)
MAX_DRAWN_NODES = 40  # beyond this, the path's equations nearest the value are drawn
MAX_DRAWN_INPUTS = 12


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


class Explainer:
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
        return code_span(frame.f_code, frame.f_lasti)

    def _failing_line(self) -> UserLine | None:
        where = user_line(self.exc, self.cell_file)
        if where is not None:
            return where
        if self.frames:  # e.g. a traceback cut short: use the recorded stack
            f = self.frames[0]
            return frame_line(f.f_code.co_filename, f.f_lineno, f.f_code.co_name,
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
            sub = Explainer._holds(v, target, depth - 1)
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
        call, _ = node_at(caller.f_code.co_filename, self._frame_span(caller), (ast.Call,))
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
                    out.append((outer, f"{source_text(expr)} → {base}"))
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
                                                   if not is_jaxpr(v)},
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
                kept = self.nodes[key]
                if kept.kind == "input" and kept.graph_id is not None:
                    g.add_edge(kept.graph_id, gap, make_aval(kept.tracers[0].aval), "")
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
        if self.kind == "UnexpectedTracerError" and not self.inputs \
                and not internals.TRACERS_HOLD_THEIR_EQUATION:
            self.notes.append(f"JAX {jax.__version__} forgets a leaked tracer's equation once its "
                              "trace ends (JAX 0.7 keeps it): where it was made is known, not "
                              "which inputs it came from")
        explanation = Explanation(
            self.exc, self.kind, NEEDS.get(self.kind, "a concrete value"), line, value_name, aval,
            outer, direct, graph, path, [], self.notes, created_at, leaked_from, self.truncated)
        explanation.fixes = ranked_fixes(explanation, self._statement(line, frame), frame)
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
            if info.node is not None and info.aval is not None:
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
        frames = internals.tracer_created_at(staged if staged is not None else tracer)
        fn = internals.tracer_function(staged) if staged is not None else None
        created = None
        for f in frames:
            if is_user_file(f.file):
                created = make_source(f.file, f.line, f.function, self.cell_file)
                break
        return created, fn.name if fn is not None else None

    def _statement(self, line: UserLine | None, frame: Any) -> Statement:
        if line is None or frame is None:
            return Statement("", None, None)
        span = (line.line, line.line, line.col, line.end_col) \
            if line.expression and line.col is not None and line.end_col is not None else self._frame_span(frame)
        if line.span is not None and line.span[1] != line.span[0] and line.span[2] == line.col:
            span = line.span  # an expression over several lines (not cut at the line's end)
        node, parents = node_at(line.file, span)
        if node is None and span is not None:  # the position of a whole `if`/`while` statement
            node, parents = node_at(line.file, span, (ast.If, ast.While, ast.Assert))
            node = getattr(node, "test", None)
        stmt = classify_statement(node, parents)
        _point_at_test(line, stmt)
        return stmt


def _point_at_test(line: UserLine, stmt: Statement) -> None:
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
    if text is None:
        return False
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
    name = call_name(call)
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
