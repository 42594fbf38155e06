"""A history's record and the registry its modules add to (see the package docstring)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class History:
    name: str
    function: str  # the compiled function's name, as the user named it
    kind: str  # the cause's kind, in jaxviz's vocabulary (``Cause.kind``)
    path: str  # the argument (and field) path, as the user wrote it
    run: Callable[[], None]  # runs the program; its last compile of ``function`` is scored
    url: str  # the thread it imitates
    says: tuple[str, ...] = ()  # words the explanation must contain, in this order
    requires: str | None = None  # the library it needs
    devices: int = 1  # host devices it needs
    compiled_as: str | None = None  # JAX's name of the compiled program, where it differs


HISTORIES: list[History] = []


def history(name: str, function: str, kind: str, path: str, *, url: str,
            says: tuple[str, ...] = (), requires: str | None = None, devices: int = 1,
            compiled_as: str | None = None) -> Callable[[Callable[[], None]], Callable[[], None]]:
    """Registers the decorated program as a history."""
    def add(run: Callable[[], None]) -> Callable[[], None]:
        HISTORIES.append(History(name, function, kind, path, run, url, says, requires,
                                 devices, compiled_as))
        return run
    return add
