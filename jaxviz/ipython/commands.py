"""The ``%jaxviz <command>`` subcommands: each takes the shell and its arguments, prints
or displays its answer, and raises ``ValueError`` (one line, shown as such) on bad input."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from IPython.display import display

from ..devices import DeviceTable
from ..diff import recompile_diff
from .recompiles import recompiles_command, watch_command


def devices_command(shell: Any, argv: list[str]) -> DeviceTable:
    """``%jaxviz devices [cpu|gpu|tpu]``: the devices, with their memory."""
    platform = argv[0].lower() if argv else None
    return DeviceTable.collect(platform)


def diff_command(shell: Any, argv: list[str]) -> Any:
    """``%jaxviz diff NAME [N]``: the last recompile of NAME (or its N-th compile) against
    the compile before it."""
    parser = argparse.ArgumentParser(prog="%jaxviz diff", add_help=False, exit_on_error=False)
    parser.add_argument("name")
    parser.add_argument("count", nargs="?", type=int, default=None)
    try:
        args = parser.parse_args(argv)
    except (argparse.ArgumentError, SystemExit):
        raise ValueError("usage: %jaxviz diff NAME [N] (N: a compile number from the compile log)") from None
    try:
        result = recompile_diff(args.name, args.count)
    except LookupError as exc:
        print(f"jaxviz: {exc.args[0]}")
        return None
    display(result)
    return None


# command → function(shell, argv); ``%jaxviz`` (jaxviz.ipython.magics) dispatches here.
COMMANDS: dict[str, Callable[[Any, list[str]], Any]] = {
    "watch": watch_command,
    "recompiles": recompiles_command,
    "devices": devices_command,
    "diff": diff_command,
}
