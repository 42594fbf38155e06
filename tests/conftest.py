import os

import pytest

# Tests run on the CPU (CI has no accelerator).
os.environ.setdefault("JAX_PLATFORMS", "cpu")


@pytest.fixture()
def capture():
    """The capture of JAX's tracer errors installed for one test, and the state before
    it restored (``import jaxviz`` installs it, ``%unload_ext jaxviz`` removes it)."""
    from jaxviz import _jax_internals as internals

    was = internals.tracer_error_capture_installed()
    internals.install_tracer_error_capture()
    yield
    if was:
        internals.install_tracer_error_capture()
    else:
        internals.uninstall_tracer_error_capture()
