"""The tracer error explainer: one test per JAX tracer error, from a small realistic
function, checking the value's name, the input it depends on, the user's line, the first
fix and the provenance path; nested jit / vmap / scan; pass-through of other errors; the
IPython hook on an ordinary cell and inside ``%%jaxpr``."""

from __future__ import annotations

import inspect
import io
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import jaxviz
from jaxviz import _jax_internals as internals
from jaxviz import errors
from jaxviz.errors import provenance

# ---------------------------------------------------------------------- helpers
# ``%unload_ext jaxviz`` (other test modules) removes the capture of JAX's tracer errors:
# every test here runs with it installed (the ``capture`` fixture of conftest.py).
pytestmark = pytest.mark.usefixtures("capture")


def _raise(fn, *args, **kwargs):
    with pytest.raises(Exception) as info:
        fn(*args, **kwargs)
    return info.value


def _explain(fn, *args, **kwargs):
    exc = _raise(fn, *args, **kwargs)
    explanation = jaxviz.explain(exc)
    assert explanation is not None, f"no explanation for {type(exc).__name__}: {exc}"
    return exc, explanation


def _line_of(fn, text):
    """The file line number of the first line of ``fn`` containing ``text``."""
    lines, start = inspect.getsourcelines(inspect.unwrap(fn))
    for i, line in enumerate(lines):
        if text in line:
            return start + i
    raise AssertionError(f"{text!r} not in {fn}")


def _assert_path(ex, input_name):
    """The provenance graph has a highlighted path from input ``input_name`` to the value."""
    g = ex.graph
    assert g is not None
    starts = [n.id for n in g.nodes if n.kind == "input" and n.label == input_name]
    out = [n.id for n in g.nodes if n.kind == "output"]
    assert starts, f"no input node {input_name!r}: {[n.label for n in g.nodes]}"
    assert len(out) == 1
    succ = {}
    for e in g.edges:
        succ.setdefault(e.src, []).append(e.dst)
    stack, seen = list(starts), set()
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        seen.add(n)
        stack.extend(succ.get(n, ()))
    assert out[0] in seen, f"no path from {input_name} to the value"
    assert set(starts) <= ex.path and out[0] in ex.path
    return [g.nodes[n] for n in sorted(ex.path)]


def _check(ex, *, value, inputs, line, first_fix, fn, kind):
    assert ex.kind == kind
    assert ex.value_name == value, ex.value_name
    assert ex.input_names == inputs, ex.input_names
    assert ex.line is not None and ex.line.line == _line_of(fn, line), (ex.line, line)
    assert line.strip() in ex.line.text
    assert ex.fixes and ex.fixes[0].key == first_fix, [f.key for f in ex.fixes]
    for name in inputs:
        _assert_path(ex, name)


# ---------------------------------------------------------------------- one per error kind
@jax.jit
def scale(x, neg):
    y = x * 2.0
    if neg:
        y = -y
    return y


def test_bool_conversion_of_an_argument_suggests_static():
    exc, ex = _explain(scale, jnp.ones(3), True)
    assert isinstance(exc, jax.errors.TracerBoolConversionError)
    _check(ex, value="neg", inputs=["neg"], line="if neg:", first_fix="static", fn=scale,
           kind="TracerBoolConversionError")
    assert ex.line.expression == "neg"
    neg = ex.inputs[0]
    assert (neg.position, neg.function, neg.traced_for) == (1, "scale", "jit")
    text = ex.text()
    assert "`neg` is traced because it is argument 1 of `scale`, which is jitted without `static_argnums`" in text
    assert "static_argnames=('neg',)" in ex.fixes[0].code and "compiles a separate version" in ex.fixes[0].note
    assert any(f.key == "where" and "jnp.where(neg, -y, y)" in f.code for f in ex.fixes)
    assert {f.key for f in ex.fixes} >= {"static", "where", "cond", "select"}


@jax.jit
def gated(x, w):
    y = x * 2
    s = jnp.sum(w * y)
    if s > 0:
        return y
    return -y


def test_bool_conversion_of_a_computed_value_shows_its_path():
    _, ex = _explain(gated, jnp.ones(3), jnp.ones(3))
    _check(ex, value="s > 0", inputs=["w", "x"], line="if s > 0:", first_fix="where", fn=gated,
           kind="TracerBoolConversionError")
    path = [n.label for n in _assert_path(ex, "x")]
    assert path[-1] == "s > 0" and "reduce_sum" in path and path.count("mul") == 2, path
    assert "return jnp.where(s > 0, y, -y)" in ex.fixes[0].code
    assert not any(f.key == "static" for f in ex.fixes)  # arrays cannot be static



@jax.jit
def negate_if(x, neg):
    return -x if neg else x


def test_conditional_expression_uses_its_test_and_branches():
    """``-x if neg else x``: the condition is ``neg``, the branches ``-x`` and ``x``
    (Python 3.11 gives the jump the position of the whole conditional expression)."""
    _, ex = _explain(negate_if, 1, True)
    _check(ex, value="neg", inputs=["neg"], line="return -x if neg else x", first_fix="static",
           fn=negate_if, kind="TracerBoolConversionError")
    assert ex.line.expression == "neg"
    codes = {f.key: f.code for f in ex.fixes}
    assert codes["where"] == "return jnp.where(neg, -x, x)"
    assert codes["cond"] == "return lax.cond(neg, lambda: -x, lambda: x)"
    assert codes["select"] == "return lax.select(neg, -x, x)"


@jax.jit
def both_positive(x, a, b):
    if a > 0 and b > 0:
        return x
    return -x


@jax.jit
def either(x, a, b):
    y = x if a or b else -x
    return y


@jax.jit
def unless(x, a):
    if not a:
        return x
    return -x


@jax.jit
def in_range(x, a):
    return x if 0 < a < 3 else -x


@jax.jit
def count_up(x, n):
    while n > 0 and x < 10:
        x = x + 1
    return x


@jax.jit
def both(a, b):
    return a and b


@pytest.mark.parametrize("fn, args, key, code", [
    (both_positive, (1.0, 1.0, 1.0), "where", "return jnp.where(jnp.logical_and(a > 0, b > 0), x, -x)"),
    (either, (1.0, True, False), "where", "y = jnp.where(jnp.logical_or(a, b), x, -x)"),
    (unless, (1.0, True), "where", "return jnp.where(a, -x, x)"),
    (in_range, (1.0, 1.0), "cond", "return lax.cond(jnp.logical_and(0 < a, a < 3), lambda: x, lambda: -x)"),
    (count_up, (1.0, 3), "while_loop", "lambda state: <jnp.logical_and(n > 0, x < 10) in terms of state>"),
    (both, (True, False), "where", "ok = jnp.logical_and(a, b)\n"),
], ids=["and", "or-ifexp", "not", "chained", "while-and", "and-value"])
def test_conditions_keep_every_operand(fn, args, key, code):
    """``and``/``or``/``not`` operands and chained comparisons: the fix tests the whole
    condition (not just the operand JAX refused first), written for traced values."""
    _, ex = _explain(fn, *args)
    assert ex.kind == "TracerBoolConversionError"
    fix = next(f for f in ex.fixes if f.key == key)
    assert code in fix.code, fix.code

@jax.jit
def positions(x, n):
    return jnp.arange(n) * x


def test_concretization_of_a_size_argument():
    exc, ex = _explain(positions, 2.0, 4)
    assert type(exc) is jax.errors.ConcretizationTypeError
    _check(ex, value="n", inputs=["n"], line="jnp.arange(n)", first_fix="static", fn=positions,
           kind="ConcretizationTypeError")
    assert "static_argnames=('n',)" in ex.fixes[0].code


@jax.jit
def flatten(x):
    return x.reshape(jnp.array(x.shape).prod())


def test_traced_shape_arithmetic_suggests_numpy():
    # The example: in this JAX version it is a TypeError naming a JitTracer.
    exc, ex = _explain(flatten, jnp.ones((2, 3)))
    assert isinstance(exc, TypeError) and errors.is_tracer_error(exc)
    _check(ex, value="jnp.array(x.shape).prod()", inputs=[], line="x.reshape(", first_fix="numpy",
           fn=flatten, kind="TypeError")
    assert "np.array(x.shape).prod()" in ex.fixes[0].code
    assert "depends on no input" in ex.text()
    prims = {n.primitive for n in ex.graph.nodes if n.id in ex.path}
    assert "reduce_prod" in prims, prims


@jax.jit
def positive_indices(x):
    return jnp.nonzero(x > 0)


def test_nonzero_without_size():
    _, ex = _explain(positive_indices, jnp.arange(4.0))
    assert ex.input_names == ["x"] and ex.fixes[0].key == "size"
    _assert_path(ex, "x")


@jax.jit
def repeat_add(x, n):
    out = x
    for _ in range(n):
        out = out + 1
    return out


def test_integer_conversion_in_range():
    exc, ex = _explain(repeat_add, jnp.ones(3), 3)
    assert isinstance(exc, jax.errors.TracerIntegerConversionError)
    _check(ex, value="n", inputs=["n"], line="for _ in range(n):", first_fix="static", fn=repeat_add,
           kind="TracerIntegerConversionError")
    assert ex.line.expression == "range(n)"
    assert [f.key for f in ex.fixes][:2] == ["static", "fori_loop"]


@jax.jit
def sum_negatives(x):
    return x[x < 0].sum()


def test_boolean_mask_indexing():
    exc, ex = _explain(sum_negatives, jnp.array([-1.0, 2.0, -3.0]))
    assert isinstance(exc, jax.errors.NonConcreteBooleanIndexError)
    _check(ex, value="x < 0", inputs=["x"], line="x[x < 0]", first_fix="where", fn=sum_negatives,
           kind="NonConcreteBooleanIndexError")
    assert [n.label for n in _assert_path(ex, "x")] == ["x", "lt", "x < 0"]
    assert "jnp.where(x < 0, x, 0)" in ex.fixes[0].code
    assert ex.fixes[1].key == "size" and "size=" in ex.fixes[1].code


@jax.jit
def to_numpy(x):
    return np.asarray(x + 1)


def test_array_conversion():
    exc, ex = _explain(to_numpy, jnp.ones(3))
    assert isinstance(exc, jax.errors.TracerArrayConversionError)
    _check(ex, value="x + 1", inputs=["x"], line="np.asarray(x + 1)", first_fix="jnp", fn=to_numpy,
           kind="TracerArrayConversionError")
    assert "jnp.asarray(x + 1)" in ex.fixes[0].code


saved = []


@jax.jit
def remember(x):
    y = jnp.sin(x) * 2
    saved.append(y)
    return x


def use_saved(z):
    return saved[0] + z


@pytest.mark.skipif(internals.TRACERS_HOLD_THEIR_EQUATION,
                    reason="JAX 0.7+ keeps a leaked tracer's equation (test_leaked_tracer)")
def test_leaked_tracer_on_a_jax_that_forgets_its_equation_says_so():
    saved.clear()
    remember(jnp.ones(3))
    exc, ex = _explain(use_saved, jnp.ones(3))
    assert isinstance(exc, jax.errors.UnexpectedTracerError)
    assert ex.leaked_from == "remember"
    assert ex.created_at is not None and ex.created_at.line == _line_of(remember, "jnp.sin(x) * 2")
    assert any("forgets a leaked tracer's equation" in n for n in ex.notes), ex.notes
    saved.clear()


@pytest.mark.skipif(not internals.TRACERS_HOLD_THEIR_EQUATION,
                    reason="JAX 0.6 forgets a leaked tracer's equation when its trace ends")
def test_leaked_tracer():
    saved.clear()
    remember(jnp.ones(3))
    exc, ex = _explain(use_saved, jnp.ones(3))
    assert isinstance(exc, jax.errors.UnexpectedTracerError)
    _check(ex, value="saved[0]", inputs=["x"], line="return saved[0] + z", first_fix="return",
           fn=use_saved, kind="UnexpectedTracerError")
    assert ex.leaked_from == "remember"
    assert ex.created_at is not None and ex.created_at.line == _line_of(remember, "jnp.sin(x) * 2")
    assert [n.label for n in _assert_path(ex, "x")] == ["x", "sin", "mul", "saved[0]"]
    saved.clear()


# ---------------------------------------------------------------------- nesting
@jax.jit
def outer(x, neg):
    return inner(x * 2, neg)


@jax.jit
def inner(v, flag):
    if flag:
        return v
    return -v


def test_nested_jit_links_the_inner_argument_to_the_outer_one():
    _, ex = _explain(outer, jnp.ones(3), True)
    _check(ex, value="flag", inputs=["neg"], line="if flag:", first_fix="static", fn=inner,
           kind="TracerBoolConversionError")
    assert [i.name for i in ex.direct_inputs] == ["flag"]
    assert ex.direct_inputs[0].linked_from == ["neg"]
    assert "static_argnames=('neg',)" in ex.fixes[0].code and "outer = jax.jit(outer" in ex.fixes[0].code
    labels = [n.label for n in _assert_path(ex, "neg")]
    assert labels == ["neg", "flag", "flag"], labels
    assert "`flag` receives `neg`" in ex.text()


def step(carry, xi):
    if xi > 0:
        return carry + xi, carry
    return carry, carry


@jax.jit
def running(init, xs):
    return lax.scan(step, init, xs)


def test_error_inside_a_scan_body():
    _, ex = _explain(running, 0.0, jnp.ones(3))
    _check(ex, value="xi > 0", inputs=["xs"], line="if xi > 0:", first_fix="where", fn=step,
           kind="TracerBoolConversionError")
    (xi,) = ex.direct_inputs
    assert (xi.name, xi.traced_for, xi.position, xi.linked_from) == ("xi", "scan", 1, ["xs"])
    assert not xi.can_be_static
    assert [n.label for n in _assert_path(ex, "xs")] == ["xs", "xi", "gt", "xi > 0"]


def normalize(x):
    if x.sum() > 0:
        return x / x.sum()
    return x


def test_error_inside_vmap_under_jit():
    _, ex = _explain(jax.jit(jax.vmap(normalize)), jnp.ones((2, 3)))
    _check(ex, value="x.sum() > 0", inputs=["x"], line="if x.sum() > 0:", first_fix="where",
           fn=normalize, kind="TracerBoolConversionError")
    assert "return jnp.where(x.sum() > 0, x / x.sum(), x)" in ex.fixes[0].code


def test_error_inside_eager_vmap_names_the_argument():
    _, ex = _explain(jax.vmap(normalize), jnp.ones((2, 3)))
    _check(ex, value="x.sum() > 0", inputs=["x"], line="if x.sum() > 0:", first_fix="where",
           fn=normalize, kind="TracerBoolConversionError")
    assert ex.inputs[0].traced_for == "vmap"
    assert any("not recorded" in n for n in ex.notes)


# ---------------------------------------------------------------------- other behaviour
def test_other_errors_pass_through():
    exc = _raise(lambda: 1 / 0)
    assert jaxviz.explain(exc) is None and not errors.is_tracer_error(exc)
    exc = _raise(len, 3)
    assert jaxviz.explain(exc) is None
    lines = errors.format_user_error(exc)
    assert not any("fix:" in line for line in lines)


def test_capture_leaves_the_exception_unchanged():
    with_capture = _raise(scale, jnp.ones(3), True)
    internals.uninstall_tracer_error_capture()
    try:
        without = _raise(scale, jnp.ones(3), True)
    finally:
        internals.install_tracer_error_capture()
    assert type(with_capture) is type(without) and with_capture.args == without.args
    assert internals.captured_tracer_error(without) is None
    assert jaxviz.explain(with_capture) is jaxviz.explain(with_capture)  # cached


def test_renderings():
    _, ex = _explain(gated, jnp.ones(3), jnp.ones(3))
    bundle = ex._repr_mimebundle_()
    assert bundle["text/plain"] == ex.text()
    page = bundle["text/html"]
    assert "<mark" in page and "s &gt; 0</mark>" in page and "jnp.where(s &gt; 0, y, -y)" in page
    assert "JAX&#x27;s message" in page or "JAX's message" in page
    dot = ex.to_dot()
    assert dot.count('color="#D9534F" penwidth=2.5') >= 5  # path edges highlighted
    from rich.console import Console

    console = Console(file=io.StringIO(), width=120)
    console.print(ex)
    out = console.file.getvalue()
    assert "TracerBoolConversionError" in out and "reduce_sum" in out and "jnp.where" in out


def test_format_user_error_uses_the_explanation():
    exc = _raise(scale, jnp.ones(3), True)
    lines = errors.format_user_error(exc)
    text = "\n".join(lines)
    assert "neg is traced because it is argument 1 of scale" in text and "fix: Mark neg static" in text
    assert "    if neg:" in lines and "       ^^^" in lines


# ---------------------------------------------------------------------- IPython
@pytest.fixture()
def shell():
    from IPython.core.interactiveshell import InteractiveShell

    sh = InteractiveShell.instance()
    before = sh.custom_exceptions
    sh.run_cell("%load_ext jaxviz")
    yield sh
    sh.run_cell("%unload_ext jaxviz")
    assert sh.custom_exceptions == before


def test_ipython_hook_explains_an_ordinary_cell(shell, capsys):
    shell.run_cell("import jax, jax.numpy as jnp\n"
                   "@jax.jit\n"
                   "def f(x, neg):\n"
                   "    if neg:\n"
                   "        return -x\n"
                   "    return x\n")
    capsys.readouterr()
    result = shell.run_cell("kept = 41 + 1\nf(jnp.ones(3), True)\n")
    out = capsys.readouterr().out
    assert isinstance(result.error_in_exec, jax.errors.TracerBoolConversionError)
    assert shell.user_ns["kept"] == 42
    start = out.index("jaxviz: TracerBoolConversionError")
    assert "line 4" in out[start:] and "static_argnames=('neg',)" in out
    assert "`neg` is traced because it is argument 1 of `f`" in out
    # Under the explanation: the full traceback folded (HTML), then only the user's frames
    assert "<IPython.core.display.HTML object>" in out[start:]
    short = out[out.index("TracerBoolConversionError\x1b[0m: Attempted boolean conversion"):]
    assert "Traceback" not in short and "jax/_src" not in short and "site-packages" not in short
    assert "line 2\x1b[0m\n    f(jnp.ones(3), True)\n" in short
    assert ", in f\x1b[0m\n    if neg:\n" in short
    assert "run %tb" in short and len(short.splitlines()) == 6, short
    shell.run_cell("%tb")  # the full traceback is still there
    full = capsys.readouterr().out
    assert "Traceback" in full and "jax/_src/core.py" in full

    result = shell.run_cell("1 / 0")
    out = capsys.readouterr().out
    assert isinstance(result.error_in_exec, ZeroDivisionError)
    assert "jaxviz" not in out and "ZeroDivisionError" in out


def test_ipython_hook_inside_a_jaxpr_cell(shell, capsys):
    shell.run_cell("import jax.numpy as jnp\nx = jnp.ones(3)\nneg = jnp.array(True)")
    shell.user_ns.pop("z", None)  # the shell is shared with other test modules
    capsys.readouterr()
    result = shell.run_cell("%%jaxpr\nz = x * 2\nif neg:\n    z = -z\n")
    out = capsys.readouterr().out
    assert isinstance(result.error_in_exec, jax.errors.TracerBoolConversionError)
    assert "z" not in shell.user_ns
    ex = jaxviz.explain(result.error_in_exec)
    assert ex.input_names == ["neg"] and ex.inputs[0].traced_for == "cell"
    assert ex.line.cell_line == 2 and ex.fixes[0].code == "%%jaxpr --static neg"
    assert "args[0]" not in out and "cell line 2" in out and "%%jaxpr --static neg" in out


def test_unload_restores_jax_and_a_reload_explains_again(capsys):
    from IPython.core.interactiveshell import InteractiveShell

    sh = InteractiveShell.instance()
    loaded = "jaxviz" in sh.extension_manager.loaded
    if loaded:  # another test module's shell: start from an unloaded extension
        sh.run_line_magic("unload_ext", "jaxviz")
    e = jax.errors
    built = (e.TracerBoolConversionError, e.ConcretizationTypeError, e.TracerIntegerConversionError,
             e.NonConcreteBooleanIndexError, e.TracerArrayConversionError)

    def current():  # what the capture wraps of JAX's public errors (the rest: test_jax_internals)
        return [c.__dict__["__init__"] for c in built]

    internals.uninstall_tracer_error_capture()
    originals = current()

    sh.run_line_magic("load_ext", "jaxviz")
    try:
        assert internals.tracer_error_capture_installed()  # load installs what unload removed
        assert all(a is not b for a, b in zip(current(), originals))
        sh.run_line_magic("unload_ext", "jaxviz")
        assert all(a is b for a, b in zip(current(), originals)), "unload left JAX patched"
        assert not internals.tracer_error_capture_installed()
        assert internals.captured_tracer_error(_raise(scale, jnp.ones(3), True)) is None

        sh.run_line_magic("load_ext", "jaxviz")
        sh.run_cell("import jax, jax.numpy as jnp\n"
                    "@jax.jit\n"
                    "def g(x, neg):\n"
                    "    return -x if neg else x\n")
        capsys.readouterr()
        result = sh.run_cell("g(jnp.ones(3), True)")
        out = capsys.readouterr().out
        assert isinstance(result.error_in_exec, jax.errors.TracerBoolConversionError)
        assert "`neg` is traced because it is argument 1 of `g`" in out
        assert jaxviz.explain(result.error_in_exec).input_names == ["neg"]
    finally:
        sh.run_line_magic("unload_ext", "jaxviz")
        if loaded:
            sh.run_line_magic("load_ext", "jaxviz")
    assert all(a is b for a, b in zip(current(), originals))


@jax.jit
def deep(x, ws, threshold):
    for w in ws:
        x = jnp.tanh(x @ w)
    loss = (x ** 2).mean()
    if loss > threshold:
        return x
    return -x


def test_long_provenance_is_grouped_and_drawn_near_the_value():
    _, ex = _explain(deep, jnp.ones((2, 4)), [jnp.eye(4)] * 60, 0.5)
    assert ex.value_name == "loss > threshold"
    bases = [i.base_name for i in ex.inputs]
    assert bases.count("ws") == 60 and "x" in bases and "threshold" in bases
    assert "`ws` (60 arrays)" in ex.text() and "the 60 arrays in `ws` are traced" in ex.text()
    assert ex.truncated and len(ex.graph.nodes) <= provenance.MAX_DRAWN_NODES + provenance.MAX_DRAWN_INPUTS + 3
    assert any(n.label.startswith("… ") for n in ex.graph.nodes)
    _assert_path(ex, "threshold")
    assert len(ex.path_lines()) <= 17


def test_import_patches_nothing_and_a_trace_captures_while_it_runs(tmp_path):
    """``import jaxviz`` leaves JAX's tracer errors alone; ``jaxviz.trace`` installs the
    capture for the trace only, ``jaxviz.capture_tracer_errors()`` for its block, and the
    errors raised there carry what was captured."""
    script = tmp_path / "script.py"
    script.write_text(
        "import jax, jax.numpy as jnp, jaxviz\n"
        "from jaxviz import _jax_internals as internals\n"
        "assert not internals.tracer_error_capture_installed(), 'import jaxviz patched JAX'\n"
        "def f(x, neg):\n"
        "    return -x if neg else x\n"
        "try:\n"
        "    jaxviz.trace(f, jnp.ones(3), True)\n"
        "except Exception as exc:\n"
        "    assert internals.captured_tracer_error(exc) is not None\n"
        "    assert jaxviz.explain(exc).inputs[0].name == 'neg'\n"
        "else:\n"
        "    raise AssertionError('no tracer error')\n"
        "assert not internals.tracer_error_capture_installed(), 'the capture outlived the trace'\n"
        "g = jax.jit(f)\n"
        "with jaxviz.capture_tracer_errors():\n"
        "    try:\n"
        "        g(jnp.ones(3), True)\n"
        "    except Exception as exc:\n"
        "        assert jaxviz.explain(exc).inputs[0].name == 'neg'\n"
        "    else:\n"
        "        raise AssertionError('no tracer error')\n"
        "assert not internals.tracer_error_capture_installed(), 'the capture outlived its block'\n"
        "print('ok')\n")
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "ok", out.stderr
