"""IPython magics: ``%%jaxpr`` (trace, show and run a cell), ``%jaxpr fn(args)`` (show one
call of a function) and ``%jaxviz <command>`` (watch recompiles, list devices, ...).

``load_ipython_extension`` wires everything to the shell; ``unload_ipython_extension``
removes every hook it added.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Set as AbstractSet
from typing import Any

from IPython.core.interactiveshell import InteractiveShell
from IPython.core.magic import Magics, line_cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring
from IPython.display import display

from .. import display as views
from .. import errors
from ..call_scopes import ipython_cell_name
from ..cells import NothingToTrace, analyse, new_cell_filename, stage_cell
from ..devices import resolve_device
from ..jaxprs import is_traceable_tree
from ..profiling import attach_report, profile, report_cell_run
from ..render.embed import prepare_viewer
from ..tracing import trace
from . import bridge, exceptions, recompiles
from .commands import COMMANDS

# Modules with ``register(shell)`` / ``unregister(shell)`` hooks, run on load/unload.
EXTENSION_MODULES = (bridge, recompiles, exceptions)


def _parse_expand(value: str) -> int | str:
    if value in ("all", "auto"):
        return value
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"--expand takes a depth (0, 1, 2, ...), 'auto' or 'all', not {value!r}") from None


def _static_names(values: list[str] | None) -> list[str]:
    return [n.strip() for v in values or [] for n in v.split(",") if n.strip()]


@magics_class
class JaxvizMagics(Magics):
    @property
    def ipython(self) -> InteractiveShell:
        """The shell these magics are registered with (``Magics.shell``, typed Optional)."""
        assert self.shell is not None
        return self.shell

    @magic_arguments()
    @argument("--static", action="append", metavar="NAMES",
              help="comma-separated names to treat as static Python values (repeatable)")
    @argument("--no-run", action="store_true", help="trace and show the graph, don't execute")
    @argument("--expand", default="auto", metavar="N|all|auto",
              help="initial expansion depth of the graph's groups (default: auto)")
    @argument("--text", action="store_true", help="show the jaxpr text only")
    @argument("-o", "--output", dest="var", metavar="VAR", help="store the Program in VAR")
    @argument("--quiet", action="store_true", help="run and bind, show only the summary line")
    @argument("--device", metavar="DEVICE",
              help="run on this device: cpu, cpu:1, gpu:0, tpu:0 (default: JAX's default device)")
    @argument("--time", action="store_true",
              help="also time the steady state: the median of --repeat more runs")
    @argument("--repeat", type=int, default=5, metavar="N", help="runs timed by --time (default: 5)")
    @argument("call", nargs="*", help="(line magic) a call expression: fn(args)")
    @line_cell_magic
    def jaxpr(self, line: str, cell: str | None = None) -> Any:
        """Trace a cell (``%%jaxpr``) or one call (``%jaxpr fn(x)``) into a jaxpr, show its
        dataflow graph, and (for cells) run it through ``jax.jit`` binding its names.
        """
        args = parse_argstring(self.jaxpr, line)
        expand = _parse_expand(args.expand)
        if cell is None:
            return self._show_call(" ".join(args.call), args, expand)
        return self._run_cell(cell, args, expand)

    # ------------------------------------------------------------------ cells
    def _run_cell(self, cell: str, args: Any, expand: int | str) -> Any:
        shell = self.ipython
        source = shell.transform_cell(cell)
        filename = new_cell_filename()
        ns = shell.user_ns
        device = _device(args)  # a missing device fails here, listing the devices there are
        try:
            staged = stage_cell(source, ns, static=_static_names(args.static), filename=filename,
                                device=device, name=_cell_prompt())
            program = staged.program
            program.expand = expand
            if program.eqn_count == 0 and not program.inputs_of_kind("traced"):
                raise NothingToTrace
            if not args.no_run:
                bindings = staged.run()
                report_cell_run(staged, repeats=max(args.repeat, 1) if args.time else 0)
        except NothingToTrace:
            bindings = staged.run() if not args.no_run else {}
            self._bind(bindings, _deleted(staged))
            print("jaxviz: nothing to draw: the cell holds no JAX operation (it ran, and its names are bound).")
            return bindings.get("__jaxviz_last__")
        except SyntaxError as exc:
            lines = errors.format_user_error(exc, filename)
            raise errors.CellSyntaxError(exc, lines) from None
        except Exception as exc:  # show it in the user's words; the namespace is untouched
            errors.attach_rendering(exc, _error_lines(exc, filename, source, ns))
            raise
        if args.var:
            ns[args.var] = program
        self._publish(program)
        self._show(program, args)
        if args.no_run:
            return None
        self._bind(bindings, _deleted(staged))
        return bindings.get("__jaxviz_last__")

    def _bind(self, bindings: dict[str, Any], deleted: AbstractSet[str] = frozenset()) -> None:
        """Bind what the cell bound, unbind what it deleted: as a plain run would."""
        ns = self.ipython.user_ns
        ns.update({k: v for k, v in bindings.items() if k != "__jaxviz_last__"})
        for name in deleted - bindings.keys():
            ns.pop(name, None)

    def _show(self, program: Any, args: Any) -> None:
        if args.text:
            print(program.summary())
            for line in program.run_section():
                print(line)
            print(program.text())
        elif args.quiet:
            print(program.summary())
        else:
            self._display(program)

    def _display(self, program: Any) -> None:
        """In a notebook, shown as soon as a frontend can draw it: dot's drawing, the static
        form a saved notebook keeps, updates the display once laid out
        (``program_mimebundles``). A terminal, and a console that does not update
        displays, show the program once (``updates_displays``)."""
        if not updates_displays(getattr(self.ipython, "kernel", None)):
            display(program)
            return
        try:
            bundles = views.render(program, "mimebundles")
            handle = display(next(bundles), raw=True, display_id=True)
            for bundle in bundles:
                if handle is not None:  # (display returns its handle where given a display_id)
                    handle.update(bundle, raw=True)
        except Exception:  # as IPython's formatters do: the drawing's error shown, the cell goes on
            self.ipython.showtraceback()

    @staticmethod
    def _publish(program: Any) -> None:
        """Tell the JupyterLab panel (if one listens); the graph is built only on request."""
        bridge.publish_program(program)

    # ------------------------------------------------------------------ one call
    def _show_call(self, expr: str, args: Any, expand: int | str) -> Any:
        if not expr.strip():
            raise ValueError("%jaxpr needs a call expression, e.g. %jaxpr f(x, 2)")
        ns = self.ipython.user_ns
        fn, call_args, call_kwargs = _eval_call(expr, ns)
        static = _static_names(args.static)
        try:
            program = trace(fn, *call_args, static_argnames=tuple(static), **call_kwargs)
        except Exception as exc:
            errors.attach_rendering(exc, errors.format_user_error(exc, None, static))
            raise
        program.expand = expand
        if args.device or args.time:  # run it too: where, and what it cost
            report = profile(fn, *call_args, device=_device(args), repeats=max(args.repeat, 1) if args.time else 0,
                             static_argnames=tuple(static), **call_kwargs)
            attach_report(program, report)
            program.timings.update(report.timings)
        if args.var:
            ns[args.var] = program
        self._publish(program)
        self._show(program, args)
        return None

    # ------------------------------------------------------------------ %jaxviz
    @line_magic
    def jaxviz(self, line: str) -> Any:
        """``%jaxviz watch [off]`` · ``%jaxviz recompiles [fn]`` · ``%jaxviz devices`` ·
        ``%jaxviz diff NAME [N]``"""
        argv = line.split()
        if not argv or argv[0] in ("help", "-h", "--help"):
            print(self.jaxviz.__doc__)
            return None
        target = COMMANDS.get(argv[0])
        if target is None:
            raise ValueError(f"unknown command {argv[0]!r}; try one of: {', '.join(COMMANDS)}")
        return target(self.ipython, argv[1:])


def _deleted(staged: Any) -> AbstractSet[str]:
    """The names the cell deletes (``del x``), unbound after the run as a plain run would."""
    return staged.analysis.deleted if staged.analysis is not None else frozenset()


def _device(args: Any) -> Any:
    """The ``--device`` asked for (None: JAX's default), or a one-screen error listing
    the devices there are."""
    if not args.device:
        return None
    return resolve_device(args.device)


def updates_displays(kernel: Any) -> bool:
    """Whether the frontend that ran the cell updates a display in place: a notebook,
    whose request names its cell (``cellId`` in its metadata: JupyterLab, Notebook 7,
    VS Code's Jupyter extension since vscode-python#13288).
    jupyter console and qtconsole name none, and ignore ``update_display_data``: they
    would keep a first step's summary only. False where ``kernel`` is None (a terminal)."""
    get_parent = getattr(kernel, "get_parent", None)  # ipykernel >= 6
    if get_parent is None:
        return False
    metadata = get_parent("shell").get("metadata") or {}
    return bool(metadata.get("cellId"))


def _eval_call(expr: str, ns: dict[str, Any]) -> tuple[Any, list[Any], dict[str, Any]]:
    """``f(x, 2, k=3)`` → (f, [x, 2], {"k": 3}), evaluated in the user's namespace."""
    tree = ast.parse(expr.strip(), mode="eval")
    call = tree.body
    if not isinstance(call, ast.Call):
        raise ValueError(f"%jaxpr expects a call like f(x, y), got: {expr.strip()}")

    def ev(node: ast.expr) -> Any:
        return eval(compile(ast.Expression(node), "<jaxpr>", "eval"), ns)

    args: list[Any] = []
    for a in call.args:
        if isinstance(a, ast.Starred):
            args.extend(ev(a.value))
        else:
            args.append(ev(a))
    kwargs: dict[str, Any] = {}
    for kw in call.keywords:
        if kw.arg is None:
            kwargs.update(ev(kw.value))
        else:
            kwargs[kw.arg] = ev(kw.value)
    return ev(call.func), args, kwargs


def _error_lines(exc: BaseException, filename: str, source: str, ns: dict[str, Any]) -> list[str]:
    """What IPython shows for a failed cell. A tracer error is explained above the
    traceback by the extension's exception hook: then only JAX's own message follows."""
    if errors.is_tracer_error(exc) and errors.explain(exc) is not None:
        message = (str(exc).strip().splitlines() or [""])[0]
        return [f"{type(exc).__name__}: {message}",
                "(explained above; your namespace is unchanged; %tb shows the full traceback)"]
    return errors.format_user_error(exc, filename, _traced_names(source, ns))


def _traced_names(source: str, ns: dict[str, Any]) -> list[str]:
    """Cell names that would be traced: for hints when tracing failed."""
    try:
        names = analyse(source, "<cell>").loaded
    except SyntaxError:
        return []
    return [n for n in names if n in ns and is_traceable_tree(ns[n])]


def load_ipython_extension(shell: Any) -> None:
    shell.register_magics(JaxvizMagics)
    prepare_viewer()
    for mod in EXTENSION_MODULES:
        mod.register(shell)


def unload_ipython_extension(shell: Any) -> None:
    for mod in reversed(EXTENSION_MODULES):
        mod.unregister(shell)
    # IPython has no public "unregister magics"; drop ours from the registry.
    for kind in ("line", "cell"):
        table = shell.magics_manager.magics[kind]
        for name in ("jaxpr", "jaxviz"):
            table.pop(name, None)


def _cell_prompt() -> str:
    """``In[5]``: the prompt of the notebook cell running this magic (IPython names the
    file it compiled the cell into after it), or "cell" outside a numbered cell."""
    frame = sys._getframe(1)
    while frame is not None:
        name = ipython_cell_name(frame.f_code.co_filename)
        if name is not None:
            return name
        frame = frame.f_back
    return "cell"
