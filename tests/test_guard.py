"""Recompile guards (jaxviz.expect_compiles, no_recompiles) and the pytest plugin."""

import functools
import importlib.metadata
import subprocess
import sys
import textwrap
import threading

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxviz

pytest_plugins = ["pytester"]


# Each test jits functions of its own: jaxviz knows a function by its code, so a new
# object with the same code compiling again is a recompile (rightly: JAX compiles again).


def test_within_limits_cache_hits_cost_nothing():
    @jax.jit
    def step(x, scale):
        return jnp.tanh(x * scale).sum()

    with jaxviz.expect_compiles(step=2) as guard:
        for _ in range(5):
            step(jnp.ones(3), 2.0)  # one compile, then cache hits
        step(jnp.ones(4), 2.0)
    assert guard.counts() == {"step": 2}


def test_error_carries_cause_argument_call_site_and_suggestion():
    @jax.jit
    def step(x, scale):
        return jnp.tanh(x * scale).sum()

    with pytest.raises(jaxviz.RecompileError) as info:
        with jaxviz.expect_compiles(step=1):
            step(jnp.ones(8), 2.0)
            step(jnp.ones(16), 2.0)  # the extra compile
    line = sys._getframe().f_lineno - 1
    text = str(info.value)
    assert "`step` compiled 2 times, 1 allowed by expect_compiles(step=1)" in text
    assert "cause: `x` changed shape (8,) → (16,) on axis 0" in text
    assert f"test_guard.py:{line} because" in text  # where the extra compile was called
    assert "suggestion:" in text and "pad the inputs to one size" in text
    (violation,) = info.value.violations
    assert violation.function == "step" and len(violation.extra) == 1
    assert violation.extra[0].causes[0].path == "x"


def test_no_recompiles_allows_first_compiles_only():
    @jax.jit
    def step(x, scale):
        return jnp.tanh(x * scale).sum()

    @jax.jit
    def other(x, scale):
        return jnp.cos(x * scale).sum()

    with jaxviz.no_recompiles():
        step(jnp.ones(3), 2.0)  # first compiles: fine
        other(jnp.ones(3), 1.0)
        step(jnp.ones(3), 2.0)  # a cache hit
    with pytest.raises(jaxviz.RecompileError, match=r"`step` recompiled 1 time under no_recompiles\(\)") as info:
        with jaxviz.no_recompiles():
            step(jnp.ones(3), 2)  # a weakly typed int scalar instead of a float: new program
    assert "scale" in str(info.value)


def test_no_recompiles_counts_compiles_made_before_any_watch():
    """The usual case: warm up (no watch listening), then guard the loop; a new shape inside
    is the function's second compile, whose earlier one jaxviz reads from JAX's cache."""
    @jax.jit
    def step(x, scale):
        return jnp.tanh(x * scale).sum()

    assert jaxviz.recompiles.active_watches() == []
    step(jnp.ones(32), 2.0)  # the warm-up: no watch sees it
    with pytest.raises(jaxviz.RecompileError) as info:
        with jaxviz.no_recompiles():
            step(jnp.ones(32), 2.0)  # a cache hit
            step(jnp.ones(48), 2.0)
    (violation,) = info.value.violations
    (extra,) = violation.extra
    assert extra.count == 2 and not extra.first_compile
    assert "cause: `x` changed shape (32,) → (48,) on axis 0" in str(info.value)


def test_expect_compiles_names_the_change_from_a_compile_before_the_guard():
    @jax.jit
    def step(x, n):
        return jnp.tanh(x).sum() * n

    step(jnp.ones(3, jnp.float32), 1.0)
    with jaxviz.expect_compiles(step=1) as guard:  # one compile allowed in the block
        step(jnp.ones(3, jnp.bfloat16), 1.0)
    (event,) = guard.events
    assert event.count == 2
    assert [(c.kind, c.path) for c in event.causes] == [("dtype", "x")]
    with pytest.raises(jaxviz.RecompileError, match="compiled for the 3rd time"):
        with jaxviz.expect_compiles(recompiles=False):
            step(jnp.ones(4, jnp.bfloat16), 1.0)


def test_a_warm_up_on_numpy_batches_differs_from_the_guarded_call_by_shape_only():
    """JAX's trace cache keeps no placement: a numpy batch before and inside the guard is
    not called a change of placement."""
    @jax.jit
    def step(w, batch):
        return (batch @ w).mean()

    w = jnp.ones(4)
    step(w, np.ones((8, 4), np.float32))
    with pytest.raises(jaxviz.RecompileError) as info:
        with jaxviz.no_recompiles():
            step(w, np.ones((12, 4), np.float32))
    (violation,) = info.value.violations
    assert [(c.kind, c.path, c.axis) for c in violation.extra[0].causes] == [("shape", "batch", 0)]


def test_a_filter_jit_warm_up_is_counted_and_named_in_the_users_words():
    """Through a jit-like wrapper (``eqx.filter_jit``, as in Equinox's examples), the calls
    read back from JAX's cache are the wrapper's; the cause still names the user's ``x``."""
    import equinox as eqx

    @eqx.filter_jit
    def f(x):
        return x * 2

    @eqx.filter_jit
    def g(x):
        return x + 1

    f(jnp.ones(3))
    f(jnp.ones(4))
    with pytest.raises(jaxviz.RecompileError) as info:
        with jaxviz.no_recompiles() as guard:
            g(jnp.ones(3))  # a first compile: another function's entries do not count
            f(jnp.ones(5))
    (violation,) = info.value.violations
    assert violation.function == "f" and violation.extra[0].count == 3
    cause = violation.extra[0].causes[0]  # against (3,) or (4,): both compiled, both one change
    assert (cause.kind, cause.path, cause.after, cause.axis) == ("shape", "x", (5,), 0)
    assert [e.count for e in guard.events if e.name == "g"] == [1]


def test_no_recompiles_through_static_arguments_compiled_before():
    @functools.partial(jax.jit, static_argnames=("mode",))
    def step(x, *, mode="train"):
        return x.sum() if mode == "train" else x.mean()

    step(jnp.ones(3), mode="train")
    with pytest.raises(jaxviz.RecompileError, match="static argument `mode` changed 'train' → 'eval'"):
        with jaxviz.no_recompiles():
            step(jnp.ones(3), mode="eval")


def test_nested_guards_each_see_their_block():
    @jax.jit
    def step(x, scale):
        return jnp.tanh(x * scale).sum()

    with jaxviz.expect_compiles(step=3) as outer:
        step(jnp.ones(1), 1.0)
        with pytest.raises(jaxviz.RecompileError, match="no_recompiles"):
            with jaxviz.no_recompiles() as inner:
                step(jnp.ones(2), 1.0)
        step(jnp.ones(3), 1.0)
    assert inner.counts() == {"step": 1}
    assert outer.counts() == {"step": 3}


def test_compiles_in_another_thread_are_caught():
    @jax.jit
    def step(x, scale):
        return jnp.tanh(x * scale).sum()


    def work():
        step(jnp.ones(5), 1.0)
        step(jnp.ones(6), 1.0)

    with pytest.raises(jaxviz.RecompileError) as info:
        with jaxviz.expect_compiles(step=1):
            worker = threading.Thread(target=work, name="loader-thread")
            worker.start()
            worker.join()
    text = str(info.value)
    assert "(thread loader-thread)" in text and "changed shape (5,) → (6,)" in text


def test_decorator_form_guards_every_call():
    @jax.jit
    def step(x, scale):
        return jnp.tanh(x * scale).sum()


    @jaxviz.expect_compiles(step=1)
    def run(*sizes):
        for n in sizes:
            step(jnp.ones(n), 1.0)

    run(2, 2)
    run(3)  # a new guard per call: one compile each time
    with pytest.raises(jaxviz.RecompileError, match="expect_compiles"):
        run(4, 5)


def test_max_compiles_is_a_budget_for_every_function():
    @jax.jit
    def step(x, scale):
        return jnp.tanh(x * scale).sum()

    @jax.jit
    def other(x, scale):
        return jnp.cos(x * scale).sum()

    budget = jaxviz.expect_compiles(max_compiles=2).start()
    step(jnp.ones(1), 1.0)
    step(jnp.ones(2), 1.0)
    other(jnp.ones(1), 1.0)
    assert budget.violations() == []
    step(jnp.ones(3), 1.0)
    budget.stop()
    (violation,) = budget.violations()
    assert violation.rule == "max_compiles=2" and violation.compiles == 3
    assert budget.new_violations()[0].extra == violation.extra
    assert budget.new_violations() == []  # reported once


def test_bad_limits_say_what_is_wrong():
    with pytest.raises(TypeError, match=r"whole number >= 0: got step='one'"):
        jaxviz.expect_compiles(step="one")
    with pytest.raises(TypeError, match="max_compiles=-1"):
        jaxviz.expect_compiles(max_compiles=-1)


def test_a_plain_script(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent("""
        import sys
        import jax, jax.numpy as jnp
        import jaxviz

        @jax.jit
        def train_step(w, batch):
            return w - 0.1 * (batch @ w).mean()

        w = jnp.ones(4)
        try:
            with jaxviz.expect_compiles(train_step=1):
                for n in (8, 8, 12):
                    w = train_step(w, jnp.ones((n, 4)))
        except jaxviz.RecompileError as exc:
            print(exc)
        print("IPython running:", "IPython" in sys.modules and
              sys.modules["IPython"].get_ipython() is not None)
    """))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=120, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "`train_step` compiled 2 times, 1 allowed" in out.stdout
    assert "`batch` changed shape (8, 4) → (12, 4)" in out.stdout
    assert "at train.py:14 because" in out.stdout
    assert "IPython running: False" in out.stdout


# ---------------------------------------------------------------------- the pytest plugin
def test_plugin_is_registered_through_its_entry_point():
    plugins = {ep.name: ep.value for ep in importlib.metadata.entry_points(group="pytest11")}
    assert plugins.get("jaxviz") == "jaxviz.pytest_plugin"


STEP = """
import jax, jax.numpy as jnp, pytest

@jax.jit
def train_step(x):
    return (x * 2).sum()
"""


def test_plugin_marker(pytester):
    pytester.makepyfile(STEP + """
@pytest.mark.max_compiles(train_step=1)
def test_steady():
    for _ in range(3):
        train_step(jnp.ones(3))

@pytest.mark.max_compiles(train_step=1)
def test_growing():
    for n in (4, 5):
        train_step(jnp.ones(n))
""")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([
        "*RecompileError*",
        "*`train_step` compiled 2 times, 1 allowed by expect_compiles(train_step=1)*",
        "*cause: `x` changed shape (4,) → (5,)*",
        "*suggestion:*",
        "*jaxviz: compiles per function*",
        "train_step  3 compiles",
    ])


def test_plugin_no_recompiles_marker_counts_a_warm_up_in_another_test(pytester):
    pytester.makepyfile(STEP + """
def test_warm_up():
    train_step(jnp.ones(3))

@pytest.mark.no_recompiles
def test_same_shape():
    train_step(jnp.ones(3))

@pytest.mark.no_recompiles
def test_new_shape():
    train_step(jnp.ones(5))
""")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*_ test_new_shape _*", "*`train_step` recompiled 1 time under no_recompiles()*",
                                 "*cause: `x` changed shape (3,) → (5,)*"])


def test_plugin_fixture(pytester):
    pytester.makepyfile(STEP + """
def test_counts(jaxviz_compiles):
    train_step(jnp.ones(2)); train_step(jnp.ones(2))
    assert jaxviz_compiles.counts() == {"train_step": 1}

def test_limit(jaxviz_compiles):
    jaxviz_compiles.limit(train_step=1)
    train_step(jnp.ones(6)); train_step(jnp.ones(7))
""")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*test_limit*", "*`train_step` compiled 2 times*"])


def test_plugin_session_budget(pytester):
    pytester.makepyfile(STEP + """
def test_a():
    train_step(jnp.ones(1)); train_step(jnp.ones(2))

def test_b():
    train_step(jnp.ones(2))  # a cache hit

def test_c():
    train_step(jnp.ones(3))  # the third compile in the session
""")
    result = pytester.runpytest("-p", "no:cacheprovider", "--jaxviz-max-compiles", "2")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*_ test_c _*", "*allowed by max_compiles=2*",
                                 "*jaxviz: compiles per function*", "train_step  3 compiles"])
    quiet = pytester.runpytest("-p", "no:cacheprovider")  # no option, no marker: no summary
    quiet.assert_outcomes(passed=3)
    assert "jaxviz: compiles per function" not in quiet.stdout.str()
    listed = pytester.runpytest("-p", "no:cacheprovider", "--jaxviz-summary")  # counts, no budget
    listed.assert_outcomes(passed=3)
    listed.stdout.fnmatch_lines(["*jaxviz: compiles per function*", "train_step  3 compiles"])
