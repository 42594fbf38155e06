"""``Marks``: what a drawing of the graph highlights (a diff's statuses, an explained
error's path). Data of the model: the features fill it, the DOT renderer draws it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from .graph import Item


@dataclass(frozen=True)
class Marks:
    """Per visible item: a status (a key of ``MARK_STYLE``) and a note added to its label
    and tooltip. Items without a status are drawn as usual. ``path``: items outlined in
    ``PATH_COLOR``, with the edges between two of them; ``path_ends`` are filled too."""

    status: Mapping[Item, str] = field(default_factory=dict)
    notes: Mapping[Item, str] = field(default_factory=dict)
    path: frozenset[Item] = frozenset()
    path_ends: frozenset[Item] = frozenset()

    def on_path(self, src: Item, dst: Item) -> bool:
        return src in self.path and dst in self.path
