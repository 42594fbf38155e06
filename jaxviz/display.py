"""One way every jaxviz object shows itself.

The objects (``Program``, ``ProgramDiff``, ``Explanation``, the watch and its ``CompileLog``
and ``Summary``, ``RunReport``, ``DeviceTable``) are data that inherit ``Displayed``: the
hooks IPython and ``rich`` look for (``_repr_mimebundle_``, ``_repr_html_``,
``__rich_console__``) ask this registry for the view registered for the object's class.
``jaxviz.render.install()`` fills the registry (called once by ``jaxviz.wiring``, when
``jaxviz`` is imported), so no feature imports a renderer. A leaf: imports nothing of jaxviz.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

Renderer = Callable[..., Any]

# class → view name ("mimebundle", "rich", "dot", "svg", "payload", …) → renderer(obj, …)
_VIEWS: dict[type, dict[str, Renderer]] = {}


def register(cls: type, **views: Renderer) -> None:
    """How objects of ``cls`` (and its subclasses) draw: ``mimebundle=fn(obj) -> dict``,
    ``rich=fn(obj) -> iterable of renderables``, and any named view the class asks for."""
    _VIEWS.setdefault(cls, {}).update(views)


def renderer(obj: Any, view: str) -> Renderer:
    """The renderer of ``view`` registered for ``obj``'s class or the nearest base."""
    for klass in type(obj).__mro__:
        found = _VIEWS.get(klass, {}).get(view)
        if found is not None:
            return found
    raise RuntimeError(f"no {view!r} view of {type(obj).__name__} is registered: "
                       "`import jaxviz` registers jaxviz's renderers")


def render(obj: Any, view: str, *args: Any, **kwargs: Any) -> Any:
    """``obj`` drawn by its registered ``view``."""
    return renderer(obj, view)(obj, *args, **kwargs)


class Displayed:
    """The notebook's and the terminal's hooks, answered by the registered renderers:
    a MIME bundle for IPython and Jupyter, renderables for ``rich.print``."""

    __slots__ = ()

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        return render(self, "mimebundle")

    def _repr_html_(self) -> str | None:
        return self._repr_mimebundle_().get("text/html")

    def __rich_console__(self, console: Any, options: Any) -> Iterator[Any]:
        yield from render(self, "rich")
