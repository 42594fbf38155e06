"""Notebooks run top to bottom by nbclient in a fresh ``python3`` kernel, in a process of
their own: ``execute_notebook`` (called from a test or a ``background`` job) starts this
file as a script, which reads the notebook from stdin and writes it with its outputs to
stdout. The script's one argument, JSON: ``timeout`` (per cell), ``cwd`` (the kernel's
working directory, or null), ``allow_errors``. Kept out of ``background``: the processes
that import that (``tests/test_corpus.py``'s) need no nbformat, whose import of
jsonschema costs 2.7 CPU-s."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import background
import nbformat
from nbclient import NotebookClient


def execute_notebook(nb: Any, timeout: float, *, cwd: Path | None = None,
                     allow_errors: bool = False) -> Any:
    """``nb`` run top to bottom in a fresh ``python3`` kernel, in ``cwd`` if given; the
    notebook with its outputs. A cell's error fails it unless ``allow_errors``."""
    args = [sys.executable, __file__, json.dumps(
        {"timeout": timeout, "cwd": str(cwd) if cwd else None, "allow_errors": allow_errors})]
    done = background.run(args, timeout=timeout * max(len(nb.cells), 1) + 120, input=nbformat.writes(nb))
    if done.returncode != 0:
        raise RuntimeError(f"the notebook failed to run:\n{done.stderr[-5000:]}")
    return nbformat.reads(done.stdout, as_version=4)


if __name__ == "__main__":
    options = json.loads(sys.argv[1])
    nb = nbformat.reads(sys.stdin.read(), as_version=4)
    resources = {"metadata": {"path": options["cwd"]}} if options["cwd"] else {}
    NotebookClient(nb, timeout=options["timeout"], kernel_name="python3",
                   allow_errors=options["allow_errors"], resources=resources).execute()
    sys.stdout.write(nbformat.writes(nb))
