"""User call groups (``jaxviz.call_scopes``): the instrumented-code recorder gives exactly the
groups the settrace recorder gives, puts the user's code back afterwards, and falls back
to the hook when a function that ran could not be instrumented."""

import ast
import dis
import importlib
import linecache
import sys
import textwrap

import jax
import jax.numpy as jnp
import pytest
from zoo import ZOO, flax_apply

import jaxviz
from jaxviz import call_scopes, code_paths

sys.path.insert(0, str(__import__("pathlib").Path(__file__).parents[1] / "benchmarks"))
import models  # noqa: E402


def structure(program):
    """Everything about the groups and nodes that the call recorder influences."""
    g = program.graph
    return ([(x.name, x.kind, x.parent, x.n_eqns, x.repeat) for x in g.groups],
            [(n.kind, n.label, n.group) for n in g.nodes])


def trace_with(mode, monkeypatch, fn, *args, **kwargs):
    monkeypatch.setenv(call_scopes.MODE_ENV, mode)
    return jaxviz.trace(fn, *args, **kwargs)


def call_groups(program):
    """The user's calls (not jnp's jitted helpers, shown as calls too: ``jnp.linalg.norm``;
    a user's jitted function is one call group holding its ``jit`` equation)."""
    graph = program.graph
    return sorted(g.name for g in graph.groups if g.kind == "call" and (
        g.holder is None or graph.nodes[g.holder].label == f"jit: {g.name}"))


@pytest.mark.parametrize("name", sorted(ZOO))
def test_code_and_hook_recorders_build_the_same_graph(name, monkeypatch):
    fn, args, kwargs = ZOO[name]
    by_code = trace_with("code", monkeypatch, fn, *args, **kwargs)
    by_hook = trace_with("hook", monkeypatch, fn, *args, **kwargs)
    assert by_code.call_scopes == "code" and by_hook.call_scopes == "hook"
    assert structure(by_code) == structure(by_hook)


def test_transformer_and_flax_models_same_graph_without_a_hook(monkeypatch):
    params, tokens = models.init_params(3), models.tokens()
    by_code = trace_with("code", monkeypatch, models.train_step, params, tokens)
    by_hook = trace_with("hook", monkeypatch, models.train_step, params, tokens)
    assert by_code.call_scopes == "code"
    assert structure(by_code) == structure(by_hook)
    assert call_groups(by_code).count("block") == 3 * 2  # forward and backward, 3 layers
    apply, variables, x = flax_apply()
    flax_code = trace_with("code", monkeypatch, apply, variables, x)
    flax_hook = trace_with("hook", monkeypatch, apply, variables, x)
    assert flax_code.call_scopes == "code"
    # Flax's own scope for the module call and our group for its __call__ are one group.
    groups = flax_code.graph.groups
    (mlp,) = [g for g in groups if g.name == "MLP"]
    assert mlp.kind == "scope" and mlp.source is not None
    assert {"Dense_0", "Dense_1"} <= {groups[c].name for c in mlp.groups}  # and relu's custom_jvp
    assert structure(flax_code) == structure(flax_hook)


def test_user_code_is_put_back_after_the_trace_and_after_an_error(monkeypatch):
    monkeypatch.setenv(call_scopes.MODE_ENV, "code")
    original = models.block.__code__
    jaxviz.trace(models.train_step, models.init_params(1), models.tokens())
    assert models.block.__code__ is original

    def broken(x):
        y = models.mlp(x, {"up": jnp.ones((3, 4)), "down": jnp.ones((4, 3))})
        if y.sum() > 0:  # a tracer in Python control flow
            return y
        return -y

    mlp_code = models.mlp.__code__
    with pytest.raises(jax.errors.TracerBoolConversionError):
        jaxviz.trace(broken, jnp.ones(3))
    assert models.mlp.__code__ is mlp_code
    assert not call_scopes.is_instrumented(broken.__code__)


def write_module(tmp_path, name, source):
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(source))
    sys.path.insert(0, str(tmp_path))
    try:
        return importlib.import_module(name), path
    finally:
        sys.path.remove(str(tmp_path))


def test_functions_reached_through_objects_closures_and_partials_are_instrumented(tmp_path, monkeypatch):
    mod, _ = write_module(tmp_path, "jv_reach", """
        import functools
        import jax.numpy as jnp

        def scale(x, k):
            return x * k

        def make_act():
            def act(x):
                return jnp.tanh(x)
            return act

        class Layer:
            def __init__(self):
                self.act = make_act()          # a closure made before the trace
                self.table = {"scale": functools.partial(scale, k=2.0)}

            def __call__(self, x):
                return self.table["scale"](self.act(x))

        LAYER = Layer()

        def step(x):
            def inner(y):                      # defined while tracing
                return jnp.sin(y)
            return inner(LAYER(x))
        """)
    program = trace_with("code", monkeypatch, mod.step, jnp.ones(3))
    assert program.call_scopes == "code"
    assert call_groups(program) == ["Layer", "act", "inner", "scale"]
    assert structure(program) == structure(trace_with("hook", monkeypatch, mod.step, jnp.ones(3)))
    assert not call_scopes.is_instrumented(mod.scale.__code__)
    assert not call_scopes.is_instrumented(mod.LAYER.act.__code__)


def test_a_function_behind_a_proxy_is_found_and_the_proxy_left_as_it_was(tmp_path, monkeypatch):
    # A lazy proxy (as lazy_object_proxy and wrapt make) says it is what it wraps: asked
    # for its __class__, it answers "function". The search for user functions goes by
    # the proxy's own type, finds the function in it, and sets nothing on the proxy.
    mod, _ = write_module(tmp_path, "jv_proxy", """
        import jax.numpy as jnp

        class Proxy:
            def __init__(self, target):
                object.__setattr__(self, "target", target)

            @property
            def __class__(self):
                return type(self.target)

            def __getattr__(self, name):
                return getattr(self.target, name)

            def __call__(self, *args):
                return self.target(*args)

        def act(x):
            return jnp.tanh(x)

        ACT = Proxy(act)

        def step(x):
            return ACT(x) * 2
        """)
    program = trace_with("code", monkeypatch, mod.step, jnp.ones(3))
    assert program.call_scopes == "code"  # one trace: no fallback to the hook
    assert "act" in call_groups(program)
    assert vars(mod.ACT) == {"target": mod.act}
    assert not call_scopes.is_instrumented(mod.act.__code__)


def test_changed_source_falls_back_to_the_hook_with_the_same_groups(tmp_path, monkeypatch, capsys):
    mod, path = write_module(tmp_path, "jv_edited", """
        import jax.numpy as jnp

        def helper(x):
            print("tracing helper")
            return jnp.cos(x) + 1
        """)
    path.write_text(path.read_text().replace("+ 1", "+ 2  # edited after import"))
    linecache.checkcache(str(path))

    def step(x):
        return mod.helper(x) * 3

    program = trace_with("code", monkeypatch, step, jnp.ones(3))
    assert program.call_scopes == "hook"  # helper's code no longer matches its file
    assert call_groups(program) == ["helper"]
    assert call_scopes.instrumented_code(mod.helper.__code__) is None
    # Traced twice, but the user's print is shown (and recorded) once.
    assert capsys.readouterr().out.count("tracing helper") == 1
    assert program.trace_output.count("tracing helper") == 1


def test_code_without_source_falls_back_to_the_hook(monkeypatch):
    namespace = {"jnp": jnp}
    exec(compile("def made(x):\n    return jnp.exp(x) - 1\n", "<generated>", "exec"), namespace)
    made = namespace["made"]

    def step(x):
        return made(x) * 2

    program = trace_with("code", monkeypatch, step, jnp.ones(3))
    assert program.call_scopes == "hook"
    assert call_groups(program) == ["made"]


def test_a_jitted_callee_traced_before_does_not_force_the_hook(tmp_path, monkeypatch):
    mod, _ = write_module(tmp_path, "jv_cached", """
        import jax
        import jax.numpy as jnp

        @jax.jit
        def block(x):
            return jnp.sin(x) * 2

        def step(x):
            return block(x) + 1
        """)
    mod.block(jnp.ones(3))  # JAX now holds block's jaxpr, recorded without our scopes
    program = trace_with("code", monkeypatch, mod.step, jnp.ones(3))
    assert program.call_scopes == "code"


def test_the_caller_of_jaxviz_trace_does_not_count_as_unscoped(monkeypatch):
    def user_entry():  # a user function on the stack, outside the trace
        return trace_with("code", monkeypatch, models.train_step, models.init_params(1), models.tokens())

    assert user_entry().call_scopes == "code"


def test_closures_made_while_tracing_stay_callable_afterwards(tmp_path, monkeypatch):
    mod, _ = write_module(tmp_path, "jv_escape", """
        import jax.numpy as jnp

        KEPT = []

        def step(x):
            def escapee(y):
                return jnp.sin(y)
            KEPT.append(escapee)
            return escapee(x)
        """)
    program = trace_with("code", monkeypatch, mod.step, jnp.ones(3))
    assert call_groups(program) == ["escapee"]
    escapee = mod.KEPT[-1]
    assert call_scopes.is_instrumented(escapee.__code__)  # made from the instrumented step
    assert float(escapee(jnp.zeros(()))) == 0.0  # outside a trace the scope is a no-op


def test_instrumented_code_keeps_lines_and_columns(tmp_path):
    mod, _ = write_module(tmp_path, "jv_lines", """
        import jax.numpy as jnp

        def f(x):
            \"\"\"Docstring.\"\"\"
            y = jnp.sin(x)
            return y + jnp.cos(x)
        """)
    twin = call_scopes.instrumented_code(mod.f.__code__)
    assert twin is not None and call_scopes.is_instrumented(twin)
    assert twin.co_firstlineno == mod.f.__code__.co_firstlineno
    # Every operation the user wrote keeps its span (what equations and error messages
    # point at); only the return's own bookkeeping moves into the ``with``.
    def spans(code):
        return {(i.opname, i.positions) for i in dis.get_instructions(code)
                if i.positions.lineno is not None and i.opname.startswith(("CALL", "BINARY", "LOAD_ATTR"))}

    assert spans(mod.f.__code__) and spans(mod.f.__code__) <= spans(twin)


def test_every_def_is_instrumented_wherever_it_stands_but_generators_and_the_tree_is_put_back():
    source = textwrap.dedent("""
        import contextlib

        def top(x):
            return x

        class Layer:
            def __call__(self, x):
                if x:
                    def in_if(y):
                        return y
                else:
                    try:
                        def in_try(y):
                            return y
                    except ValueError:
                        def in_handler(y):
                            return y
                    finally:
                        def in_finally(y):
                            return y
                match x:
                    case 1:
                        def in_case(y):
                            return y
                for _ in ():
                    with contextlib.nullcontext():
                        def in_with(y):
                            return y
                return lambda y: y

        @contextlib.contextmanager
        def decorated_generator():
            yield

        def generator():
            yield from ()

        def only_a_docstring():
            \"\"\"Nothing to run.\"\"\"

        async def coroutine():
            return 1
        """)
    plain = compile(source, "<jv-defs>", "exec", dont_inherit=True)
    tree = ast.parse(source, "<jv-defs>")
    code = call_scopes.compile_instrumented(tree, "<jv-defs>")
    made = {c.co_name: call_scopes.is_instrumented(c)
            for c in _codes_in(code) if c.co_name not in ("<module>", "Layer")}
    assert made == {"top": True, "__call__": True, "in_if": True, "in_try": True, "in_handler": True,
                    "in_finally": True, "in_case": True, "in_with": True, "<lambda>": False,
                    "decorated_generator": False, "generator": False, "only_a_docstring": False,
                    "coroutine": False}
    assert compile(tree, "<jv-defs>", "exec", dont_inherit=True) == plain  # the tree as it was


def _codes_in(code):
    for const in code.co_consts:
        if isinstance(const, type(code)):
            yield const
            yield from _codes_in(const)


def test_a_notebook_function_defined_in_an_earlier_cell_gets_its_group():
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shell.run_cell("import jax.numpy as jnp\nimport jaxviz\n"
                   "def norm(v):\n    return v / jnp.linalg.norm(v)\n", store_history=True)
    shell.run_cell("prog = jaxviz.trace(lambda v: norm(v) * 2, jnp.ones(3))", store_history=True)
    prog = shell.user_ns["prog"]
    assert prog.call_scopes == "code"
    assert call_groups(prog) == ["norm"]
    call = next(g for g in prog.graph.groups if g.kind == "call")
    assert call.source is not None and call.source.cell is not None  # "In[N]"


@pytest.fixture()
def shell_with_jaxviz():
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shell.run_cell("%load_ext jaxviz")
    yield shell
    shell.run_cell("%unload_ext jaxviz")  # the shell is shared with other test files


def test_a_jaxpr_cell_groups_its_own_functions_and_binds_working_ones(shell_with_jaxviz):
    shell = shell_with_jaxviz
    shell.run_cell("import jax.numpy as jnp\ndef unit(v):\n    return v / jnp.linalg.norm(v)\nx = jnp.ones(3)")
    result = shell.run_cell("%%jaxpr -o prog --quiet\ndef twice(v):\n    return unit(v) * 2\ny = twice(x) + 1\n")
    assert result.success
    prog = shell.user_ns["prog"]
    assert prog.call_scopes == "code"
    assert call_groups(prog) == ["twice", "unit"]
    nested = next(g for g in prog.graph.groups if g.name == "unit")
    assert prog.graph.groups[nested.parent].name == "twice"
    # ``twice`` is bound as a plain run binds it: plain code, working without jaxviz.
    twice = shell.user_ns["twice"]
    assert not call_scopes.is_instrumented(twice.__code__)
    assert float(twice(jnp.ones(4))[0]) == pytest.approx(1.0)
    shell.run_cell("%%jaxpr -o prog2 --quiet\nclass Scale:\n    def apply(self, v):\n        return v * 3\n"
                   "z = Scale().apply(x)\n")
    assert call_groups(shell.user_ns["prog2"]) == ["Scale.apply"]
    assert not call_scopes.is_instrumented(shell.user_ns["Scale"].apply.__code__)


def test_a_function_keeps_its_identity_in_the_recompile_tracker_while_traced(tmp_path):
    from jaxviz.recompiles import signature

    mod, _ = write_module(tmp_path, "jv_watched", """
        import jax.numpy as jnp

        def block(x):
            return jnp.sin(x) * 2
        """)
    before = signature.describe_function(mod.block)[0]
    with call_scopes.CodeScopes(roots=[mod.block]):
        assert call_scopes.is_instrumented(mod.block.__code__)  # the twin runs now
        during = signature.describe_function(mod.block)[0]
    assert during == before


def test_big_parameter_trees_do_not_exhaust_the_search_for_functions(monkeypatch):
    leaf = jnp.ones(2)
    params = [{f"w{i}": leaf + 0 for i in range(300)} for _ in range(100)]  # 30k arrays

    def step(params, x):
        return models.mlp(x, {"up": params[0]["w1"][:, None] * jnp.ones((2, 3)), "down": jnp.ones((3, 2))})

    program = trace_with("code", monkeypatch, step, params, jnp.ones(2))
    assert program.call_scopes == "code" and call_groups(program) == ["mlp"]


def test_an_equinox_model_gets_one_group_per_module_call(monkeypatch):
    eqx = pytest.importorskip("equinox")

    class Block(eqx.Module):
        lin1: eqx.nn.Linear
        lin2: eqx.nn.Linear

        def __init__(self, key):
            k1, k2 = jax.random.split(key)
            self.lin1 = eqx.nn.Linear(8, 16, key=k1)
            self.lin2 = eqx.nn.Linear(16, 8, key=k2)

        def __call__(self, x):
            return x + self.lin2(jax.nn.relu(self.lin1(x)))

    class Model(eqx.Module):
        blocks: list

        def __init__(self, key, n=4):
            self.blocks = [Block(k) for k in jax.random.split(key, n)]

        def __call__(self, x):
            for block in self.blocks:
                x = block(x)
            return x

    def loss(model, x, y):
        return ((jax.vmap(model)(x) - y) ** 2).mean()

    @eqx.filter_jit
    def step(model, x, y):
        value, grads = eqx.filter_value_and_grad(loss)(model, x, y)
        return jax.tree_util.tree_map(lambda p, g: p - 0.1 * g, model, grads), value

    args = (Model(jax.random.PRNGKey(0)), jnp.ones((5, 8)), jnp.zeros((5, 8)))
    by_code = trace_with("code", monkeypatch, step, *args)
    by_hook = trace_with("hook", monkeypatch, step, *args)
    assert by_code.call_scopes == "code"
    assert structure(by_code) == structure(by_hook)
    groups = by_code.graph.groups
    assert call_groups(by_code).count("Model") == 2  # the forward call and its backward pass
    folds = [g for g in groups if g.kind == "repeat" and g.name.startswith("Block ×")]
    assert folds and all(groups[m].name == "Block" for f in folds for m in f.groups)


@pytest.mark.skipif(not hasattr(jax, "make_user_context"),
                    reason="JAX 0.6 has no jax.make_user_context: the user's cached traces are reused")
def test_a_jitted_function_the_user_ran_before_still_shows_its_calls(monkeypatch):
    monkeypatch.setenv(call_scopes.MODE_ENV, "code")
    step = jax.jit(models.train_step)
    params, tokens = models.init_params(2), models.tokens()
    step(params, tokens)  # JAX has step's trace cached now, recorded without scopes
    from jaxviz.cells import stage_cell

    program = stage_cell("new, loss = step(params, tokens)\n",
                         {"step": step, "params": params, "tokens": tokens}).program
    assert {"train_step", "loss_fn", "block", "attention", "mlp"} <= set(call_groups(program))


def test_a_jitted_function_the_user_ran_before_is_noted_where_jax_reuses_its_trace(monkeypatch):
    """JAX 0.6 (no user contexts) hands jaxviz the user's cached trace of ``step``: the graph
    says why the calls inside are missing. Newer JAX traces it again and says nothing."""
    monkeypatch.setenv(call_scopes.MODE_ENV, "code")
    step = jax.jit(models.train_step)
    params, tokens = models.init_params(2), models.tokens()
    step(params, tokens)
    from jaxviz.cells import stage_cell

    program = stage_cell("new, loss = step(params, tokens)\n",
                         {"step": step, "params": params, "tokens": tokens}).program
    notes = [n for n in program.notes if "reuses its cached trace" in n]
    if call_scopes.reuses_user_traces():
        assert notes and notes[0].startswith("`train_step` ran before this trace"), program.notes
        assert "block" not in call_groups(program)
    else:
        assert not notes, program.notes
        assert "block" in call_groups(program)


@pytest.mark.skipif(not hasattr(jax, "make_user_context"),
                    reason="JAX 0.6 has no jax.make_user_context: the user's cached traces are reused")
def test_jaxviz_scopes_stay_out_of_the_users_own_traces(monkeypatch):
    monkeypatch.setenv(call_scopes.MODE_ENV, "code")

    @jax.jit
    def callee(x):
        return models.mlp(x, {"up": jnp.ones((3, 4)), "down": jnp.ones((4, 3))})

    jaxviz.trace(lambda x: callee(x) * 2, jnp.ones(3))  # traces callee with jaxviz's scopes
    user_jaxpr = callee.trace(jnp.ones(3)).jaxpr  # the user's first trace of it
    stacks = [str(e.source_info.name_stack) for e in user_jaxpr.jaxpr.eqns]
    assert stacks and not any(s.startswith(call_scopes.SCOPE_PREFIX) for s in stacks), stacks


def test_tracing_again_reuses_jaxvizs_own_cache_with_the_same_groups(monkeypatch):
    monkeypatch.setenv(call_scopes.MODE_ENV, "code")

    @jax.jit
    def inner_step(params, tokens):
        return models.train_step(params, tokens)

    def outer(params, tokens):
        return inner_step(params, tokens)

    args = (models.init_params(3), models.tokens())
    first = jaxviz.trace(outer, *args)
    second = jaxviz.trace(outer, *args)  # inner_step comes from the cache the first filled
    assert structure(second) == structure(first)
    sources = [[(g.name, g.source) for g in p.graph.groups if g.kind == "call"] for p in (first, second)]
    assert sources[0] == sources[1] and all(src is not None for _, src in sources[1])


def _scaled(v):
    return v * 2.0


def test_a_trace_under_leak_checking_leaks_no_tracer():
    """The recorder keeps the user's frames to name library calls by the values called
    (``call_scopes.CalledNames``); where JAX checks for leaked tracers it keeps none, so the
    trace goes as it would without jaxviz."""

    def step(x):
        y = _scaled(x)
        return jnp.tanh(y).sum()

    with jax.checking_leaks():
        program = jaxviz.trace(step, jnp.ones(3))
    assert "_scaled" in [g.name for g in program.graph.groups if g.kind == "call"]


LIBRARY_SOURCE = '''
import jax.numpy as jnp


def smooth(x):
    """A library function the user calls."""
    return jnp.tanh(x) * 2.0 + jnp.sin(x)
'''


def _package_folder(root, name, installed):
    """``root/name/__init__.py``, with ``root/name-1.0.dist-info`` beside it when
    ``installed`` (what ``pip install --target root`` leaves)."""
    (root / name).mkdir(parents=True)
    (root / name / "__init__.py").write_text(LIBRARY_SOURCE)
    if installed:
        info = root / f"{name}-1.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    return root


@pytest.mark.parametrize("installed", [True, False], ids=["pip-target", "own-folder"])
def test_a_library_installed_outside_site_packages_is_a_library(tmp_path, monkeypatch, installed):
    """Libraries live wherever pip put them (``--target``, ``--user``, a system
    dist-packages, a PYTHONPATH of wheels), not only in this venv's site-packages: a
    sys.path folder holding installed distributions is one. The same package in a folder
    of the user's own (no ``.dist-info``) is the user's code."""
    name = f"smoothlib_{'installed' if installed else 'own'}"
    monkeypatch.syspath_prepend(str(_package_folder(tmp_path, name, installed)))
    lib = importlib.import_module(name)
    assert code_paths.is_user_file(lib.__file__) is not installed
    assert code_paths.installed_package(lib.__file__) == (name if installed else None)

    def loss(x):
        return lib.smooth(x).sum()

    graph = jaxviz.trace(loss, jnp.ones(3)).graph
    groups = {(g.kind, g.name) for g in graph.groups[1:]}
    if installed:
        assert ("library", f"{name}.smooth") in groups, groups
    else:
        assert ("call", "smooth") in groups, groups
