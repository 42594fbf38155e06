"""A notebook cell → a function JAX can trace, and back to names in the namespace.

The cell's body becomes ``def __jaxviz_cell__(<traced names>): <body>; return locals()``
compiled with the cell's own line numbers, so every equation points at its line in the
cell. Names the cell reads are classified: arrays (and pytrees of arrays) are traced
inputs, ``--static`` names and Python values are folded in as constants, everything else
(functions, modules) is read from the namespace as usual. Nothing is bound until the whole
cell has traced, compiled and run, so a failing cell leaves no half-bound names.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import copy
import functools
import itertools
import linecache
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import jax

from . import _jax_internals as internals
from .adapters import captured_leaf_names, in_place_state
from .call_scopes import CELL_FUNCTION, compile_instrumented, restore_plain_code
from .devices import default_device, describe_device, place, resolve_device
from .jaxprs import fresh_function, is_array, is_python_scalar, is_traceable_tree, path_text, short
from .program import InputInfo, Program, traced_inputs
from .tracing import build_program, captured_values, read_while_traced, stage

LAST_VALUE = "__jaxviz_last__"
_counter = itertools.count(1)


class NothingToTrace(Exception):
    """The cell ran, but holds no JAX operation: there is no graph to show."""


def new_cell_filename() -> str:
    return f"<jaxviz-cell-{next(_counter)}>"


def register_source(filename: str, source: str) -> None:
    """Let tracebacks and our source lookups show the cell's lines."""
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)


@dataclass
class CellAnalysis:
    tree: ast.Module
    loaded: list[str]  # names read before the cell binds them, in first-use order
    assigned: set[str]  # names the cell binds at its top level
    has_last_expr: bool
    deleted: set[str] = field(default_factory=set)  # ``del x``: unbound after the run


def _statement_names(stmt: ast.stmt) -> tuple[list[str], set[str]]:
    """(names read, names bound) anywhere inside one top-level statement."""
    loaded: dict[str, None] = {}
    assigned: set[str] = set()
    for node in ast.walk(stmt):
        if isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Load):
                loaded.setdefault(node.id, None)
            else:
                assigned.add(node.id)
                if isinstance(node.ctx, ast.Del):
                    loaded.setdefault(node.id, None)
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            loaded.setdefault(node.target.id, None)  # ``x += 1`` reads x first
        elif isinstance(node, (ast.Subscript, ast.Attribute)) and isinstance(node.ctx, ast.Store):
            base = _store_base(node)  # ``params['w'] = ...`` changes params: bind it back
            if base is not None:
                assigned.add(base)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            assigned.add(node.name)
        elif isinstance(node, ast.arg):  # parameters of functions/lambdas defined in the cell
            assigned.add(node.arg)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                assigned.add((alias.asname or alias.name).split(".")[0])
    return list(loaded), assigned


def _store_base(node: ast.expr) -> str | None:
    while isinstance(node, (ast.Subscript, ast.Attribute)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _names(tree: ast.Module) -> tuple[list[str], set[str]]:
    """(names the cell reads before binding them, in first-use order; names it binds).
    ``y = 2 * x; z = y + 1`` reads ``x`` from the namespace, not ``y``."""
    free: dict[str, None] = {}
    assigned: set[str] = set()
    for stmt in tree.body:
        loaded, bound = _statement_names(stmt)
        for name in loaded:
            if name not in assigned:
                free.setdefault(name, None)
        assigned |= bound
    return list(free), assigned


def analyse(source: str, filename: str) -> CellAnalysis:
    """Parse the cell (a SyntaxError carries the cell's own line number)."""
    tree = ast.parse(source, filename=filename)
    # ``global x`` at a cell's top level is a no-op in a plain run; inside our function
    # it would make the traced value land in the namespace itself.
    tree.body = [stmt for stmt in tree.body if not isinstance(stmt, ast.Global)]
    loaded, assigned = _names(tree)
    has_last = bool(tree.body) and isinstance(tree.body[-1], ast.Expr)
    deleted = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Del)}
    return CellAnalysis(tree, loaded, assigned, has_last, deleted)


def _as_function(analysis: CellAnalysis, params: list[str], filename: str, namespace: dict) -> Any:
    body = list(analysis.tree.body)
    if analysis.has_last_expr:
        last = body[-1]
        assert isinstance(last, ast.Expr)  # what has_last_expr says
        body[-1] = ast.copy_location(
            ast.Assign(targets=[ast.Name(LAST_VALUE, ast.Store())], value=last.value), last)
    body.append(ast.Return(ast.Call(ast.Name("locals", ast.Load()), [], [])))
    fn = ast.FunctionDef(
        name=CELL_FUNCTION,
        args=ast.arguments(posonlyargs=[], args=[ast.arg(p) for p in params], kwonlyargs=[],
                           kw_defaults=[], defaults=[]),
        body=body, decorator_list=[], returns=None, type_params=[],  # pyright: ignore[reportCallIssue]  (a field from Python 3.12)
    )
    module = ast.Module(body=[fn], type_ignores=[])
    ast.fix_missing_locations(module)
    # Functions the cell defines get their call groups (jaxviz.call_scopes).
    code = compile_instrumented(module, filename)
    scope: dict[str, Any] = {}
    exec(code, namespace, scope)  # defines the function only
    return scope[CELL_FUNCTION]


@dataclass
class CellProgram:
    """A traced cell: the Program plus what is needed to run it and bind its names."""

    program: Program
    compiled: Any = None
    args: tuple[Any, ...] = ()
    side: dict[str, Any] = field(default_factory=dict)
    analysis: CellAnalysis | None = None
    device: Any = None  # the device asked for (None: JAX's default); inputs are placed there

    def run(self) -> dict[str, Any]:
        """Execute on the device; returns the names to bind (``__jaxviz_last__`` included).
        What the run cost is ``jaxviz.profiling.report_cell_run``'s."""
        compiled = self.compiled if self.compiled is not None else self.compile()
        t0 = time.perf_counter()
        outs = compiled(*self.args)
        jax.block_until_ready(outs)
        self.program.timings["run"] = time.perf_counter() - t0
        leaves = list(self.side["leaves"])
        for i, value in zip(self.side["dynamic"], outs):
            leaves[i] = value
        rest = outs[len(self.side["dynamic"]):]
        for state, node, state_def, changed in self.side["write_back"]:  # the rest is as it was
            state_leaves = jax.tree_util.tree_leaves(state.state_of(node)[0])
            for k, value in zip(changed, rest):
                state_leaves[k] = value
            state.write_state(node, jax.tree_util.tree_unflatten(state_def, state_leaves))
            rest = rest[len(changed):]
        return jax.tree_util.tree_unflatten(self.side["treedef"], leaves)

    def compile(self) -> Any:
        with _on_device(self.device):
            t0 = time.perf_counter()
            lowered = self.side["staged"].traced.lower()
            t1 = time.perf_counter()
            self.compiled = lowered.compile()
            t2 = time.perf_counter()
        self.program.timings["lower"] = t1 - t0
        self.program.timings["compile"] = t2 - t1
        return self.compiled


def _on_device(device: Any) -> Any:
    """Stage, lower and compile for ``device`` (also when the cell has no array inputs)."""
    return contextlib.nullcontext() if device is None else jax.default_device(device)


def trace_cell(source: str, namespace: dict[str, Any], static: Iterable[str] = ()) -> Program:
    """Trace a notebook cell's source against ``namespace`` (which is not modified) into a
    Program, without running it."""
    return stage_cell(source, namespace, static).program


def stage_cell(source: str, namespace: dict[str, Any], static: Iterable[str] = (),
               filename: str | None = None, device: Any = None, name: str = "cell") -> CellProgram:
    """Trace a cell; the result can be compiled, run, and its names bound. ``device``
    ("cpu:1", "gpu:0", a ``jax.Device``; None: JAX's default) is where it will run: its
    array inputs are placed there explicitly."""
    if device is not None:
        device = resolve_device(device)
    filename = filename or new_cell_filename()
    register_source(filename, source)
    analysis = analyse(source, filename)
    static = set(static)
    unknown = static - set(analysis.loaded)
    if unknown:
        raise ValueError(f"--static names not read by the cell: {', '.join(sorted(unknown))}")
    traced, folded, inputs, split = _classify(analysis, namespace, static)
    carried = [n for n in folded if n in analysis.assigned]  # read, then rebound by the cell
    cell_fn = _as_function(analysis, traced + carried, filename, namespace)
    cell_code = cell_fn.__code__  # the cell itself is the root, not a call group inside it
    if carried:
        cell_fn = functools.partial(cell_fn, **{n: namespace[n] for n in carried})
    side: dict[str, Any] = {}
    outputs = analysis.assigned | ({LAST_VALUE} if analysis.has_last_expr else set())
    in_place = {n: state for n in traced if (state := in_place_state(namespace[n])) is not None}

    def staged_fn(*args: Any) -> list[Any]:
        merged = [split[n].merge(a) if n in split else a for n, a in zip(traced, args)]
        before = {n: jax.tree_util.tree_leaves(in_place[n].state_of(arg)[0]) for n, arg in zip(traced, merged)
                  if n in in_place}  # e.g. NNX Variables change in place
        local = cell_fn(*merged)
        result = {k: local[k] for k in local if k in outputs}
        flat, treedef = jax.tree_util.tree_flatten_with_path(result)
        dynamic = [i for i, (_, leaf) in enumerate(flat) if isinstance(leaf, jax.Array)]
        side.update(treedef=treedef, leaves=[leaf for _, leaf in flat], dynamic=dynamic,
                    names=[_output_name(flat[i][0]) for i in dynamic], write_back=[])
        updated = []
        for n, arg in zip(traced, merged):  # objects the cell updated in place (not inside a jax.jit)
            if n in before:
                state, names = in_place[n].state_of(arg)
                leaves, state_def = jax.tree_util.tree_flatten(state)
                changed = [k for k, leaf in enumerate(leaves) if leaf is not before[n][k]] \
                    if len(leaves) == len(before[n]) else list(range(len(leaves)))
                if changed:
                    side["write_back"].append((in_place[n], namespace[n], state_def, changed))
                    side["names"] += [n + names[k] for k in changed]
                    updated += [leaves[k] for k in changed]
        return [flat[i][1] for i in dynamic] + updated

    staged_fn.__name__ = name
    args = tuple(split[n].arrays if n in split else namespace[n] for n in traced)
    snapshots = _snapshot_containers(namespace, folded)
    if device is not None:
        args = place(args, device)
    with _on_device(device):
        staged = stage(lambda: jax.jit(fresh_function(staged_fn)), args, {}, skip=[cell_code], cell_file=filename,
                       roots=[cell_fn])
    _check_no_leaks(namespace, snapshots)
    side["staged"] = staged
    side["leaves"] = [restore_plain_code(leaf) for leaf in side["leaves"]]  # what gets bound
    input_names = [i.name for i in inputs if i.kind == "traced"]
    readers: dict[int, set[Any]] = {}
    captured = read_while_traced(_captured_by_callees(cell_fn, analysis, namespace, readers), readers, staged)
    own = {i.name for i in inputs}  # a global the cell reads too is its input: one entry
    listed = [info for info, _ in captured if info.name not in own]
    program = build_program(name, staged, inputs + listed, input_names, side["names"], captured,
                            cell_file=filename, source=source)
    program.device = describe_device(device if device is not None else default_device())
    return CellProgram(program, args=args, side=side, analysis=analysis, device=device)


def _captured_by_callees(cell_fn: Any, analysis: CellAnalysis, namespace: dict[str, Any],
                         readers: dict[int, set[Any]]) -> list[tuple[InputInfo, Any]]:
    """Globals and closure cells the functions the cell calls read (``Y0`` inside
    ``solve``): baked in as constants, named after them (``readers``: see
    ``captured_values``)."""
    roots = [namespace[n] for n in analysis.loaded if n in namespace and callable(namespace[n])]
    return captured_values(cell_fn, roots=roots, readers=readers)


class LeakedTracerError(ValueError):
    """The cell stored a traced value into an object from the namespace."""


def _snapshot_containers(namespace: dict[str, Any], names: Iterable[str]) -> dict[str, Any]:
    """Shallow copies of the lists, dicts and sets the cell reads without tracing them,
    to undo a mutation that would leave tracers behind."""
    return {n: copy.copy(namespace[n]) for n in names
            if n in namespace and type(namespace[n]) in (list, dict, set)}


def _check_no_leaks(namespace: dict[str, Any], snapshots: dict[str, Any]) -> None:
    """A ``results.append(x * 2)`` inside a traced cell puts a tracer, not a value, into
    ``results``: restore the container and say what to do instead."""
    for name, before in snapshots.items():
        value = namespace[name]
        if not any(internals.is_tracer(leaf) for leaf in jax.tree_util.tree_leaves(value)):
            continue
        if isinstance(value, list):
            value[:] = before
        else:
            value.clear()
            value.update(before)
        raise LeakedTracerError(
            f"the cell stored a traced value into `{name}` (a {type(value).__name__} from an earlier "
            f"cell); inside %%jaxpr that value only exists while JAX traces. `{name}` was restored. "
            f"Bind a new name instead, e.g. `{name} = {name} + [...]`, or run this cell without %%jaxpr.")


def _output_name(path: Any) -> str:
    key = path_text(path)  # "['loss']" or "['params']['w']"
    if key.startswith("['") and "']" in key:
        head, rest = key[2:].split("']", 1)
        return ("result" if head == LAST_VALUE else head) + rest
    return key


@dataclass
class SplitValue:
    """A namespace value holding arrays beside other leaves (an Equinox Module with its
    activation function): its arrays are traced, the rest held static, as
    ``eqx.filter_jit`` splits an argument."""

    treedef: Any
    leaves: list[Any]  # the static leaves; None where an array goes
    arrays: list[Any]

    @classmethod
    def of(cls, value: Any) -> SplitValue | None:
        if callable(value) and not jax.tree_util.tree_leaves(value):
            return None
        leaves, treedef = jax.tree_util.tree_flatten(value)
        if not any(is_array(x) for x in leaves):
            return None
        return cls(treedef, [None if is_array(x) else x for x in leaves],
                   [x for x in leaves if is_array(x)])

    def merge(self, arrays: list[Any]) -> Any:
        it = iter(arrays)
        return jax.tree_util.tree_unflatten(
            self.treedef, [next(it) if x is None else x for x in self.leaves])

    def inputs(self, name: str, value: Any) -> list[InputInfo]:
        out = []
        paths = jax.tree_util.tree_flatten_with_path(value)[0]
        names = captured_leaf_names(name, value)
        if names is None:
            names = [name + path_text(path) for path, _ in paths]
        for full, (_, leaf) in zip(names, paths):
            if is_array(leaf):
                out += traced_inputs(full, leaf, "cell variable")
            else:
                out.append(InputInfo(full, "static", None, short(leaf, 40), "cell variable"))
        return out


def _classify(analysis: CellAnalysis, namespace: dict[str, Any], static: set[str]
              ) -> tuple[list[str], list[str], list[InputInfo], dict[str, SplitValue]]:
    traced: list[str] = []
    folded: list[str] = []
    inputs: list[InputInfo] = []
    split: dict[str, SplitValue] = {}
    for name in analysis.loaded:
        if name not in namespace:
            if not hasattr(builtins, name) and name not in analysis.assigned:
                raise NameError(f"name {name!r} is not defined")
            continue
        value = namespace[name]
        if name in static:
            folded.append(name)
            inputs.append(InputInfo(name, "static", None, short(value, 40), "cell variable"))
        elif is_traceable_tree(value):
            traced.append(name)
            flat = traced_inputs(name, value, "cell variable")
            for info, leaf_name in zip(flat, captured_leaf_names(name, value) or []):
                info.name = leaf_name
            inputs += flat
        elif is_python_scalar(value):
            folded.append(name)
            # Python numbers are folded in as literals, as a plain run would use them.
            inputs.append(InputInfo(name, "constant", None, short(value, 40), "cell variable"))
        elif (parts := SplitValue.of(value)) is not None:
            traced.append(name)
            split[name] = parts
            inputs += parts.inputs(name, value)
        else:
            folded.append(name)  # functions, modules, objects: read as usual, not inputs
    return traced, folded, inputs, split

