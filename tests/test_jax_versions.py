"""The supported JAX range: the check ``import jaxviz`` makes, and its one-line message."""

import re
import sys
from pathlib import Path

import jax
import pytest

from jaxviz import jax_versions


@pytest.mark.parametrize("version, supported", [
    ("0.4.35", False), ("0.5.3", False), ("0.6.0", True), ("0.6.2", True), ("0.8.3", True),
    ("0.9.0.1", True), ("0.10.2", True), ("0.10.3.dev20260301", True),
    ("0.11.0.dev20260301", False), ("0.11.0", False), ("1.0.0", False), ("not-a-version", False),
])
def test_supported_versions(version, supported):
    assert jax_versions.is_supported_jax(version) is supported


def test_the_installed_jax_is_supported():
    assert jax_versions.is_supported_jax(jax.__version__), jax.__version__


def test_unsupported_jax_gets_one_line_saying_what_is_supported():
    with pytest.raises(jax_versions.UnsupportedJaxError) as info:
        jax_versions.check_jax_version("0.5.3")
    message = str(info.value)
    assert "\n" not in message
    assert "0.6 to 0.10" in message and "0.5.3" in message and "jax>=0.6,<0.11" in message
    assert isinstance(info.value, ImportError)  # what a failed import raises
    # IPython (``%load_ext jaxviz``, ``import jaxviz`` in a notebook) shows only this line.
    assert info.value._render_traceback_() == [f"UnsupportedJaxError: {message}"]
    jax_versions.check_jax_version(jax.__version__)  # no error


@pytest.mark.skipif(sys.version_info < (3, 11), reason="tomllib")
def test_the_range_is_the_one_pyproject_declares():
    import tomllib

    project = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())["project"]
    (jax_dep,) = [d for d in project["dependencies"] if re.match(r"jax\b", d)]
    assert jax_dep == "jax" + jax_versions.JAX_REQUIREMENT
