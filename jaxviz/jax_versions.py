"""The JAX releases jaxviz supports. ``import jaxviz`` checks the installed JAX against them
before anything touches JAX's private modules, so that an unsupported JAX gets one line
saying what to install instead of an AttributeError from deep inside."""

from __future__ import annotations

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

# The same range as pyproject.toml's ``jax`` dependency (a test checks they agree), and
# scripts/test_jax_versions.sh tests the latest patch of each minor in it.
JAX_REQUIREMENT = ">=0.6,<0.11"
SUPPORTED_JAX = "0.6 to 0.10"


class UnsupportedJaxError(ImportError):
    """The installed JAX is outside ``JAX_REQUIREMENT``. IPython (``%load_ext jaxviz``,
    ``import jaxviz`` in a notebook) shows the message alone, without a traceback."""

    def _render_traceback_(self) -> list[str]:
        return [f"{type(self).__name__}: {self}"]


def is_supported_jax(version: str) -> bool:
    """Whether JAX ``version`` (``jax.__version__``) is in ``JAX_REQUIREMENT``; a
    development build of a supported minor counts, one of the next minor does not."""
    try:
        parsed = Version(version)
    except InvalidVersion:
        return False
    return SpecifierSet(JAX_REQUIREMENT).contains(parsed, prereleases=True)


def unsupported_jax_message(version: str) -> str:
    """One line: which JAX releases are supported, which one is installed, what to do."""
    return (f"jaxviz supports JAX {SUPPORTED_JAX} but JAX {version} is installed: "
            f"pip install 'jax{JAX_REQUIREMENT}'")


def check_jax_version(version: str) -> None:
    """Raise ``UnsupportedJaxError`` (one line) when JAX ``version`` is not supported."""
    if not is_supported_jax(version):
        raise UnsupportedJaxError(unsupported_jax_message(version))
