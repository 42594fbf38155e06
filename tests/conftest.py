import importlib.util
import os

import background
import pytest
from browser_lab import BUILT, CHROMIUM_ARGS, chromium_path, start_lab

# Tests run on the CPU (CI has no accelerator).
os.environ.setdefault("JAX_PLATFORMS", "cpu")
# XLA's CPU backend as the tests need it (``background.TEST_XLA_FLAGS``), here and in the
# processes the tests start; one that sets XLA_FLAGS for a process adds to these or
# replaces them.
os.environ["XLA_FLAGS"] = f"{background.TEST_XLA_FLAGS} {os.environ.get('XLA_FLAGS', '')}".strip()

# The core suite (``pytest -m core``): what must pass on every supported JAX release, run by
# scripts/test_jax_versions.sh in venvs holding JAX and jaxviz only (tests of Flax, Equinox
# or optax there skip: those libraries pin JAX ranges of their own).
CORE_TEST_FILES = frozenset({
    "test_jax_internals.py", "test_tracing.py", "test_call_scopes.py", "test_render.py",
    "test_magics.py", "test_kernel.py", "test_recompiles.py", "test_errors.py",
    "test_jax_versions.py",
})


# Modules written against Flax and optax at module level: not collected where those are not
# installed (the core suite's venvs), as the other tests of those libraries skip there.
collect_ignore = [] if importlib.util.find_spec("flax") else ["test_phases.py", "test_diff.py", "test_first_view.py",
                                                                   "test_chains_browser.py"]


# Tests that start a real kernel or a browser (seconds to a minute each): marked ``slow``.
# The default run (and CI) runs them; ``pytest -m "not slow"`` is the quick loop.
SLOW_TEST_FILES = frozenset({
    "test_kernel.py", "test_demo_notebooks.py", "test_labextension_browser.py",
    "test_labextension_views_browser.py", "test_recompiles_browser.py", "test_chains_browser.py",
})
SLOW_FIXTURES = frozenset({"kernel", "loaded", "lab"})  # a real kernel, a JupyterLab
# Tests that drive Chromium against JupyterLab: marked ``browser``. They mostly wait on the
# browser, the server and kernels: ``scripts/test.sh`` runs them in a pytest process of their
# own beside the rest, on the core the rest leaves idle. That process collects only the files
# named ``*_browser.py`` (importing every module would cost it 15 s of CPU): a browser test
# anywhere else is an error of collection.
BROWSER_FIXTURES = frozenset({"lab", "lab_server", "browser"})
BROWSER_FILE_SUFFIX = "_browser.py"
# The TypeScript's unit tests (Node.js's test runner, beside the Python drawing they are
# compared with): marked ``typescript``. ``scripts/test.sh`` runs them in the browser tests'
# process, after the TypeScript's linters: that process ends before the rest.
TYPESCRIPT_TEST_FILES = frozenset({"test_labextension_unit.py"})


def pytest_configure(config):
    config.addinivalue_line("markers", "core: the core suite, run on every supported JAX")
    config.addinivalue_line("markers", "slow: starts a real kernel or a browser "
                            "(deselect with -m 'not slow' for a quick loop)")
    config.addinivalue_line("markers", "browser: drives Chromium against a real JupyterLab")
    config.addinivalue_line("markers", "typescript: the JupyterLab extension's TypeScript unit tests")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.path.name in CORE_TEST_FILES:
            item.add_marker(pytest.mark.core)
        fixtures = set(getattr(item, "fixturenames", ()))
        if item.path.name in SLOW_TEST_FILES or SLOW_FIXTURES & fixtures:
            item.add_marker(pytest.mark.slow)
        if item.path.name in TYPESCRIPT_TEST_FILES:
            item.add_marker(pytest.mark.typescript)
        if BROWSER_FIXTURES & fixtures:
            item.add_marker(pytest.mark.browser)
            if not item.path.name.endswith(BROWSER_FILE_SUFFIX):
                raise pytest.UsageError(f"{item.nodeid} drives a browser: move it to a file named "
                                        f"*{BROWSER_FILE_SUFFIX}, the files scripts/test.sh runs them from")
    items[:] = background.last_the_modules_with_jobs(items)


def pytest_collection_finish(session):
    """The work in other processes that the modules to run declared (``tests/background.py``)
    starts now, beside the tests."""
    if not session.config.option.collectonly:
        background.start(session.items)


def pytest_sessionfinish(session):
    background.stop()


@pytest.fixture()
def capture():
    """The capture of JAX's tracer errors installed for one test, and the state before
    it restored (``%load_ext jaxviz`` installs it, ``%unload_ext jaxviz`` removes it,
    ``jaxviz.trace`` holds it while it traces)."""
    from jaxviz import _jax_internals as internals

    was = internals.tracer_error_capture_installed()
    internals.install_tracer_error_capture()
    yield
    if was:
        internals.install_tracer_error_capture()
    else:
        internals.uninstall_tracer_error_capture()


@pytest.fixture(scope="session")
def lab_server(tmp_path_factory):
    """A real JupyterLab server (``tests/browser_lab.py``), started once for the session:
    each browser-test module gets it through ``lab``."""
    if not BUILT.exists():
        pytest.fail("jaxviz/labextension is not built: run `bash scripts/setup_env.sh test`")
    server = start_lab(tmp_path_factory.mktemp("lab"))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def lab(lab_server):
    """The JupyterLab server for one browser-test module, as a new server would be: no
    kernel running, the settings it started with (its notebooks' kernels shut down after
    the module)."""
    lab_server.fresh()
    yield lab_server
    lab_server.shutdown_kernels()


@pytest.fixture(scope="module")
def browser():
    """Headless Chromium (Debian's) for one browser-test module."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS, headless=True)
        try:
            yield b
        finally:
            b.close()
