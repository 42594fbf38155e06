"""The diff of two traces of one function: what a recompile changed in the program.

``diff(program_a, program_b)`` (or ``diff(fn, args_a, args_b)``) matches the two graphs by
structure, not by variable numbers: groups by their path (kind and name, aligned in order
under each matched parent), equations by primitive and position inside their matched
group. A matched equation whose output types, params or literals differ is *changed*;
one with no partner is *added* or *removed*. A change whose params differ only in the
numbers by which the shapes changed (``broadcast_in_dim shape=(8, 4) → (16, 4)`` when the
batch went from 8 to 16) is a change "in shape only", so a batch-size change reads as
such, not as a different program.

The result, ``ProgramDiff``, draws as one graph: the new program with the removed parts of
the old one put back where they were, coloured by status (the DOT renderer's ``marks``),
with unchanged groups collapsed and the groups holding changes open.

Recompiles: every compile the tracker sees (``jaxviz.watch``, or the notebook session's)
is remembered for the last ``KEEP`` compiles of each function, as the function and the
abstract arguments it was called with (shapes, dtypes and static values: no arrays).
``recompile_diff(name)`` (``%jaxviz diff NAME``) re-traces the last two and diffs them.
Re-tracing reads the function's globals as they are now; everything else that makes
JAX's cache key (arguments, static values) is as it was at that compile.

Modules: ``match`` (the matching algorithm and the union graph), ``changes``
(``ProgramDiff``, data), ``history`` (the compiles remembered, ``recompile_diff``). The
drawing is ``jaxviz.render.diff``'s, the panel's reply ``jaxviz.ipython.bridge``'s.
"""

from __future__ import annotations

from .changes import STATUSES, EqnChange, InputChange, ProgramDiff
from .history import HISTORY, KEEP, CompileHistory, CompileRecord, recompile_diff
from .match import anchors, axis_changes, diff, diff_programs

__all__ = ["HISTORY", "KEEP", "STATUSES", "CompileHistory", "CompileRecord", "EqnChange", "InputChange",
           "ProgramDiff", "anchors", "axis_changes", "diff", "diff_programs", "recompile_diff"]
