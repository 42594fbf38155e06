"""Ranked fixes for a tracer error, read from the statement that raised it:
``static_argnames=``, ``jnp.where``/``lax.cond``, numpy for shape arithmetic, ``size=``,
``jax.debug.print``."""

from __future__ import annotations

import ast
import copy
import re
from dataclasses import dataclass, field
from typing import Any, cast

import jax.extend.core as jcore

from .explanation import Explanation, Fix, TracedInput
from .source import call_name, source_text
from .userline import UserLine


@dataclass(slots=True)
class Statement:
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


def classify_statement(node: ast.AST | None, parents: dict[int, ast.AST]) -> Statement:
    stmt = _classify(node, parents)
    stmt.parents = parents
    return stmt


def _is_boolean(node: ast.AST | None) -> bool:
    """``a and b``, ``not a``, ``a < b < c``: Python turns the operands into bools."""
    return (isinstance(node, ast.BoolOp) or (isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not))
            or (isinstance(node, ast.Compare) and len(node.ops) > 1))


def _classify(node: ast.AST | None, parents: dict[int, ast.AST]) -> Statement:
    if isinstance(node, ast.IfExp):  # the position of the jump of `a if c else b` (3.11)
        return Statement("ifexp", node, node, test=node.test)
    expr = node
    seen_print = False
    child = node
    boolean = None  # the outermost `and`/`or`/`not` the value is an operand of
    while node is not None:
        parent = parents.get(id(node))
        if isinstance(node, ast.Call) and call_name(node) in _PRINTS and node is not expr:
            seen_print = True
        if isinstance(node, ast.Call) and call_name(node) == "print":
            seen_print = True
        for kind, types in (("if", ast.If), ("while", ast.While), ("ifexp", ast.IfExp), ("assert", ast.Assert)):
            if isinstance(parent, types) and node is parent.test:
                return Statement(kind, parent, expr, test=parent.test)
        if _is_boolean(node):
            boolean = node
        if boolean is not None and not _is_boolean(parent) and not _is_unwrapping(parent):
            kind = "not" if isinstance(boolean, ast.UnaryOp) else "boolop"
            return Statement(kind, boolean, expr, test=boolean)
        if isinstance(node, ast.Call) and call_name(node) == "range":
            return Statement("range", node, expr)
        if isinstance(node, ast.Subscript) and child is node.slice:
            return Statement("index", node, expr)
        if isinstance(node, ast.stmt):
            break
        child, node = node, parent
    if seen_print:
        return Statement("print", None, expr)
    if isinstance(expr, ast.Call):
        return Statement("call", expr, expr)
    return Statement("", None, expr)


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
        return cast(ast.expr, self.generic_visit(node))

    def visit_Compare(self, node: ast.Compare) -> ast.expr:
        node = cast(ast.Compare, self.generic_visit(node))
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
            inner = node.args[0] if isinstance(node.func, ast.Name) else cast(ast.Attribute, node.func).value
            return self.visit(inner)
        return cast(ast.expr, self.generic_visit(node))


def _traced_condition(test: ast.AST) -> str:
    try:
        return ast.unparse(_ToTraced().visit(copy.deepcopy(test)))
    except Exception:
        return source_text(test)


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


def _if_branches(stmt: Statement) -> tuple[str, str] | None:
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
        return source_text(first.value), source_text(other.value)
    if (isinstance(first, ast.Assign) and isinstance(other, ast.Assign)
            and source_text(first.targets[0]) == source_text(other.targets[0])):
        return source_text(first.value), source_text(other.value)
    if isinstance(first, ast.Assign) and other is None and len(first.targets) == 1:
        target = source_text(first.targets[0])
        return source_text(first.value), target  # `if c: y = f(y)` → keep y otherwise
    return None


def _is_tuple(text: str) -> bool:
    try:
        return isinstance(ast.parse(text, mode="eval").body, ast.Tuple)
    except SyntaxError:
        return False


def _control_flow_fixes(e: Explanation, stmt: Statement) -> list[Fix]:
    cond = stmt.cond or source_text(stmt.expr) or e.value_name or "pred"
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
        branches = (source_text(stmt.node.body), source_text(stmt.node.orelse))
    a, b = branches if branches else ("<value if true>", "<value if false>")
    test = stmt.test
    if branches and isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        cond, a, b = _traced_condition(test.operand), b, a  # `if not c: a else b` → where(c, b, a)
    pytree = any(_is_tuple(x) for x in (a, b))
    target = ""
    if branches and isinstance(stmt.node, ast.If) and isinstance(stmt.node.body[0], ast.Assign):
        target = source_text(stmt.node.body[0].targets[0]) + " = "
    elif branches and isinstance(stmt.node, ast.If):
        target = "return "
    elif branches and isinstance(stmt.node, ast.IfExp):  # `return a if c else b`, `y = ...`
        parent = stmt.parents.get(id(stmt.node))
        if isinstance(parent, ast.Return):
            target = "return "
        elif isinstance(parent, ast.Assign) and len(parent.targets) == 1:
            target = source_text(parent.targets[0]) + " = "
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


def ranked_fixes(e: Explanation, stmt: Statement, frame: Any) -> list[Fix]:
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


def _mask_expr(stmt: Statement) -> str | None:
    node = stmt.expr
    if isinstance(node, ast.Subscript):
        return source_text(node.slice)
    if stmt.kind == "index" and isinstance(stmt.node, ast.Subscript):
        return source_text(stmt.node.slice)
    return None


def _masked_array(stmt: Statement) -> str | None:
    node = stmt.expr if isinstance(stmt.expr, ast.Subscript) else stmt.node
    return source_text(node.value) if isinstance(node, ast.Subscript) else None


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
def is_jaxpr(value: Any) -> bool:
    vals = value if isinstance(value, (tuple, list)) else (value,)
    return any(isinstance(v, (jcore.ClosedJaxpr, jcore.Jaxpr)) for v in vals)
