"""Renderers of the graph model: DOT/SVG (``dot``), an HTML listing that needs no
Graphviz (``html``), ``rich`` for terminals (``terminal``) and the notebook MIME bundle
(``notebook``). Each reads the model; none changes it."""
