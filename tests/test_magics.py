"""The magics through a real IPython shell: names bound as a plain run binds them,
options, and bad input that never loses the namespace."""

import jax
import jax.numpy as jnp
import pytest
from IPython.core.interactiveshell import InteractiveShell

import jaxviz
from jaxviz import errors


@pytest.fixture(scope="module")
def shell():
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "jaxviz")
    yield ip
    ip.run_line_magic("unload_ext", "jaxviz")


@pytest.fixture()
def ns(shell):
    shell.run_cell(
        "import jax, jax.numpy as jnp, numpy as np\n"
        "x = jnp.ones((2, 3)); w = jnp.full((3, 4), 0.5); b = jnp.zeros(4); y = jnp.ones((2, 4)); n = 3\n"
    )
    return shell.user_ns


def run(shell, source):
    result = shell.run_cell(source)
    return result


def test_cell_binds_names_like_a_plain_run(shell, ns, capsys):
    r = run(shell, "%%jaxpr -o prog\nh = jnp.tanh(x @ w + b) * n\nloss = ((h - y) ** 2).mean()\nloss\n")
    assert r.error_in_exec is None
    expected_h = jnp.tanh(ns["x"] @ ns["w"] + ns["b"]) * 3
    assert jnp.allclose(ns["h"], expected_h)
    assert float(r.result) == pytest.approx(float(((expected_h - ns["y"]) ** 2).mean()))
    prog = ns["prog"]
    assert isinstance(prog, jaxviz.Program)
    kinds = {i.name: i.kind for i in prog.inputs}
    assert kinds == {"x": "traced", "w": "traced", "b": "traced", "y": "traced", "n": "constant"}
    assert set(prog.output_names) >= {"h", "loss", "result"}
    assert {"trace", "lower", "compile", "run"} <= set(prog.timings)
    lines = {n.source.cell_line for n in prog.graph.eqn_nodes() if n.source}
    assert lines == {1, 2}


def test_a_cells_own_trace_and_compile_are_not_in_the_recompile_log(shell, ns):
    with jaxviz.watch() as log:
        shell.run_cell("%%jaxpr --quiet\nz = jnp.sin(x) * 2")
        shell.run_cell("g = jax.jit(lambda a: a + 1)\ng(x)")
    assert [e.function.name for e in log.events] == ["<lambda>"], [str(e) for e in log.events]


def test_a_cell_program_is_named_after_its_prompt(shell, ns):
    count = shell.execution_count  # the number the next cell's prompt shows
    shell.run_cell("%%jaxpr -o prog --quiet\nz = x * 2\n", store_history=True)
    assert ns["prog"].name == f"In[{count}]"
    assert ns["prog"].summary().startswith(f"In[{count}]: ")
    shell.run_cell("%%jaxpr -o prog --quiet\nz = x * 3\n", store_history=True)
    assert ns["prog"].name == f"In[{count + 1}]"


def test_static_names_and_python_values(shell, ns):
    r = run(shell, "%%jaxpr --static n --quiet -o prog\nz = x * n if n > 2 else x\nk = n + 1\nmsg = 'done'\n")
    assert r.error_in_exec is None
    assert ns["k"] == 4 and ns["msg"] == "done" and ns["z"].shape == (2, 3)
    assert ns["prog"].input("n").kind == "static"


def test_no_run_binds_nothing(shell, ns):
    ns.pop("q", None)
    r = run(shell, "%%jaxpr --no-run\nq = x * 2\n")
    assert r.error_in_exec is None and "q" not in ns


def test_text_option_prints_jaxpr(shell, ns, capsys):
    run(shell, "%%jaxpr --text\nq2 = jnp.sin(x)\n")
    out = capsys.readouterr().out
    assert "sin" in out and "lambda" in out


def test_line_magic_shows_one_call(shell, ns, capsys):
    run(shell, "def f(v, neg):\n    return -v if neg else v\n")
    r = run(shell, "%jaxpr --static neg -o fp f(x, neg=True)")
    assert r.error_in_exec is None
    prog = ns["fp"]
    assert prog.input("neg").kind == "static" and prog.input("v").kind == "traced"
    assert [n.primitive for n in prog.graph.eqn_nodes()] == ["neg"]


def test_untraceable_control_flow_names_the_variable(shell, ns, capsys):
    before = dict(ns)
    r = run(shell, "%%jaxpr\nfresh = 1\nif x.sum() > 0:\n    fresh2 = 2\n")
    assert r.error_in_exec is not None
    assert "fresh" not in ns and "fresh2" not in ns
    # The explanation is displayed above the traceback (once), the traceback is short.
    shown = capsys.readouterr().out
    assert "cell line 2" in shown and "if x.sum() > 0:" in shown
    assert "`x` is traced" in shown and "%%jaxpr --static x" in shown
    assert shown.count("fixes, best first") == 1
    lines = r.error_in_exec._render_traceback_()
    assert len(lines) == 2 and lines[0].startswith("TracerBoolConversionError")
    assert "explained above" in lines[1]
    assert all(ns[k] is v for k, v in before.items() if k in ("x", "w", "b"))


def test_syntax_error_points_at_line(shell, ns):
    r = run(shell, "%%jaxpr\na = 1\nb2 = (a +\n")
    err = r.error_in_exec
    assert isinstance(err, errors.CellSyntaxError)
    text = "\n".join(err._render_traceback_())
    assert "cell line" in text and "b2 = (a +" in text


def test_undefined_name(shell, ns):
    ns.pop("v", None)
    r = run(shell, "%%jaxpr\nv = x + not_defined_anywhere\n")
    assert isinstance(r.error_in_exec, NameError)
    assert "not_defined_anywhere" in "\n".join(r.error_in_exec._render_traceback_())
    assert "v" not in ns


def test_cell_that_raises_keeps_namespace(shell, ns):
    ns["keep"] = 1
    r = run(shell, "%%jaxpr\nkeep = 2\nraise ValueError('boom')\n")
    assert isinstance(r.error_in_exec, ValueError)
    assert ns["keep"] == 1
    text = "\n".join(r.error_in_exec._render_traceback_())
    assert "cell line 2" in text and "boom" in text


def test_cell_without_jax_runs(shell, ns, capsys):
    r = run(shell, "%%jaxpr\nplain = [1, 2, 3]\nprint(sum(plain))\n")
    assert r.error_in_exec is None and ns["plain"] == [1, 2, 3]
    out = capsys.readouterr().out
    assert "6" in out and "nothing to draw" in out


def test_trace_time_print_is_reported(shell, ns):
    r = run(shell, "%%jaxpr -o prog --quiet\nprint('tracing!')\nt = x + 1\n")
    assert r.error_in_exec is None
    assert ns["prog"].trace_output.strip() == "tracing!"


def test_pytree_inputs_are_named_by_path(shell, ns):
    run(shell, "params = {'w': jnp.ones((3, 2)), 'b': jnp.zeros(2)}")
    r = run(shell, "%%jaxpr -o prog --quiet\nout = x @ params['w'] + params['b']\n")
    assert r.error_in_exec is None
    names = {i.name for i in ns["prog"].inputs if i.kind == "traced"}
    assert {"params['w']", "params['b']", "x"} <= names
    assert ns["out"].shape == (2, 2)


def test_unknown_static_name_is_an_error(shell, ns):
    r = run(shell, "%%jaxpr --static nope\nq3 = x + 1\n")
    assert isinstance(r.error_in_exec, ValueError)


def test_unload_removes_magics():
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "jaxviz")
    assert "jaxpr" in ip.magics_manager.magics["cell"]
    ip.run_line_magic("unload_ext", "jaxviz")
    assert "jaxpr" not in ip.magics_manager.magics["cell"]
    ip.run_line_magic("load_ext", "jaxviz")


def test_trace_cell_api_leaves_namespace_alone():
    namespace = {"jnp": jnp, "a": jnp.arange(3.0)}
    program = jaxviz.trace_cell("c = jnp.cumsum(a) * 2\n", namespace)
    assert "c" not in namespace
    assert [n.primitive for n in program.graph.eqn_nodes()][-1] == "mul"


def test_names_assigned_before_use_are_not_inputs():
    namespace = {"jnp": jnp, "x": jnp.ones(2), "y": jnp.ones(3)}
    program = jaxviz.trace_cell("y = 2 * x\nz = y + 1\n", namespace)
    assert [(i.name, i.kind) for i in program.inputs] == [("x", "traced")]
    program = jaxviz.trace_cell("x = x + 1\n", namespace)
    assert [(i.name, i.kind) for i in program.inputs] == [("x", "traced")]


def test_functions_from_earlier_cells_point_at_their_cell(shell, ns):
    shell.run_cell("def earlier(v):\n    return jnp.cos(v) + 1\n", store_history=True)
    number = shell.execution_count - 1
    r = run(shell, "%%jaxpr -o prog --quiet\nout2 = earlier(x)\n")
    assert r.error_in_exec is None
    cos = next(n for n in ns["prog"].graph.eqn_nodes() if n.primitive == "cos")
    assert cos.source.cell == f"In[{number}]" and cos.source.short() == f"In[{number}] line 2"
    call = next(g for g in ns["prog"].graph.groups if g.name == "earlier")
    assert call.source.short() == "cell line 1"


def test_augmented_assignment_and_del(shell, ns):
    run(shell, "acc = jnp.zeros(3)\ngone = 1")
    r = run(shell, "%%jaxpr --quiet\nacc += 2\ndel gone\n")
    assert r.error_in_exec is None
    assert jnp.allclose(ns["acc"], 2.0) and "gone" not in ns


def test_global_statement_binds_like_a_plain_run(shell, ns):
    ns.pop("zg", None)
    r = run(shell, "%%jaxpr --quiet\nglobal zg\nzg = x * 2\nraise ValueError('after')\n")
    assert isinstance(r.error_in_exec, ValueError) and "zg" not in ns  # nothing half-bound
    r = run(shell, "%%jaxpr --quiet\nglobal zg\nzg = x * 2\n")
    assert r.error_in_exec is None and not isinstance(ns["zg"], jax.core.Tracer)
    assert jnp.allclose(ns["zg"], ns["x"] * 2)


def test_container_stores_are_bound_back(shell, ns):
    run(shell, "params = {'w': jnp.ones(2)}")
    r = run(shell, "%%jaxpr --quiet\nparams['w'] = params['w'] * 3\n")
    assert r.error_in_exec is None and jnp.allclose(ns["params"]["w"], 3.0)


def test_storing_a_tracer_in_a_namespace_list_is_undone_and_explained(shell, ns):
    run(shell, "results = [1]")
    r = run(shell, "%%jaxpr --quiet\nresults.append(x * 2)\n")
    assert type(r.error_in_exec).__name__ == "LeakedTracerError"
    assert ns["results"] == [1]
    assert "`results` was restored" in "\n".join(r.error_in_exec._render_traceback_())


def test_a_drawing_that_fails_in_a_kernel_still_binds_the_cells_names(shell, ns, monkeypatch, capsys):
    """In a kernel the cell's graph is shown in two steps (``program_mimebundles``): where
    drawing it fails, the error is shown as IPython shows a failing formatter's, and the
    cell's names are bound all the same."""
    def failing(program):
        raise RuntimeError("the drawing failed here")
        yield  # a generator, as program_mimebundles is

    class NotebookKernel:  # as ipykernel's, running a notebook's cell
        @staticmethod
        def get_parent(channel):
            return {"metadata": {"cellId": "cell-1"}}

    monkeypatch.setattr(shell, "kernel", NotebookKernel(), raising=False)
    jaxviz.display.register(jaxviz.Program, mimebundles=failing)
    try:
        r = run(shell, "%%jaxpr\ndrawn = jnp.tanh(x) * 2\n")
    finally:
        jaxviz.render.install()
    assert r.error_in_exec is None
    assert jnp.allclose(ns["drawn"], jnp.tanh(ns["x"]) * 2)
    assert "the drawing failed here" in capsys.readouterr().out
