"""Where a frame's code lives: the standard library, an installed library (and which one),
jaxviz itself, or the user's own code.

Libraries are found wherever Python installs them, not only in this environment's
``site-packages``: the user's site-packages (``pip install --user``), the system's
``dist-packages`` that a Debian Python or a ``--system-site-packages`` venv sees, and any
folder on ``sys.path`` that holds installed distributions (``*.dist-info``: ``pip install
--target``, a ``PYTHONPATH`` of wheels). A project's own folder holds none, even when it
is installed in editable mode (its ``.dist-info`` goes to site-packages)."""

from __future__ import annotations

import functools
import os
import site
import sys
import sysconfig

PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def _folder(path: str) -> str:
    return os.path.join(os.path.abspath(path), "")


def _holds_distributions(folder: str) -> bool:
    try:
        return any(name.endswith(".dist-info") for name in os.listdir(folder))
    except OSError:
        return False


@functools.lru_cache(maxsize=4)
def _site_folders(path: tuple[str, ...]) -> tuple[str, ...]:
    """The folders installed libraries live in, for this ``sys.path``; nested ones first."""
    found = {sysconfig.get_path("purelib"), sysconfig.get_path("platlib"), *site.getsitepackages()}
    if site.ENABLE_USER_SITE:
        found.add(site.getusersitepackages())
    found.update(p for p in path if p and os.path.isdir(p) and _holds_distributions(p))
    return tuple(sorted({_folder(p) for p in found if p}, key=len, reverse=True))


def site_folders() -> tuple[str, ...]:
    """Where installed libraries live (see the module's docstring), longest first."""
    return _site_folders(tuple(sys.path))


def _stdlib_folders() -> frozenset[str]:
    return frozenset(_folder(p) for p in (sysconfig.get_path("stdlib"), sysconfig.get_path("platstdlib")) if p)


_STDLIB = _stdlib_folders()


@functools.lru_cache(maxsize=8192)
def is_user_file(filename: str) -> bool:
    """User code: anything outside the standard library, the installed libraries and jaxviz."""
    return not filename.startswith((*_STDLIB, PACKAGE_DIR, *site_folders()))


@functools.lru_cache(maxsize=4096)
def installed_package(filename: str) -> str | None:
    """``mctx`` for ``…/site-packages/mctx/_src/policies.py``; None for a file that is not an
    installed library's."""
    for folder in site_folders():
        if filename.startswith(folder):
            return filename[len(folder):].split(os.sep, 1)[0].removesuffix(".py")
    return None
