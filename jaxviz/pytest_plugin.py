"""pytest plugin (entry point ``jaxviz`` in ``pytest11``): compile budgets for tests.

- ``@pytest.mark.max_compiles(train_step=1)``: the test fails with ``jaxviz.RecompileError``
  when ``train_step`` compiles more than once while it runs; ``max_compiles(2)`` limits
  every function, ``max_compiles(0, step=1)`` both.
- ``@pytest.mark.no_recompiles``: the test fails when a function compiles again, its
  earlier compiles counted however jaxviz learns of them (JAX's own cache included: a
  warm-up in another test, or before any watch, counts).
- the ``jaxviz_compiles`` fixture: a guard running for the test; ``.counts()`` so far,
  ``.limit(train_step=1)`` checked when the test body ends.
- ``--jaxviz-max-compiles N``: no function may compile more than N times in the whole
  session; the test during which one goes past it fails, saying why.
- at the end, a terminal summary lists the functions and their compile counts (every
  compile of the session with ``--jaxviz-max-compiles`` or ``--jaxviz-summary``; else
  those seen by the markers and fixtures).

The plugin loads with pytest wherever jaxviz is installed (``-p no:jaxviz`` turns it
off). Without the options, markers or fixture it watches nothing: no JAX listener is
registered.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from .guard import RecompileError, expect_compiles, no_recompiles

MARKER = "max_compiles"
NO_RECOMPILES = "no_recompiles"
_STATE = pytest.StashKey["_State"]()


class _State:
    def __init__(self) -> None:
        self.session: Any = None  # the session-wide guard (jaxviz.guard.expect_compiles)
        self.counts: Counter[str] = Counter()  # compiles seen by markers and fixtures


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("jaxviz", "jaxviz compile budgets")
    group.addoption("--jaxviz-max-compiles", type=int, default=None, metavar="N",
                    help="fail the test during which any jitted function compiles more "
                         "than N times in the session")
    group.addoption("--jaxviz-summary", action="store_true", default=False,
                    help="list every jitted function and its compile count at the end")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{MARKER}(n=None, **limits): fail the test when a jitted function "
                   "compiles more than limits[name] times (n: any other function) while it runs")
    config.addinivalue_line(
        "markers", f"{NO_RECOMPILES}: fail the test when a jitted function compiles again "
                   "(its compiles before the test count)")
    config.stash[_STATE] = _State()


def pytest_sessionstart(session: pytest.Session) -> None:
    config = session.config
    budget = config.getoption("--jaxviz-max-compiles")
    if budget is not None or config.getoption("--jaxviz-summary"):
        config.stash[_STATE].session = expect_compiles(max_compiles=budget).start()


def pytest_unconfigure(config: pytest.Config) -> None:
    state = config.stash.get(_STATE, None)
    if state is not None and state.session is not None:
        state.session.stop()


def _marker_guard(item: pytest.Item) -> Any:
    marker = item.get_closest_marker(MARKER)
    if marker is None:
        return no_recompiles() if item.get_closest_marker(NO_RECOMPILES) is not None else None
    if len(marker.args) > 1:
        raise pytest.UsageError(f"{item.nodeid}: @pytest.mark.{MARKER} takes at most one number "
                                f"(the limit for every function), got {marker.args}")
    every = marker.args[0] if marker.args else None
    return expect_compiles(dict(marker.kwargs), max_compiles=every)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Any:
    __tracebackhide__ = True
    state = item.config.stash[_STATE]
    guard = _marker_guard(item)
    if guard is not None:
        guard.start()
    try:
        result = yield
    finally:
        if guard is not None:
            guard.stop()
            state.counts.update(guard.counts())
    fixture = getattr(item, "funcargs", {}).get("jaxviz_compiles")
    for check in (guard, fixture):
        if check is not None:
            check.check()
    if state.session is not None and state.session.max_compiles is not None:
        found = state.session.new_violations()
        if found:
            raise RecompileError(found)
    return result


@pytest.fixture
def jaxviz_compiles(request: pytest.FixtureRequest) -> Any:
    """A compile guard running for this test: ``.counts()``, ``.limit(train_step=1)``."""
    guard = expect_compiles().start()
    yield guard
    guard.stop()
    request.config.stash[_STATE].counts.update(guard.counts())


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    state = config.stash.get(_STATE, None)
    if state is None:
        return
    counts = state.session.counts() if state.session is not None else state.counts
    if not counts:
        return
    terminalreporter.write_sep("=", "jaxviz: compiles per function")
    width = max(len(name) for name in counts)
    for name, n in counts.most_common():
        terminalreporter.write_line(f"{name:<{width}}  {n} compile{'s' * (n != 1)}")
