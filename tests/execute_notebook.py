"""Run a notebook (read from stdin) top to bottom in a fresh ``python3`` kernel with
nbclient, and write it with its outputs to stdout: ``background.execute_notebook`` runs
it in a process of its own. The one argument, JSON: ``timeout`` (per cell), ``cwd`` (the
kernel's working directory, or null), ``allow_errors``."""

import json
import sys

import nbformat
from nbclient import NotebookClient

if __name__ == "__main__":
    options = json.loads(sys.argv[1])
    nb = nbformat.reads(sys.stdin.read(), as_version=4)
    resources = {"metadata": {"path": options["cwd"]}} if options["cwd"] else {}
    NotebookClient(nb, timeout=options["timeout"], kernel_name="python3",
                   allow_errors=options["allow_errors"], resources=resources).execute()
    sys.stdout.write(nbformat.writes(nb))
