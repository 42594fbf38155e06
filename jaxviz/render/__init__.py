"""Renderers of the graph model: DOT/SVG (``dot``), an HTML listing that needs no
Graphviz (``html``), ``rich`` for terminals (``terminal``) and the notebook MIME bundle
(``notebook``). Each reads the model; none changes it. Importing this package registers
them as the way a ``Program`` draws itself (``program.RENDERERS``)."""

from ..program import RENDERERS
from .dot import program_dot
from .notebook import program_mimebundle
from .payload import program_payload
from .terminal import program_renderables

RENDERERS.dot = program_dot
RENDERERS.payload = program_payload
RENDERERS.mimebundle = program_mimebundle
RENDERERS.rich = program_renderables
