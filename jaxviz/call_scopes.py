"""User call structure while JAX traces: a ``jax.named_scope`` per call of a user function.

Every equation JAX records then carries the call it came from in its name stack, so 12
calls of ``block`` become 12 groups, and the forward (``jvp``) and backward (``transpose``)
passes of ``grad`` stay apart. Scopes are named ``jv<activation>:<function>``.

Two ways to open them, giving the same scopes:

* ``CodeScopes`` (the default). For the duration of the trace, the user functions that
  can run get a copy of their code with the body wrapped in ``with __jaxviz_call__():``.
  The copy is compiled from the function's own source, and used only when compiling that
  unchanged source reproduces the function's code exactly, so what runs is what the user
  wrote. No interpreter hook is set, so JAX traces at full speed.
* ``HookScopes``: a ``sys.settrace`` hook that sees every Python call. Simple and
  complete, but on CPython 3.11 a set hook takes the interpreter off its specialised fast
  path, which makes tracing a big model about twice as slow.

``recorders()`` yields the first, then the second: after a trace, ``complete()`` checks
every user frame in every equation's traceback; if a user function ran without a scope
(its source was unavailable or had changed since it was compiled), the trace is taken
again with the hook.
"""

from __future__ import annotations
import __future__

import ast
import builtins
import contextlib
import functools
import inspect
import itertools
import linecache
import operator
import os
import re
import sys
import threading
import types
import weakref
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np

from . import _jax_internals as internals
from .code_paths import PACKAGE_DIR, installed_package, is_user_file
from .graph import SourceLoc

_ANONYMOUS = frozenset({"<lambda>", "<listcomp>", "<dictcomp>", "<setcomp>", "<genexpr>", "<module>"})
SCOPE_PREFIX = "jv"  # our activation scopes are named "jv<id>:<function>"
HOOK_NAME = "__jaxviz_call__"  # the builtin an instrumented function body calls
CELL_FUNCTION = "__jaxviz_cell__"  # the function a %%jaxpr cell is compiled into (jaxviz.cells)
MODE_ENV = "JAXVIZ_CALL_SCOPES"  # "hook" forces the settrace recorder (tests, debugging)
_GENERATOR_FLAGS = (inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ITERABLE_COROUTINE
                    | inspect.CO_ASYNC_GENERATOR)
# The compiler flags ``from __future__ import ...`` sets: a recompile must use the same.
_FUTURE_FLAGS = functools.reduce(
    operator.or_, (getattr(__future__, name).compiler_flag for name in __future__.all_feature_names), 0)


@dataclass(slots=True)
class CallInfo:
    function: str
    defined: SourceLoc | None
    call_site: SourceLoc | None
    # JAX called it to trace it (``jax.checkpoint``'s body, a scan's step): JAX may cache
    # that trace and replay its equations for later calls, under this one activation.
    traced_by_jax: bool = False
    # The transformations JAX called it for, outermost first (``("vmap", "grad")`` for
    # ``jax.vmap(jax.grad(loss))``, ``("jacfwd", "jacrev")`` for ``jax.hessian(loss)``).
    transformations: tuple[str, ...] = ()
    # JAX's differentiation API made the call (``jax.grad(loss)(params)``'s ``loss``):
    # a pass starts at it.
    differentiated: bool = False
    # The function that made the call (its file and first line): the user's function, or
    # the one JAX or a library was called from.
    caller: tuple[str, int] | None = None

    @property
    def jacobian(self) -> str | None:
        """The Jacobian JAX called it for (``"hessian"`` for ``jax.hessian(loss)``), if any."""
        jacobians = [t for t in self.transformations if t in ("jacfwd", "jacrev")]
        if not jacobians:
            return None
        return "hessian" if jacobians == ["jacfwd", "jacrev"] else jacobians[0]


def make_source(file: str, line: int, function: str, cell_file: str | None) -> SourceLoc:
    text = linecache.getline(file, line).strip() or None
    return SourceLoc(file, line, display_function(function), line if file == cell_file else None, text,
                     ipython_cell_name(file))


@functools.lru_cache(maxsize=1024)
def ipython_cell_name(file: str) -> str | None:
    """``In[5]`` for a file IPython compiled a notebook cell into, else None."""
    if not (file.startswith("<ipython-input-") or "ipykernel_" in file):
        return None
    ipython = sys.modules.get("IPython")  # the shell that compiled the cell imported it
    try:
        shell = ipython.get_ipython() if ipython is not None else None
        named = shell.compile.format_code_name(file) if shell is not None else None
    except Exception:  # no shell, or an IPython without the method
        named = None
    if named:
        return named[1]
    m = re.match(r"<ipython-input-(\d+)-", file)
    return f"In[{m.group(1)}]" if m else None


# Activation numbers are unique in the process, and every recorded call is remembered for a
# while: a jitted callee JAX cached during an earlier jaxviz trace carries that trace's
# scopes, which still name the right calls (see ``fresh_jax_traces``).
_activations = itertools.count(1)
_known_calls: dict[str, CallInfo] = {}
# The user's code objects that ran in jaxviz's traces (their own, not twins); a function
# the user defines again drops out with its old code.
_ran: weakref.WeakSet[Any] = weakref.WeakSet()
_KNOWN_CALLS_MAX = 50_000


def ran_while_traced(code: Any) -> bool:
    """Whether the user's ``code`` ran in a trace of jaxviz's, this one or an earlier one
    (whose cached trace JAX may reuse in this one)."""
    return code in _ran


def known_call(scope: str) -> CallInfo | None:
    """The call a scope name stands for, from this trace or an earlier one."""
    return _known_calls.get(scope)


def activation_number(scope: str) -> int | None:
    """``17`` for ``"jv17:block"`` (call order, unique in the process), else None."""
    head, sep, _ = scope.partition(":")
    if sep and head.startswith(SCOPE_PREFIX) and head[len(SCOPE_PREFIX):].isdigit():
        return int(head[len(SCOPE_PREFIX):])
    return None


@functools.lru_cache(maxsize=4096)
def call_name(code: Any) -> str:
    """What a call group is called: the function's name; for a method, its class's
    (``Block`` for ``Block.__call__``, a Flax or Equinox module) or ``Class.method``."""
    if not is_method(code):
        return code.co_name
    owner = getattr(code, "co_qualname", code.co_name).split(".")[-2]
    return owner if code.co_name == "__call__" else f"{owner}.{code.co_name}"


def is_method(code: Any) -> bool:
    """Whether ``code`` is a method's (``Block.__call__``), not a function's or a closure's."""
    parts = getattr(code, "co_qualname", code.co_name).split(".")
    return len(parts) > 1 and parts[-2] != "<locals>"


def _closure_made_by(code: Any) -> tuple[str, str] | None:
    """(the module-level function that made it, its own name) for the code of a closure
    (``("Dense", "apply_fun")`` for ``Dense.<locals>.apply_fun``); None for other code."""
    maker, sep, inner = getattr(code, "co_qualname", code.co_name).rpartition(".<locals>.")
    return (maker, inner) if sep and maker.isidentifier() else None


# Names a closure gets when it stands for what its maker builds: stax's layers
# (``Dense(8)`` returns ``apply_fun``), decorators' wrappers.
GENERIC_CLOSURES = frozenset({"apply_fun", "init_fun", "apply_fn", "init_fn", "wrapper", "wrapped",
                              "inner", "decorated", "fn", "fun", "func", "f", "_fn", "_f"})


def display_function(qualname: str) -> str:
    """A function's qualified name as shown: a generic closure (``Dense.<locals>.apply_fun``)
    as its maker (``Dense``)."""
    outer, sep, inner = qualname.rpartition(".<locals>.")
    if sep and inner in GENERIC_CLOSURES:
        return outer
    return qualname


def shown_name(code: Any) -> str:
    """A code object's function name as shown: ``serial`` for ``serial.<locals>.apply_fun``."""
    return factory_name(code) or code.co_name


def factory_name(code: Any) -> str | None:
    """``GraphConvolution`` for ``GraphConvolution.<locals>.apply_fun``: the function that
    made a generically named closure (see ``GENERIC_CLOSURES``), else None. Called after
    its maker returned, such a closure is a layer built by a combinator and is named after
    the maker; called while the maker runs, it keeps its own name."""
    if code.co_name not in GENERIC_CLOSURES:
        return None
    qualname = getattr(code, "co_qualname", code.co_name)
    outer, sep, _ = qualname.rpartition(".<locals>.")
    if not sep:
        return None
    return outer.rpartition(".")[2] or None


# Packages whose frames are JAX's machinery or plumbing, never a library call shown.
MACHINERY_PACKAGES = frozenset({"jax", "jaxlib", "jaxviz", "numpy", "ml_dtypes", "opt_einsum", "scipy",
                                "typing_extensions", "chex", "jaxtyping", "typeguard", "treescope"})
# Functions that only pass a call on (decorators' wrappers, comprehension frames).
PLUMBING_FUNCTIONS = GENERIC_CLOSURES | _ANONYMOUS | {"__call__"}


def is_plumbing_name(name: str) -> bool:
    """Whether a function so named only passes a call on (``wrapper``, ``fn_wrapper``,
    ``<lambda>``): not a name to show for what it runs."""
    return name in PLUMBING_FUNCTIONS or "wrap" in name


@functools.lru_cache(maxsize=8192)
def library_call_name(code: Any) -> str | None:
    """What a call of an installed library's function is shown as, or None for a frame
    that is not one (JAX's own machinery, the standard library, a private helper or a
    wrapper, which only pass the call on): ``mctx.gumbel_muzero_policy`` for a function,
    ``HMC.sample`` for a method, ``Linear`` for a module's ``__call__``,
    ``optax.scale_by_adam.update_fn`` for a closure a factory returned."""
    package = installed_package(code.co_filename)
    if package == "jax":
        return jax_library_function(code) or _combinator_layer(code)
    if package is None or package in MACHINERY_PACKAGES:
        return None
    parts = [p for p in getattr(code, "co_qualname", code.co_name).split(".") if p != "<locals>"]
    if parts[-1] == "__call__":
        if _BOUND_METHOD_NAMES <= set(code.co_names):
            return None  # a bound method's object (equinox's ``BoundMethod``) passes the call on
        if _wraps_itself(code, parts[:-1]):
            return None  # an object made a wrapper of a function (NNX's ``ScanFn``) passes it on
        parts.pop()
    elif is_plumbing_name(parts[-1]):
        return None
    if not parts or "wrap" in parts[-1]:
        return None
    # a factory's inner wrapper only encloses the function (optax.inject_hyperparams's
    # ``wrapped_transform`` › ``update_fn``): the function is what was called
    parts = [p for p in parts[:-1] if "wrap" not in p] + parts[-1:]
    if any(p.startswith("_") or p in _ANONYMOUS for p in parts):
        return None
    if len(parts) > 1 and parts[-1].endswith("_fn"):  # optax's ``adam(...).update_fn``
        parts[-1] = parts[-1].removesuffix("_fn")
    if parts[0][:1].isupper():  # a method: its class says where it comes from
        return ".".join(parts)
    return ".".join([package, *parts])


def _wraps_itself(code: Any, qualname: list[str]) -> bool:
    """Whether the class ``qualname`` of ``code``'s module makes each of its objects a
    wrapper of the function it holds (``functools.update_wrapper(self, self.f)`` in its
    ``__init__`` or ``__post_init__``)."""
    owner: Any = _module_of(code)
    for part in qualname:
        owner = inspect.getattr_static(owner, part, None) if owner is not None else None
    if not isinstance(owner, type):
        return False
    for method in ("__init__", "__post_init__"):
        made = getattr(owner.__dict__.get(method), "__code__", None)
        if made is not None and "update_wrapper" in made.co_names:
            return True
    return False


def _module_of(code: Any) -> Any:
    """The module whose file ``code`` was compiled from: looked up by the file's name as
    the module gives it, ``inspect.getmodule``'s way only where that fails (its first
    call resolves the real path of every module loaded: tens of ms)."""
    found = _MODULES_BY_FILE.get(code.co_filename)
    if found is None or sys.modules.get(found.__name__) is not found:  # unseen, or imported afresh
        _MODULES_BY_FILE.update((getattr(m, "__file__", None), m) for m in list(sys.modules.values())
                                if isinstance(m, types.ModuleType))  # as getmodule reads them
        found = _MODULES_BY_FILE.get(code.co_filename)
    return found if found is not None else inspect.getmodule(code)


_MODULES_BY_FILE: dict[str | None, Any] = {}


# A ``__call__`` that reads both calls its ``__func__`` with its ``__self__``: a bound method.
_BOUND_METHOD_NAMES = frozenset({"__func__", "__self__"})
# JAX's own libraries (numerical, and ``jax.nn``): a user's call into one is a library call like any other's.
JAX_LIBRARIES = ("jax.scipy", "jax.experimental.ode", "jax.nn")
# JAX's own combinator library: its layers are closures its factories return.
JAX_COMBINATORS = "jax.example_libraries.stax"


def _combinator_layer(code: Any) -> str | None:
    """``stax.Dense`` for ``Dense.<locals>.apply_fun`` in ``jax.example_libraries.stax``
    (``Relu`` is ``stax.elementwise``'s lambda): the layer a factory made."""
    if internals.jax_public_module(code.co_filename) != JAX_COMBINATORS:
        return None
    made = _closure_made_by(code)
    if made is None or made[1] not in GENERIC_CLOSURES | _ANONYMOUS:
        return None
    return f"{JAX_COMBINATORS.rpartition('.')[2]}.{made[0]}"


def jax_library_function(code: Any) -> str | None:
    """``jax.scipy.optimize.minimize`` for the code of a public function of JAX's own
    numerical libraries (``JAX_LIBRARIES``); None for JAX's machinery and helpers. Read
    from the modules already imported (a jitted function's ``__wrapped__``)."""
    return _jax_library_functions(_jax_libraries_loaded(len(sys.modules))).get(code)


@functools.lru_cache(maxsize=4)
def _jax_libraries_loaded(module_count: int) -> tuple[str, ...]:
    """JAX's library modules imported, read again only when a module was imported (a
    scan of ``sys.modules``, else paid for every new code object of JAX's)."""
    return tuple(name for name in sys.modules if name.startswith(JAX_LIBRARIES))


@functools.lru_cache(maxsize=4)
def _jax_library_functions(modules: tuple[str, ...]) -> dict[Any, str]:
    found: dict[Any, str] = {}
    for module_name in modules:
        module = sys.modules.get(module_name)
        # its own functions, defined there or in its implementation under ``jax._src``,
        # not those it imports (``jax.experimental.ode`` imports ``tree_map``)
        homes = (module_name, "jax._src." + module_name.removeprefix("jax."))
        for name, value in vars(module).items() if module is not None else ():
            function = inspect.unwrap(value) if callable(value) else None
            code = getattr(function, "__code__", None)
            if not name.startswith("_") and code is not None and getattr(function, "__module__", "").startswith(homes):
                found.setdefault(code, f"{module_name}.{name}")
    return found


def factory_made(code: Any) -> str | None:
    """``optax.value_and_grad_from_state`` for the code of a private closure
    (``value_and_grad_from_state.<locals>._value_and_grad``) that an installed library's
    public module-level function made: what the user called, when they call it."""
    package = installed_package(code.co_filename)
    if package is None or package in MACHINERY_PACKAGES:
        return None
    made = _closure_made_by(code)
    if made is None or not made[1].startswith("_") or made[0].startswith("_"):
        return None
    return f"{package}.{made[0]}"


# ---------------------------------------------------------------------- what the user called
_MISSING = object()


class CalledNames:
    """The library call a user's line makes, named as the user sees it: after the value it
    is called on (``NUTS.sample`` for ``kernel.sample(...)`` where ``kernel`` is a
    ``NUTS``, though ``sample`` is defined on ``HMC``), or, for a function the value holds,
    after the library function that made the value (``blackjax.window_adaptation.run``
    for ``warmup.run(...)`` where ``warmup = blackjax.window_adaptation(...)``). Read from
    the frames the user's functions ran in (kept by the recorder, until ``release``) and
    their source, each checked against the value: the function found must be the one
    that ran. Nothing of the user's is called (attributes are read statically). A layer
    its library names after the attribute that holds it (``by_attribute``: an NNX
    Module, whose calls have no name of their own) is ``linear1`` for ``self.linear1(x)``;
    where a library's own layer calls it (``layer_call``: its ``__call__``), after the
    attribute that call is written with (``self.ii(x)``: ``ii``)."""

    def __init__(self, frames: dict[Any, Any] | None = None,
                 by_attribute: Callable[[Any], bool] = lambda value: False,
                 layer_call: Callable[[Any], bool] = lambda code: False) -> None:
        self._frames = frames or {}
        self._by_attribute = by_attribute
        self._layer_call = layer_call
        self._attributes: dict[tuple[Any, int, Any], str | None] = {}
        self._names: dict[tuple[Any, int, Any], str | None] = {}
        self._held: set[tuple[Any, int, Any]] = set()  # calls named after the attribute holding the layer

    def release(self) -> None:
        """Drop the frames (and the values they hold); names found stay."""
        self._frames = {}

    def name(self, code: Any, lasti: int, callee: Any) -> str | None:
        """What the call at bytecode offset ``lasti`` of the user's ``code``, which ran the
        library's ``callee`` code, is shown as; None where the value does not say."""
        key = (code, lasti, callee)
        if key not in self._names:
            frame = self._frames.get(code)
            found = None if frame is None else _called_name(frame, lasti, callee, self._by_attribute)
            self._names[key] = found[0] if found is not None else None
            if found is not None and found[1]:
                self._held.add(key)
        return self._names[key]

    def attribute_called(self, code: Any, lasti: int, callee: Any) -> str | None:
        """``ii`` where the call at offset ``lasti`` of a library's ``code`` is
        ``self.ii(x)`` and runs the ``__call__`` (``callee``) of a layer named after its
        attribute; None otherwise. Read from the source alone: no frame of a library's
        is kept, and the callee's code says what was called."""
        key = (code, lasti, callee)
        if key not in self._attributes:
            call = call_at(code, lasti) if self._layer_call(callee) else None
            func = call.func if call is not None else None
            self._attributes[key] = None
            if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
                self._attributes[key] = func.attr
        return self._attributes[key]

    def held(self, code: Any, lasti: int, callee: Any) -> bool:
        """Whether ``name`` named that call after the attribute holding the layer: the
        model's part, like a module's scope, rather than a call at a line."""
        return (code, lasti, callee) in self._held


def _called_name(frame: Any, lasti: int, callee: Any, by_attribute: Callable[[Any], bool],
                 ) -> tuple[str, bool] | None:
    """The call's name, and whether it is the attribute holding the layer it calls."""
    call = call_at(frame.f_code, lasti)
    if call is None:
        return None
    func = call.func
    value = _static_value(func, frame)
    if isinstance(value, type):  # a class made through its metaclass: ``dist.Normal(0, 1)``
        return (_class_name(value), False) if _runs(_class_attribute(value, "__call__"), callee) else None
    if value is not _MISSING and not _is_function(value):  # a callable object: ``model(x)``
        if not _runs(_class_attribute(value, "__call__"), callee):
            return None
        if isinstance(func, ast.Attribute) and by_attribute(value):
            return func.attr, True
        return type(value).__name__, False
    if not isinstance(func, ast.Attribute):
        return None
    receiver = _static_value(func.value, frame)
    if receiver is _MISSING or inspect.ismodule(receiver) or isinstance(receiver, type):
        return None
    if _runs(_class_attribute(receiver, func.attr), callee):  # a method, maybe inherited
        return f"{type(receiver).__name__}.{func.attr}", False
    if _runs(value, callee):  # a function the value holds
        factory = _factory_of(func.value, frame, call.lineno, installed_package(callee.co_filename))
        return (f"{factory}.{func.attr}", False) if factory else None
    return None


def _class_name(cls: type) -> str:
    """A class as the user names it, after its library where it has one:
    ``numpyro.Normal`` for ``dist.Normal``, ``MyModule`` for the user's own."""
    module = sys.modules.get(cls.__module__)
    package = installed_package(getattr(module, "__file__", None) or "")
    return f"{package}.{cls.__name__}" if package else cls.__name__


def _is_function(value: Any) -> bool:
    return isinstance(value, (types.FunctionType, types.MethodType, functools.partial,
                              staticmethod, classmethod, types.BuiltinFunctionType))


def _class_attribute(value: Any, name: str) -> Any:
    return inspect.getattr_static(type(value), name, _MISSING)


def _runs(found: Any, callee: Any) -> bool:
    """Whether calling ``found`` (a function, method, partial, or one wrapped by
    ``functools.wraps``) runs the code ``callee``."""
    for _ in range(8):
        if getattr(found, "__code__", None) is callee:
            return True
        if isinstance(found, functools.partial):
            found = found.func
        elif isinstance(found, (types.MethodType, staticmethod, classmethod)):
            found = found.__func__
        elif "__wrapped__" in getattr(found, "__dict__", {}):
            found = found.__dict__["__wrapped__"]
        else:
            return False
    return False


def _static_value(node: ast.expr, frame: Any) -> Any:
    """The value of a name or attribute path (``self.kernel.sample``) in ``frame``, read
    without running any of the user's code (no property, no ``__getattr__``)."""
    if isinstance(node, ast.Name):
        for space in (frame.f_locals, frame.f_globals, frame.f_builtins):
            if node.id in space:
                return space[node.id]
        return _MISSING
    if isinstance(node, ast.Attribute):
        owner = _static_value(node.value, frame)
        if owner is _MISSING:
            return _MISSING
        fields = getattr(type(owner), "_fields", ())
        if isinstance(owner, tuple) and node.attr in fields:  # a NamedTuple's field
            return owner[fields.index(node.attr)]
        return inspect.getattr_static(owner, node.attr, _MISSING)
    return _MISSING


# The fields that hold statements: a ``def`` or an assignment is a statement, so it is
# found there alone, without walking the expressions that are most of a tree.
_STATEMENT_LISTS = ("body", "orelse", "finalbody", "handlers", "cases")


def _statements(tree: ast.AST) -> list[Any]:
    """Every statement in ``tree`` (and its ``except`` and ``case`` clauses), at any depth."""
    found: list[Any] = []
    stack: list[Any] = [tree]
    while stack:
        node = stack.pop()
        found.append(node)
        for field in _STATEMENT_LISTS:
            children = getattr(node, field, None)
            if isinstance(children, list):
                stack.extend(children)
    return found


def _factory_of(receiver: ast.expr, frame: Any, line: int, package: str | None) -> str | None:
    """``blackjax.window_adaptation`` where the only assignment of ``receiver`` in its
    scope (the running function for a local, the module's top level for a global, the
    module for an attribute such as ``self.tx``) is ``receiver = blackjax.window_adaptation(...)``,
    a function of ``package``, the library whose code ran."""
    code = frame.f_code
    source = "".join(linecache.getlines(code.co_filename))
    if isinstance(receiver, ast.Name) and receiver.id in code.co_varnames + code.co_cellvars + code.co_freevars:
        scope = "local"
    else:
        scope = "module" if isinstance(receiver, ast.Name) else "anywhere"
    made = _assignments_in(source, ast.unparse(receiver), scope, line if scope == "local" else 0)
    if len(made) != 1 or not isinstance(made[0], ast.Call):
        return None
    factory = _static_value(made[0].func, frame)
    if isinstance(factory, types.FunctionType):
        factory = inspect.unwrap(factory)
    if package is None or installed_package(getattr(getattr(factory, "__code__", None), "co_filename", "")) != package:
        return None
    return f"{package}.{factory.__name__}"


@functools.lru_cache(maxsize=256)
def _assignments_in(source: str, target: str, scope: str, line: int) -> tuple[ast.expr, ...]:
    """The values assigned to ``target`` in ``source``: in the innermost function around
    ``line`` that assigns it (``scope`` "local", a closure's variable found in the functions
    around it), at the module's top level ("module"), or anywhere ("anywhere"). Searched
    once per file and question: the walk over a module's statements is the cost."""
    tree = _parse_source(source)
    if tree is None:
        return ()

    def assignments(statements: Iterable[ast.AST]) -> list[ast.expr]:
        return [value for n in statements if isinstance(n, ast.Assign)
                for t in n.targets for value in _assigned(t, n.value, target)]

    if scope == "local":  # the function's own scope, then the functions around it
        enclosing = sorted((n for n in _statements(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                            and n.lineno <= line <= (n.end_lineno or n.lineno)), key=lambda n: -n.lineno)
        return tuple(next(filter(None, (assignments(_statements(n)) for n in enclosing)), []))
    return tuple(assignments(tree.body if scope == "module" else _statements(tree)))


def _assigned(left: ast.expr, right: ast.expr, target: str) -> list[ast.expr]:
    """What ``left = right`` assigns to ``target`` (``model, tx = Net(), optax.sgd(0.1)``
    assigns ``optax.sgd(0.1)`` to ``tx``)."""
    if ast.unparse(left) == target:
        return [right]
    if isinstance(left, (ast.Tuple, ast.List)) and isinstance(right, (ast.Tuple, ast.List)) \
            and len(left.elts) == len(right.elts):
        return [v for lhs, rhs in zip(left.elts, right.elts) for v in _assigned(lhs, rhs, target)]
    return []


# Held while a shared tree is changed (and put back): two threads tracing would otherwise
# wrap a body twice, and could put back the other's change.
_SHARED_TREES = threading.Lock()


@functools.lru_cache(maxsize=64)
def _parse_source(source: str) -> ast.Module | None:
    """A file's tree, parsed once: the instrumenting (which puts back what it changes)
    and the lookups of library closures' factories share it."""
    try:
        return ast.parse(source) if source else None
    except SyntaxError:
        return None


@functools.lru_cache(maxsize=1024)
def _positions(code: Any) -> list[tuple[Any, ...]]:
    return list(code.co_positions()) if hasattr(code, "co_positions") else []


@functools.lru_cache(maxsize=4096)  # a graph asks per library call, each trace anew
def call_at(code: Any, lasti: int) -> ast.Call | None:
    """The call expression the instruction at byte offset ``lasti`` of ``code`` runs,
    parsed from its source span (``co_positions``), or None. Shared: read-only."""
    positions = _positions(code)
    if not 0 <= lasti // 2 < len(positions):
        return None
    line, end_line, col, end_col = positions[lasti // 2]
    if None in (line, end_line, col, end_col):
        return None
    lines = [text.encode() for text in linecache.getlines(code.co_filename)[line - 1:end_line]]
    if len(lines) != end_line - line + 1:
        return None
    lines[-1] = lines[-1][:end_col]
    lines[0] = lines[0][col:]
    try:  # columns are UTF-8 byte offsets
        tree = ast.parse("(" + b"".join(lines).decode() + "\n)", mode="eval")
    except (SyntaxError, UnicodeDecodeError):
        return None
    ast.increment_lineno(tree, line - 1)  # lines as in the file
    return tree.body if isinstance(tree.body, ast.Call) else None


@functools.lru_cache(maxsize=4096)  # parsing the call's source is most of it; a graph asks per box
def called_function_text(code: Any, lasti: int) -> str | None:
    """The dotted name of the function the call at byte offset ``lasti`` of ``code``
    calls, as the user wrote it: ``jax.lax.map`` for ``jax.lax.map(step, xs).sum()``,
    ``jax.vmap`` for ``jax.vmap(f)(x)``; None for a call of anything else (a subscript, a
    call's result attribute)."""
    call = call_at(code, lasti)
    func = call.func if call is not None else None
    while isinstance(func, ast.Call):  # jax.vmap(f)(x): the function transformed is called
        func = func.func
    parts: list[str] = []
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if not isinstance(func, ast.Name):
        return None
    return ".".join([func.id, *reversed(parts)])


def _running_code(code: Any, frame: Any) -> bool:
    while frame is not None:
        if frame.f_code is code:
            return True
        frame = frame.f_back
    return False


def _running(function: str, frame: Any) -> bool:
    caller = frame.f_back
    while caller is not None:
        if caller.f_code.co_name == function:
            return True
        caller = caller.f_back
    return False


class _Recorder:
    """What both recorders share: the activations recorded so far."""

    mode = ""

    def __init__(self, skip: Iterable[Any] = (), cell_file: str | None = None) -> None:
        self.calls: dict[str, CallInfo] = {}
        self._skip = set(skip)  # code objects of the traced entry point itself
        self._cell_file = cell_file
        self._user_code: dict[Any, bool] = {}
        # The latest frame of each user function that ran (its locals read the values it
        # called library functions on); handed over to a ``CalledNames`` after the trace.
        # Not kept where JAX checks for leaked tracers: a kept frame holds its tracers.
        self.frames: dict[Any, Any] = {}
        self._keep_frames = not getattr(jax.config, "jax_check_tracer_leaks", False)  # a public flag, read as set now

    def _is_user(self, code: Any) -> bool:
        user = self._user_code.get(code)
        if user is None:
            user = self._user_code[code] = (
                code.co_name not in _ANONYMOUS and is_user_file(code.co_filename)
                and code not in self._skip
            )
        return user

    def _record(self, frame: Any) -> str:
        """Name the activation of ``frame`` and remember where it was defined and called."""
        code = frame.f_code
        if self._keep_frames:
            self.frames[code] = frame
        _ran.add(original_code(code))
        name = call_name(code)
        factory = factory_name(code)
        if factory is not None and not _running(factory, frame):
            name = factory
        key = f"{SCOPE_PREFIX}{next(_activations)}:{name}"
        caller = frame.f_back
        traced_by_jax = differentiated = False
        transformations: list[str] = []  # innermost first
        while caller is not None and not is_user_file(caller.f_code.co_filename):
            traced_by_jax = traced_by_jax or internals.is_jax_file(caller.f_code.co_filename)
            differentiated = differentiated or traced_by_jax and internals.is_differentiation_entry(caller.f_code)
            api = internals.transformation_api(caller.f_code) if traced_by_jax else None
            if api is not None and (not transformations or transformations[-1] != api):
                transformations.append(api)
            caller = caller.f_back  # e.g. lax.scan calling the body: show the user's line
        info = CallInfo(
            name,
            make_source(code.co_filename, code.co_firstlineno, code.co_name, self._cell_file),
            make_source(caller.f_code.co_filename, caller.f_lineno, shown_name(caller.f_code), self._cell_file)
            if caller is not None else None,
            traced_by_jax,
            tuple(reversed(transformations)),
            differentiated,
            (caller.f_code.co_filename, caller.f_code.co_firstlineno) if caller is not None else None,
        )
        self.calls[key] = _known_calls[key] = info
        if len(_known_calls) > _KNOWN_CALLS_MAX:
            del _known_calls[next(iter(_known_calls))]  # the oldest
        return key

    def complete(self, closed: Any, frame_codes: Iterable[Any] | None = None) -> bool:
        """Whether every user function that recorded equations of ``closed`` ran inside a
        scope of its own. ``frame_codes``: the code objects of its equations' traceback
        frames, where the caller read them already: all of them
        (``internals.traceback_frame_codes``), or those from each innermost user frame
        outward (the graph builder's)."""
        return True

    def reused(self, closed: Any) -> list[str]:
        """Names of user functions whose cached trace JAX reused (their calls unrecorded)."""
        return []

    def records(self, code: Any) -> bool:
        """Whether a call of the user's ``code`` is recorded (``ran_while_traced``) when it runs."""
        return False


# ---------------------------------------------------------------------- settrace recorder
class HookScopes(_Recorder):
    """Opens a scope per user-function call with ``sys.settrace`` (this thread only).

    The global hook runs once per Python call and returns at once for library code; user
    frames get a local hook for their ``return`` only (line events off). When a debugger or
    coverage tool already traces, ``sys.setprofile`` is used instead so as not to displace it.
    """

    mode = "hook"

    def __init__(self, skip: Iterable[Any] = (), cell_file: str | None = None,
                 transparent: Iterable[Any] = ()) -> None:
        """``skip``: the traced entry (a call of it inside itself is still a call);
        ``transparent``: ``functools.wraps`` wrappers, never a call of their own."""
        super().__init__([*skip, *transparent], cell_file)
        self._entry = frozenset(skip)
        self._open: list[tuple[Any, Any]] = []
        self._uses_profile = False
        self._previous: Any = None

    def __enter__(self) -> HookScopes:
        self._uses_profile = sys.gettrace() is not None
        if self._uses_profile:
            self._previous = sys.getprofile()
            sys.setprofile(self._profile_hook)
        else:
            sys.settrace(self._make_trace_hook())
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._uses_profile:
            sys.setprofile(self._previous)
        else:
            sys.settrace(None)
        while self._open:  # only on errors: close what the unwinding did not
            self._open.pop()[1].__exit__(None, None, None)

    def _make_trace_hook(self) -> Callable[..., Any]:
        # This runs on every Python call JAX makes while tracing: keep it to one dict
        # lookup for library code.
        known = self._user_code.get
        is_user = self._is_user
        open_scope = self._open_scope
        local_hook = self._local_hook
        entry = self._entry

        def hook(frame: Any, event: str, arg: Any) -> Any:
            code = frame.f_code
            user = known(code)
            if user is False or (user is None and not is_user(code)):
                if code not in entry or not _running_code(code, frame.f_back):
                    return None
            open_scope(frame)
            frame.f_trace_lines = False
            return local_hook

        return hook

    def records(self, code: Any) -> bool:
        return self._is_user(code)

    def _local_hook(self, frame: Any, event: str, arg: Any) -> Any:
        if event == "return" and self._open and self._open[-1][0] is frame:
            self._open.pop()[1].__exit__(None, None, None)
        return self._local_hook

    def _profile_hook(self, frame: Any, event: str, arg: Any) -> None:
        if event == "call":
            code = frame.f_code
            if self._is_user(code) or (code in self._entry and _running_code(code, frame.f_back)):
                self._open_scope(frame)
        elif event == "return" and self._open and self._open[-1][0] is frame:
            self._open.pop()[1].__exit__(None, None, None)

    def _open_scope(self, frame: Any) -> None:
        scope = jax.named_scope(self._record(frame))
        scope.__enter__()
        self._open.append((frame, scope))


# ---------------------------------------------------------------------- code recorder
_active = threading.local()  # .recorder: the CodeScopes tracing on this thread
_NO_SCOPE = contextlib.nullcontext()


def _enter_call() -> Any:
    """What an instrumented body enters: a scope while a trace records on this thread, else
    nothing (an instrumented closure may outlive the trace that created it)."""
    recorder = getattr(_active, "recorder", None)
    if recorder is None:
        return _NO_SCOPE
    return recorder.scope_for(sys._getframe(1))


def install() -> None:
    """JAX hides jaxviz's frames like its own, and instrumented code finds its hook (a
    builtin: a twin's globals stay the user's). Idempotent; ``jaxviz.wiring`` calls it."""
    if getattr(builtins, HOOK_NAME, None) is _enter_call:
        return
    internals.register_library_path(PACKAGE_DIR)
    setattr(builtins, HOOK_NAME, _enter_call)


def is_instrumented(code: Any) -> bool:
    return HOOK_NAME in code.co_names


def _function_defs(tree: ast.AST) -> list[ast.FunctionDef]:
    """Every ``def`` in ``tree`` (not ``async def``, nor a lambda)."""
    return [node for node in _statements(tree) if isinstance(node, ast.FunctionDef)]


def _generator_starts(plain_codes: dict[tuple[str, int], list[Any]]) -> set[tuple[str, int]]:
    """(name, first line) of the generators among ``plain_codes`` (``_codes_by_key``'s; a
    function's first line is its first decorator's, as ``co_firstlineno`` says)."""
    return {(code.co_name, code.co_firstlineno) for codes in plain_codes.values()
            for code in codes if code.co_flags & _GENERATOR_FLAGS}


def _instrumented_body(node: ast.FunctionDef) -> list[ast.stmt] | None:
    """``node``'s body wrapped in ``with __jaxviz_call__():``, its docstring kept first and
    each statement its own position; None for a body of a docstring alone."""
    body = node.body
    doc = body[:1] if (body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                       and isinstance(body[0].value.value, str)) else []
    rest = body[len(doc):]
    if not rest:
        return None
    position: dict[str, Any] = {"lineno": node.lineno, "col_offset": node.col_offset,
                                "end_lineno": node.lineno, "end_col_offset": node.col_offset + 3}
    call = ast.Call(ast.Name(HOOK_NAME, ast.Load(), **position), [], [], **position)
    return doc + [ast.With([ast.withitem(call)], rest, **position)]


@contextlib.contextmanager
def _instrumented_tree(tree: ast.Module, plain_codes: dict[tuple[str, int], list[Any]]) -> Iterator[ast.Module]:
    """``tree`` with every function it defines instrumented (generators excepted: a scope
    must not stay open across a ``yield``), while the block runs; as it was after.
    ``plain_codes``: the functions of ``tree`` compiled as written (``_codes_by_key``),
    which tell the generators."""
    generators = _generator_starts(plain_codes)
    written: list[tuple[ast.FunctionDef, list[ast.stmt]]] = []
    for node in _function_defs(tree):
        start = node.decorator_list[0].lineno if node.decorator_list else node.lineno
        body = None if (node.name, start) in generators else _instrumented_body(node)
        if body is not None:
            written.append((node, node.body))
            node.body = body
    try:
        yield tree
    finally:
        for node, body in written:
            node.body = body


def compile_instrumented(module: ast.Module, filename: str) -> Any:
    """Compile a module we built (a ``%%jaxpr`` cell) with its functions instrumented,
    remembering each function's plain code for ``restore_plain_code``."""
    plain_codes = _codes_by_key(compile(module, filename, "exec"), {})
    with _instrumented_tree(module, plain_codes):
        code = compile(module, filename, "exec")
    for key, twins in _codes_by_key(code, {}).items():
        for twin, original in zip(twins, plain_codes.get(key, ())):
            if is_instrumented(twin) and twin.co_freevars == original.co_freevars:
                _originals[twin] = original
    return code


def restore_plain_code(value: Any) -> Any:
    """A function (or a class's methods) made from instrumented code while tracing a cell
    gets the code a plain run would have given it, before the cell binds it: it must not
    need jaxviz to run (pickled to a worker, say). Returns ``value``."""
    functions = [value] if isinstance(value, types.FunctionType) else []
    if isinstance(value, type):
        for attr in vars(value).values():
            attr = getattr(attr, "__func__", None) or getattr(attr, "fget", None) or attr
            if isinstance(attr, types.FunctionType):
                functions.append(attr)
    for fn in functions:
        original = _originals.get(fn.__code__)
        if original is not None:
            fn.__code__ = original
    return value


def _code_key(code: Any) -> tuple[str, int]:
    return getattr(code, "co_qualname", code.co_name), code.co_firstlineno


def _codes_by_key(code: Any, out: dict[tuple[str, int], list[Any]]) -> dict[tuple[str, int], list[Any]]:
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            out.setdefault(_code_key(const), []).append(const)
            _codes_by_key(const, out)
    return out


@functools.lru_cache(maxsize=64)
def _compile_both(filename: str, source: str, flags: int) -> tuple[dict, dict] | None:
    """The file's functions compiled as written and instrumented, by (qualname, line)."""
    try:
        plain = compile(source, filename, "exec", flags=flags, dont_inherit=True)
    except (SyntaxError, ValueError):  # e.g. a cell with top-level await
        return None
    tree = _parse_source(source)
    if tree is None:
        return None
    plain_codes = _codes_by_key(plain, {})
    with _SHARED_TREES, _instrumented_tree(tree, plain_codes):
        instrumented = compile(tree, filename, "exec", flags=flags, dont_inherit=True)
    return plain_codes, _codes_by_key(instrumented, {})


_instrumented: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
_originals: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
_NOT_POSSIBLE = object()


def original_code(code: Any) -> Any:
    """The user's own code for a twin that is running now (a function's identity, e.g. in
    the recompilation tracker, must not change while jaxviz traces it)."""
    return _originals.get(code, code)


def instrumented_code(code: Any) -> Any | None:
    """The instrumented twin of a user function's code, or None when there is none we can
    trust (no source, source changed since, a generator, ...). Cached per code object."""
    cached = _instrumented.get(code, None)
    if cached is None:
        cached = _instrumented[code] = _make_instrumented(code) or _NOT_POSSIBLE
        if cached is not _NOT_POSSIBLE:
            _originals[cached] = code
    return None if cached is _NOT_POSSIBLE else cached


def _make_instrumented(code: Any) -> Any | None:
    if code.co_flags & _GENERATOR_FLAGS or is_instrumented(code):
        return None
    lines = linecache.getlines(code.co_filename)
    if not lines:
        return None
    compiled = _compile_both(code.co_filename, "".join(lines), code.co_flags & _FUTURE_FLAGS)
    if compiled is None:
        return None
    plain, instrumented = compiled
    key = _code_key(code)
    for twin, candidate in zip(instrumented.get(key, ()), plain.get(key, ())):
        if candidate == code and twin.co_freevars == code.co_freevars and is_instrumented(twin):
            return twin
    return None


_LEAVES = (str, bytes, int, float, complex, bool, type(None), jax.Array, np.ndarray, np.generic)


def user_functions(roots: Iterable[Any], limit: int = 20_000) -> list[types.FunctionType]:
    """User functions reachable from ``roots``: through globals a function names, closures,
    defaults, wrappers (``__wrapped__``, partials, bound methods), user classes and their
    instances, user modules and containers. What this misses, ``complete()`` catches."""
    found: list[types.FunctionType] = []
    seen: set[int] = set()
    todo = list(roots)
    while todo and len(seen) < limit:
        obj = todo.pop()
        if id(obj) in seen or issubclass(type(obj), _LEAVES):
            continue
        seen.add(id(obj))
        try:
            todo.extend(_references(obj, found))
        except Exception:  # a __getattr__ that raises, a proxy: nothing to follow there
            continue
    return found


def _references(obj: Any, found: list[types.FunctionType]) -> Iterable[Any]:
    # Told by the object's own type, not ``isinstance``, which asks the object for its
    # ``__class__``: a framework's module (Equinox's) answers that in Python, and a
    # proxy may answer what it is not.
    cls = type(obj)
    if issubclass(cls, types.FunctionType):
        code = obj.__code__
        user = is_user_file(code.co_filename)
        if user:
            found.append(obj)
        refs: list[Any] = [c.cell_contents for c in obj.__closure__ or () if is_filled(c)]
        refs += list(obj.__defaults__ or ()) + list((obj.__kwdefaults__ or {}).values())
        if hasattr(obj, "__wrapped__"):
            refs.append(obj.__wrapped__)
        if user:
            g = obj.__globals__
            refs += [g[n] for n in global_names(code) if n in g]
        return refs
    if issubclass(cls, types.MethodType):
        return [obj.__func__, obj.__self__]
    if issubclass(cls, functools.partial):
        return [obj.func, *obj.args, *obj.keywords.values()]
    if issubclass(cls, (staticmethod, classmethod)):
        return [obj.__func__]
    if issubclass(cls, property):
        return [obj.fget, obj.fset]
    if issubclass(cls, types.ModuleType):
        file = getattr(obj, "__file__", None) or ""
        return list(vars(obj).values()) if file and is_user_file(file) else []
    if issubclass(cls, type):
        file = getattr(sys.modules.get(obj.__module__), "__file__", None)
        user = is_user_file(file) if file else obj.__module__ == "__main__"
        return [*vars(obj).values(), *obj.__bases__] if user else []
    if issubclass(cls, dict):
        return list(obj.values())[:1000]
    if issubclass(cls, (list, tuple, set, frozenset)):
        return list(obj)[:1000]
    refs = [cls]
    if hasattr(obj, "__wrapped__"):
        refs.append(obj.__wrapped__)
    attrs = getattr(obj, "__dict__", None)
    if isinstance(attrs, dict):
        refs += list(attrs.values())[:200]
    return refs


def is_filled(cell: Any) -> bool:
    try:
        cell.cell_contents  # noqa: B018 (reading it is the test)
    except ValueError:  # an empty cell (a name not yet bound)
        return False
    return True


@functools.lru_cache(maxsize=4096)
def global_names(code: Any) -> tuple[str, ...]:
    """Names ``code`` and the code of functions defined inside it look up (globals,
    attributes), in the order the code names them: the same on every run, whatever the
    process's hash seed."""
    names = dict.fromkeys(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names.update(dict.fromkeys(global_names(const)))
    return tuple(names)


class CodeScopes(_Recorder):
    """Opens a scope per user-function call through instrumented code (see the module
    docstring). Swaps code in on entry and back on exit; this thread only."""

    mode = "code"

    def __init__(self, roots: Iterable[Any] = (), skip: Iterable[Any] = (), cell_file: str | None = None) -> None:
        super().__init__(skip, cell_file)
        self._roots = list(roots)
        self._swapped: list[tuple[types.FunctionType, Any]] = []
        self._twinned: set[Any] = set()  # the own code of every function swapped for its twin

    def __enter__(self) -> CodeScopes:
        for code in list(self._skip):  # the entry point runs instrumented too: skip its twin
            twin = instrumented_code(code)
            if twin is not None:
                self._skip.add(twin)
        for fn in user_functions(self._roots):
            if hasattr(fn, "__wrapped__"):  # a functools.wraps wrapper: the wrapped one is the call
                self._skip.add(fn.__code__)
                continue
            twin = instrumented_code(fn.__code__) if _plain_builtins(fn) else None
            if twin is not None:
                self._swapped.append((fn, fn.__code__))
                self._twinned.add(fn.__code__)
                fn.__code__ = twin
        self._previous = getattr(_active, "recorder", None)
        _active.recorder = self
        return self

    def __exit__(self, *exc: Any) -> None:
        _active.recorder = self._previous
        for fn, code in reversed(self._swapped):
            fn.__code__ = code
        self._swapped.clear()

    def scope_for(self, frame: Any) -> Any:
        if frame.f_code in self._skip and not _running_code(frame.f_code, frame.f_back):
            if self._keep_frames:
                self.frames[frame.f_code] = frame
            _ran.add(original_code(frame.f_code))
            return _NO_SCOPE  # the traced entry itself; a call of it inside (serial in serial) is a call
        return jax.named_scope(self._record(frame))

    def complete(self, closed: Any, frame_codes: Iterable[Any] | None = None) -> bool:
        return not self.unscoped(closed, frame_codes)

    def records(self, code: Any) -> bool:
        return code in self._twinned

    def reused(self, closed: Any) -> list[str]:
        """Names of the user functions whose trace JAX reused from its cache (a jitted
        callee the user ran before): their inner calls were not recorded. Only a JAX
        without user contexts does that (``reuses_user_traces``)."""
        if not reuses_user_traces():
            return []
        outer_codes: list[Any] = []
        inner_codes: set[Any] = set()
        for users, cached in self._user_stacks(closed):
            if cached:
                outer_codes.append(users[-1])
                inner_codes.update(users[:-1])
        # A reused trace comes in as a jit equation named after the function; functions
        # called inside it (a loss under value_and_grad, on stacks of their own) are part
        # of it, not other reused traces.
        jitted = _jit_names(closed)
        return list(dict.fromkeys(c.co_name for c in outer_codes
                                  if c not in inner_codes and c.co_name in jitted))

    def unscoped(self, closed: Any, frame_codes: Iterable[Any] | None = None) -> set[Any]:
        """Code of user functions that recorded equations outside a scope of their own
        (stacks from a trace JAX had cached before this one are not ours to check).
        ``frame_codes``: as ``complete`` takes them."""
        if frame_codes is None:
            frame_codes = internals.traceback_frame_codes(closed)
        if not any(map(self._missable, frame_codes)):
            return set()  # every user function on the stacks ran with a scope or is skipped
        missed: set[Any] = set()
        for users, cached in self._user_stacks(closed):
            if not cached:
                missed.update(c for c in users if c not in self._skip and not is_instrumented(c)
                              and not c.co_flags & _GENERATOR_FLAGS)
        return missed

    def _missable(self, code: Any) -> bool:
        """Whether ``code`` is a user function that records no scope of its own (what
        ``unscoped`` reports where its stack is not a cached trace's)."""
        return (self._is_user(code) and code not in self._skip
                and not is_instrumented(code) and not code.co_flags & _GENERATOR_FLAGS)

    def _user_stacks(self, closed: Any) -> Iterator[tuple[list[Any], bool]]:
        """Per distinct equation stack of ``closed``: its user functions (innermost
        first), and whether it comes from a trace JAX had cached.

        JAX keeps, per equation, the Python stack from the function being traced (this
        trace's entry, or a jitted callee, a scan body ...) inward. A stack whose outermost
        user function could have been instrumented but was not comes from a trace JAX had
        cached before this one (a jitted callee the user ran already)."""
        member: dict[int, tuple[Any, bool]] = {}  # id(code) → (code, a user frame here)
        cached: dict[int, tuple[Any, bool]] = {}  # id(outer code) → (code, from a cached trace)
        for codes in internals.traceback_code_stacks(closed):
            users = []
            for c in codes:  # by identity: a code object hashes its bytecode, every time
                known = member.get(id(c))
                if known is None or known[0] is not c:
                    known = member[id(c)] = (c, self._is_user(c) or c in self._skip)
                if known[1]:
                    users.append(c)
            if users:
                outer = users[-1]
                found = cached.get(id(outer))
                if found is None or found[0] is not outer:
                    found = cached[id(outer)] = (outer, outer not in self._skip and not is_instrumented(outer)
                                                 and instrumented_code(outer) is not None)
                yield users, found[1]


def _plain_builtins(fn: types.FunctionType) -> bool:
    """Instrumented code finds ``__jaxviz_call__`` among the builtins: only swap it into a
    function that uses the real ones (not an ``exec`` with a builtins dict of its own)."""
    b = getattr(fn, "__builtins__", None)
    return b is None or b is builtins.__dict__ or b is builtins


# JAX keys its trace caches on this context's value too (``jax.make_user_context``). While
# jaxviz traces, the value is "jaxviz": a jitted callee the user had run before is traced
# again, with scopes, and the user's own cache entries never get jaxviz's scopes (they
# would show up as op names in their HLO). One value, not one per trace: a trace from a
# cache filled by an earlier jaxviz trace is reused, as JAX reuses the user's, and its
# scopes resolve through ``known_call``; a value per trace would keep every trace's jaxprs.
_jaxviz_context = jax.make_user_context(None) if hasattr(jax, "make_user_context") else None


def _jit_names(closed: Any) -> set[str]:
    """Names of the jit equations anywhere in ``closed``."""
    names: set[str] = set()
    stack = [closed.jaxpr if hasattr(closed, "jaxpr") else closed]
    while stack:
        for eqn in stack.pop().eqns:
            name = eqn.params.get("name")
            if isinstance(name, str):
                names.add(name)
            stack.extend(internals.jaxprs_in_params(eqn.params))
    return names


def reuses_user_traces() -> bool:
    """Whether this JAX (before 0.7, no ``jax.make_user_context``) hands jaxviz the traces
    of jitted functions the user already ran, recorded without jaxviz's call scopes."""
    return _jaxviz_context is None


def fresh_jax_traces() -> Any:
    """The context jaxviz traces in (see above)."""
    if _jaxviz_context is None:  # a JAX without user contexts: callees the user ran stay cached
        return contextlib.nullcontext()
    return _jaxviz_context("jaxviz")


def recorders(roots: Iterable[Any], skip: Iterable[Any] = (), cell_file: str | None = None) -> Iterator[HookScopes | CodeScopes]:
    """The recorders to try in turn: trace with each until one is ``complete()``."""
    skip, roots = list(skip), list(roots)
    if os.environ.get(MODE_ENV, "code") != "hook":
        yield CodeScopes(roots, skip, cell_file)
    wrappers = {f.__code__ for f in user_functions(roots) if hasattr(f, "__wrapped__")}
    yield HookScopes([c for c in skip if c not in wrappers], cell_file, transparent=wrappers)
