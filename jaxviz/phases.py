"""A train step as the user thinks of it: ``forward``, ``backward`` and ``update`` phases.

The tracer puts every equation JAX recorded under ``jvp`` into a ``forward`` phase group and
every one under ``transpose`` into a ``backward`` one (``tracing._scope_path``). This module
finishes the picture on the built group tree:

* a ``forward`` phase with no ``backward`` beside it was forward-mode differentiation only
  (``jax.jvp``): it is shown as the transformation it is;
* what comes after the backward pass at the same level and consumes its results (the
  gradients) is the ``update`` phase;
* inside the update, equations are grouped by the optimizer transformation that emitted them
  (``scale_by_adam``, ``clip_by_global_norm``…, see ``jaxviz.adapters.optax``) and then by the
  parameter subtree they update (``h_0``, ``blocks[3]``), found from the outputs they reach.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol

from .graph import Graph, Group

FORWARD, BACKWARD, UPDATE = "forward", "backward", "update"
SUBTREE_MIN_MEMBERS = 3  # per parameter subtree, on average, for the update to group by them
BODY_KINDS = ("eqn", "jaxpr")  # an equation's body (a library's jit over the tree) and its branches

# What a transformation is to the groups of an update (``Step.kind``): one that updates,
# or holds others (``masked``); a chain of them (shown in its place); one per label of the
# parameters (``multi_transform``), and one label's transformation in it.
TRANSFORM, SEQUENCE, SPLIT, BRANCH = "transform", "sequence", "branches", "branch"


class Step(Protocol):
    """A transformation an update equation ran inside (``jaxviz.adapters.optax.Step``):
    compared by identity of its call, one per transformation where code tells them apart."""
    @property
    def name(self) -> str: ...  # its factory: ``scale_by_adam``
    @property
    def title(self) -> str: ...  # a combinator's as the user called it: ``optax.masked``
    @property
    def kind(self) -> str: ...  # TRANSFORM, SEQUENCE, SPLIT or BRANCH
    def __hash__(self) -> int: ...


class Origin(Protocol):
    """Where an update equation came from: the transformations it ran inside, outermost
    first, and its line (a hashable key: the same for each parameter leaf it updates)."""
    @property
    def steps(self) -> tuple[Step, ...]: ...
    @property
    def name(self) -> str: ...
    @property
    def line(self) -> Any: ...


TransformOf = Callable[[Any], "Origin | None"]


def shape_phases(graph: Graph, outside_phases: dict[int, Any],
                 transform_of: TransformOf,
                 values_through: Mapping[int, Mapping[str, frozenset[str]]] | None = None) -> None:
    """Rework the phases of every level that has a backward pass (see the module doc).
    ``outside_phases`` maps node ids of equations outside the phases to their equations;
    ``transform_of`` says which optimizer transformations an equation came from;
    ``values_through`` (node → outer result's edge name → inner results' edge names) lets
    a value be followed through an equation that sub-jaxprs' results flow back into (a
    library's jit over the whole parameter tree), instead of every value into it."""
    holding = {g.parent for g in graph.groups if g.kind == "phase"}  # (most groups hold no pass)
    if not holding:
        return  # no gradient taken: nothing to follow
    flow = _Flow(graph, values_through or {})
    for parent in [g for g in graph.groups if g.id in holding]:
        steps = _steps(graph, parent)
        for at, phases in enumerate(steps):
            until = _first_node(graph, steps[at + 1].values()) if at + 1 < len(steps) else None
            _shape_step(graph, parent, phases, flow, until, outside_phases, transform_of)


def _shape_step(graph: Graph, parent: Group, phases: dict[str, int], flow: _Flow, until: int | None,
                outside_phases: dict[int, Any], transform_of: TransformOf) -> None:
    """Rework one differentiation's passes (``phases``: by name) below ``parent``, where
    the next one starts at node ``until``."""
    if FORWARD in phases and BACKWARD not in phases:
        forward = graph.groups[phases[FORWARD]]
        forward.kind, forward.name = "transform", "jvp"
    if BACKWARD in phases and FORWARD in phases:
        _pull_into_passes(graph, parent, [graph.groups[phases[p]] for p in (FORWARD, BACKWARD)], flow)
    if BACKWARD not in phases:
        return
    members = _later_members(graph, parent, phases[BACKWARD], until)
    consuming = _update_candidates(graph, phases[BACKWARD], flow, members)
    if _differentiates_again(graph, consuming):
        _as_transforms(graph, phases)  # a sampler, not a train step
        return
    if not _applies_gradients(graph, phases, flow, members, consuming):
        return  # derivatives put to another use (a PDE's residual), not an update
    update = _gather_update(graph, parent, phases[BACKWARD], flow, members, consuming)
    if update is not None:
        _group_update(graph, update, outside_phases, transform_of, flow)


def _steps(graph: Graph, parent: Group) -> list[dict[str, int]]:
    """The differentiations whose passes ``parent`` holds, in program order, each as its
    phases by name: a gradient taken twice in one function (a GAN's discriminator's,
    then its generator's) is two of them, each a forward pass and a backward one."""
    passes = [c for c in parent.groups if graph.groups[c].kind == "phase"]
    steps: list[dict[str, int]] = []
    for gid in sorted(passes, key=lambda c: _first_node(graph, [c])):
        name = graph.groups[gid].name
        if not steps or name in steps[-1]:  # (a transposed step lists its backward first)
            steps.append({})
        steps[-1][name] = gid
    return steps


def _first_node(graph: Graph, groups: Iterable[int]) -> int:
    """The first equation (in program order) below ``groups``; -1 where none is."""
    return min((n for gid in groups for n in nodes_below(graph, gid)), default=-1)


class _Flow:
    """Value flow between nodes, built once from the edges: per node id, the nodes that
    read its values (``consumers``) and those whose values it reads (``producers``)."""

    def __init__(self, graph: Graph, values_through: Mapping[int, Mapping[str, frozenset[str]]]) -> None:
        self.graph = graph
        self.consumers: list[list[int]] = [[] for _ in graph.nodes]
        self.producers: list[list[int]] = [[] for _ in graph.nodes]
        self.values_through = values_through
        # per such node read: the names of the values into it that are its sub-jaxprs' results
        self._inner_results: dict[int, frozenset[str]] = {}
        consumers, producers = self.consumers, self.producers
        for e in graph.edges:
            consumers[e.src].append(e.dst)
            producers[e.dst].append(e.src)

    # The program's results, in order, and its inputs: few of the nodes, found once, where
    # an update is grouped (a pass alone reads neither).
    @functools.cached_property
    def outputs(self) -> list[int]:
        return [n.id for n in self.graph.nodes if n.kind == "output"]

    @functools.cached_property
    def inputs(self) -> list[int]:
        return [n.id for n in self.graph.nodes if n.kind == "input"]

    def goes_into(self, node: int, read: str, given: str) -> bool:
        """Whether the value ``read`` that a node in ``values_through`` reads goes into the
        value ``given`` it gives: for one of its results, whether ``read`` is the inner
        result it is; for a value its sub-jaxpr reads from the node (an operand the node
        stands in for), whether ``read`` comes from outside (is no inner result)."""
        through = self.values_through[node]
        inner = through.get(given)
        if inner is not None:
            return read in inner
        results = self._inner_results.get(node)
        if results is None:
            results = self._inner_results[node] = frozenset().union(*through.values())
        return read not in results

    def downstream(self, start: Iterable[int]) -> set[int]:
        return _reach(start, self.consumers)

    def upstream(self, start: Iterable[int], since: int = 0) -> set[int]:
        """The nodes whose values reach ``start``, of those from node ``since`` on: a
        value's path runs in program order, so what lies on a path from a node at or after
        ``since`` does too."""
        return _reach(start, self.producers, since)


def _reach(start: Iterable[int], step: list[list[int]], since: int = 0) -> set[int]:
    seen = set(start)
    todo = list(seen)
    while todo:
        for nxt in step[todo.pop()]:
            if nxt not in seen and nxt >= since:
                seen.add(nxt)
                todo.append(nxt)
    return seen


STRAY_KINDS = ("scope", "call", "library")  # not the user's own lines at this level


def _pull_into_passes(graph: Graph, parent: Group, passes: list[Group], flow: _Flow) -> None:
    """JAX records outside the ``jvp`` and ``transpose`` what reads no value being
    differentiated: a module's constants, the parameter reshapes a lifted scan hoists out
    of its loop, the zeros a loop's transpose starts from. A module's or call's group
    beside the passes whose values only the passes read belongs to the first pass that
    reads them (the forward pass, for what a later pass reads again as a residual): it
    moves into that pass's group that reads them (around the equation that does, where
    that one holds a body)."""
    below = [(p, set(nodes_below(graph, p.id))) for p in passes]
    in_passes = set().union(*(nodes for _, nodes in below))
    for gid in list(parent.groups):
        if graph.groups[gid].kind not in STRAY_KINDS:
            continue
        inside = set(nodes_below(graph, gid))
        users = {c for n in inside for c in flow.consumers[n] if c not in inside}
        if not users or not users <= in_passes or any(graph.nodes[n].kind != "eqn" for n in inside):
            continue
        reader, read = next((p, users & nodes) for p, nodes in below if users & nodes)
        target = _outside_bodies(graph, _common_group(graph, read), reader.id)
        _move(graph, graph.groups[target], [], [gid])
    if parent.kind == "library":
        _pull_library_equations(graph, parent, below, flow)


def _pull_library_equations(graph: Graph, call: Group, passes: list[tuple[Group, set[int]]],
                            flow: _Flow) -> None:
    """A library call that differentiates (numpyro's ``SVI.update``) prepares what its
    passes read in equations of its own (the parameters' casts, the key it splits for
    them): those whose values only the passes read are in the first pass that does."""
    pass_of = {n: i for i, (_, nodes) in enumerate(passes) for n in nodes}
    placed: dict[int, int] = {}
    for n in reversed(call.nodes):  # program order: readers after what they read
        readers = flow.consumers[n]
        found = [pass_of.get(r, placed.get(r)) for r in readers]
        if readers and graph.nodes[n].kind == "eqn" and None not in found:
            placed[n] = min(f for f in found if f is not None)
    for i, (group, _) in enumerate(passes):
        moved = [n for n in call.nodes if placed.get(n) == i]
        if moved:
            _move(graph, group, moved, [])


def _common_group(graph: Graph, nodes: Iterable[int]) -> int:
    """The innermost group holding all ``nodes``."""
    common: list[int] | None = None
    for n in nodes:
        chain = graph.ancestors(graph.nodes[n].group)[::-1]  # root first
        if common is None:
            common = chain
        else:
            depth = 0
            while depth < min(len(common), len(chain)) and common[depth] == chain[depth]:
                depth += 1
            common = common[:depth]
    return common[-1] if common else 0


def _outside_bodies(graph: Graph, gid: int, stop: int) -> int:
    """``gid``, or the group around the outermost equation body it lies in below ``stop``."""
    found, g = gid, gid
    while g != stop:
        parent = graph.groups[g].parent
        if parent is None:
            break
        if graph.groups[g].holder is not None:
            found = parent
        g = parent
    return found


def _differentiates_again(graph: Graph, consuming: set[tuple[str, int]]) -> bool:
    """Whether what consumes the gradients (``consuming``: ``_update_candidates``) takes
    gradients itself: a sampler's kernel (HMC's leapfrog, an adaptation's loop) reads the
    gradient at its starting point and differentiates again at every step, where a train
    step's update only applies it. A backward pass alone (the transposed matrix-vector
    product of ``jnp.linalg.solve``'s linear solve) is no gradient taken."""
    for kind, member in consuming:
        if kind == "g" and any(_takes_gradient(graph, graph.groups[g]) for g in graph.descendants(member)):
            return True
    return False


def _takes_gradient(graph: Graph, group: Group) -> bool:
    """Whether ``group`` holds a forward pass and a backward one."""
    passes = {graph.groups[c].name for c in group.groups if graph.groups[c].kind == "phase"}
    return {FORWARD, BACKWARD} <= passes


def _applies_gradients(graph: Graph, phases: dict[str, int], flow: _Flow,
                       members: dict[tuple[str, int], list[int]], consuming: set[tuple[str, int]]) -> bool:
    """Whether what consumes the gradients applies them to what was differentiated: it
    reads a value from outside the passes that the forward pass reads too (the
    parameters an optimizer updates). A physics-informed loss combines derivatives in
    its inputs into a residual, which reads none."""
    if FORWARD not in phases:
        return True  # nothing to tell them by
    in_passes = {n for name in (FORWARD, BACKWARD) for n in nodes_below(graph, phases[name])}

    def origin(node: int) -> int:  # the value a broadcast or a cast of it stands for
        while graph.nodes[node].primitive in SAME_VALUE and len(flow.producers[node]) == 1:
            node = flow.producers[node][0]
        return node

    primals = {origin(p) for n in nodes_below(graph, phases[FORWARD]) for p in flow.producers[n]
               if p not in in_passes}
    return any(origin(p) in primals for m in consuming for n in members[m] for p in flow.producers[n]
               if p not in in_passes)


# Primitives whose result is their operand's value again (a vmap's broadcast of an
# unbatched parameter, a cast).
SAME_VALUE = frozenset({"broadcast_in_dim", "convert_element_type", "reshape", "squeeze", "expand_dims", "copy"})


def _as_transforms(graph: Graph, phases: dict[str, int]) -> None:
    """Phases that are no train step's are shown as the transformations they are."""
    for name, transform in ((FORWARD, "jvp"), (BACKWARD, "transpose")):
        group = graph.groups[phases[name]]
        group.kind, group.name = "transform", transform


def nodes_below(graph: Graph, gid: int) -> list[int]:
    return [n for g in graph.descendants(gid) for n in graph.groups[g].nodes]


def _gather_update(graph: Graph, parent: Group, backward: int, flow: _Flow,
                   members: dict[tuple[str, int], list[int]], consuming: set[tuple[str, int]]) -> Group | None:
    """Move the members of ``parent`` that come after the backward pass (``members``:
    ``_later_members``) and consume its results (the gradients: ``consuming``), or feed
    what does (an optimizer's step count), into a new ``update`` phase placed after it
    (in a library's call, all of them); None when nothing consumes them."""
    update = set(consuming)
    if not update:
        return None
    feeding = flow.upstream((n for m in update for n in members[m]), since=min(map(min, members.values())))
    update |= {m for m, nodes in members.items() if any(n in feeding for n in nodes)
               and not (m[0] == "g" and graph.groups[m[1]].kind == "transform")}  # a Hessian: not the update's
    if parent.kind == "library":  # a library's step: what it does after the backward pass
        update |= set(members)     # is its update (its step count, its optimizer's casts)
    gid = graph.add_group(UPDATE, "phase", parent.id)
    parent.groups.remove(gid)
    parent.groups.insert(parent.groups.index(backward) + 1, gid)
    ordered = [m for m in _members(parent) if m in update]
    _move(graph, graph.groups[gid], [i for k, i in ordered if k == "n"], [i for k, i in ordered if k == "g"])
    return graph.groups[gid]


def _later_members(graph: Graph, parent: Group, backward: int,
                   until: int | None = None) -> dict[tuple[str, int], list[int]]:
    """The members of ``parent`` after the backward pass and before node ``until`` (the
    next differentiation's), equations and groups but phases and arguments, each with
    its nodes."""
    after = max(nodes_below(graph, backward), default=-1)
    members = {m: _member_nodes(graph, m) for m in _members(parent)
               if m[0] == "n" and graph.nodes[m[1]].kind == "eqn"
               or m[0] == "g" and graph.groups[m[1]].kind not in ("phase", "inputs", "outputs")}
    return {m: nodes for m, nodes in members.items()
            if nodes and min(nodes) > after and (until is None or min(nodes) < until)}


def _update_candidates(graph: Graph, backward: int, flow: _Flow,
                       members: dict[tuple[str, int], list[int]]) -> set[tuple[str, int]]:
    """The later members of the backward pass's parent (``members``: ``_later_members``)
    that consume the backward pass's results."""
    reached = flow.downstream(nodes_below(graph, backward))
    return {m for m, nodes in members.items() if any(n in reached for n in nodes)}


def _first_member_node(graph: Graph, member: tuple[str, int]) -> int:
    """The first node (in program order) of a member; -1 for a group holding none."""
    kind, i = member
    return i if kind == "n" else min(nodes_below(graph, i), default=-1)


def _member_nodes(graph: Graph, member: tuple[str, int]) -> list[int]:
    kind, i = member
    return [i] if kind == "n" else nodes_below(graph, i)


def _move(graph: Graph, target: Group, nodes: list[int], groups: list[int]) -> None:
    """Re-parent ``nodes`` and ``groups`` (all children of one group) under ``target``."""
    parent = graph.nodes[nodes[0]].group if nodes else graph.groups[groups[0]].parent
    assert parent is not None  # the root is never moved
    _attach(graph, target, nodes, groups)
    _detach(graph.groups[parent], set(nodes), set(groups))


def _split(graph: Graph, source: Group, parts: dict[str, tuple[list[int], list[int]]], kind: str,
           then: Callable[[Group], None] | None = None) -> None:
    """Each part's members (nodes, groups) of ``source`` moved into a new group of its
    name under ``source`` (``then`` called on each as it is made); ``source`` filtered
    once, not once per part: a split into many parts costs its size once."""
    nodes: set[int] = set()
    groups: set[int] = set()
    for name, (part_nodes, part_groups) in parts.items():
        gid = graph.add_group(name, kind, source.id)
        _attach(graph, graph.groups[gid], part_nodes, part_groups)
        nodes.update(part_nodes)
        groups.update(part_groups)
        if then is not None:
            then(graph.groups[gid])
    _detach(source, nodes, groups)


def _attach(graph: Graph, target: Group, nodes: list[int], groups: list[int]) -> None:
    for n in nodes:
        graph.nodes[n].group = target.id
    for g in groups:
        graph.groups[g].parent = target.id
    target.nodes.extend(nodes)
    target.groups.extend(groups)


def _detach(source: Group, nodes: set[int], groups: set[int]) -> None:
    source.nodes = [n for n in source.nodes if n not in nodes]
    source.groups = [g for g in source.groups if g not in groups]


def _group_update(graph: Graph, update: Group, outside_phases: dict[int, Any],
                  transform_of: TransformOf, flow: _Flow) -> None:
    """Optimizer transformations first (inside the optimizer call the user made), then
    parameter subtrees inside each."""
    holders = _dissolve_library_calls(graph, update, outside_phases, transform_of)
    keys = _subtree_keys(graph, update, flow)
    calls = _Calls(graph, update, flow)
    subtrees = _SubtreeKeys(graph, keys)
    for holder in holders:
        _group_transformations(graph, holder, outside_phases, transform_of, subtrees, calls)
    _name_loose_updates(graph, update, keys)


def _group_transformations(graph: Graph, holder: Group, outside_phases: dict[int, Any], transform_of: TransformOf,
                           subtrees: _SubtreeKeys, calls: _Calls) -> None:
    """The members of ``holder`` in a group per call of the transformation they came from,
    inside a group per combinator the user wrote around it (``optax.masked``,
    ``optax.multi_transform`` and its branches), a chain's transformations in its place.
    Two transformations are two groups, made by one factory too (see ``_Calls``)."""
    members: list[tuple[tuple[str, int], int, Origin]] = []
    for member in sorted(_members(holder), key=lambda m: _first_member_node(graph, m)):
        first = member[1] if member[0] == "n" else graph.groups[member[1]].holder
        eqn = outside_phases.get(first) if first is not None else None
        origin = transform_of(eqn) if eqn is not None else None
        if origin is not None and first is not None:
            members.append((member, first, origin))
    root = _common_root([o for _, _, o in members])
    below = [o.steps[1:] if root is not None and o.steps[0] == root else o.steps for _, _, o in members]
    paths = calls.instances([(first, steps, o.line) for (_, first, o), steps in zip(members, below)], root)
    top = _Box(None, int(root is not None and root.kind == SPLIT))
    placed = {member: (steps, path) for (member, _, _), steps, path in zip(members, below, paths)}
    for member in _members(holder):  # in the holder's order
        if member not in placed:
            continue
        steps, path = placed[member]
        box = top
        for depth, step in enumerate(steps):
            if step.kind != SEQUENCE:  # a chain's transformations are shown in its place
                key = path[:depth + 1]
                child = box.children.get(key)
                if child is None:
                    child = box.children[key] = _Box(step, box.splits + (step.kind == SPLIT))
                box = child
                if step.kind == BRANCH and depth + 1 < len(steps):
                    box.held = steps[depth + 1]
        (box.nodes if member[0] == "n" else box.groups).append(member[1])
    boxes = top.in_order(graph)
    if len(boxes) < 2 and not any(b.children for b in boxes):  # one transformation (or none known):
        _group_subtrees(graph, holder, subtrees)  # subtrees right away
        return
    moved: tuple[set[int], set[int]] = (set(), set())
    for box in boxes:
        _make_box(graph, holder, box, calls, subtrees, moved)
    _detach(holder, *moved)
    _group_subtrees(graph, holder, subtrees)  # what the transformation the user called did itself


def _common_root(origins: list[Origin]) -> Step | None:
    """The transformation every equation of the optimizer ran inside (those of
    ``optax.apply_updates`` aside): the one the user called, whose call holds them."""
    firsts = {o.steps[0] for o in origins if len(o.steps) > 1}
    return firsts.pop() if len(firsts) == 1 else None


class _Box:
    """A group to be made: a call of a transformation (``step``), the members it holds and
    the calls inside it. ``splits``: how many ``multi_transform`` calls hold it."""

    def __init__(self, step: Step | None, splits: int) -> None:
        self.step, self.splits = step, splits
        self.held: Step | None = None  # a branch's transformation
        self.nodes: list[int] = []
        self.groups: list[int] = []
        self.children: dict[tuple[tuple[Step, int], ...], _Box] = {}

    def in_order(self, graph: Graph) -> list[_Box]:
        """The calls inside it in program order."""
        return sorted(self.children.values(), key=lambda c: min(c.all_nodes(graph), default=-1))

    def all_nodes(self, graph: Graph) -> list[int]:
        return [*self.nodes, *(n for g in self.groups for n in nodes_below(graph, g)),
                *(n for c in self.children.values() for n in c.all_nodes(graph))]


def _make_box(graph: Graph, parent: Group, box: _Box, calls: _Calls, subtrees: _SubtreeKeys,
              moved: tuple[set[int], set[int]]) -> None:
    """``box`` made a group under ``parent``, its members moved in from the holder
    (``moved`` collects them). A branch of a ``multi_transform`` is named as the user
    labelled it (``adam``); one that holds one transformation and whose label the graph
    does not say is that transformation's group."""
    step = box.step
    assert step is not None
    children = box.in_order(graph)
    if step.kind == BRANCH:
        label = calls.label(box.all_nodes(graph), box.splits)
        if label is None and len(children) == 1 and not box.nodes and not box.groups:
            _make_box(graph, parent, children[0], calls, subtrees, moved)
            return
        title = label or (box.held or step).title
    else:
        title = step.title if children else step.name
    made = graph.groups[graph.add_group(title, "call", parent.id)]
    moved[0].update(box.nodes)
    moved[1].update(box.groups)
    _attach(graph, made, box.nodes, box.groups)
    for child in children:
        _make_box(graph, made, child, calls, subtrees, moved)
    if not children:
        _group_subtrees(graph, made, subtrees)


# A ``multi_transform``'s state holds each branch's under its label: ``opt_state[1].inner_states['adam']…``
_BRANCH_STATE = re.compile(r"\.inner_states\[(?:'([^']*)'|\"([^\"]*)\"|(\d+))\]")


class _Calls:
    """Tells apart the calls of transformations whose code does not: two made by one
    factory (``optax.adam``'s ``scale`` and ``optax.sgd``'s, side by side in a
    ``multi_transform``) run the same lines called from the same places. A line of a
    transformation runs once per parameter leaf, in the tree's order, so the equations
    one call runs at one line reach the results (new parameters, new state) in their
    order: where a line starts over, on results its last equation did not reach, a new
    call has begun. A ``multi_transform``'s branches update parameters of their own, so
    a line new to a branch that starts over on results none of the branch's equations
    reached is the next branch's."""

    def __init__(self, graph: Graph, update: Group, flow: _Flow) -> None:
        inside = set(nodes_below(graph, update.id))
        outputs = {n: 1 << i for i, n in enumerate(flow.outputs)}
        self.graph, self.flow = graph, flow
        self._output_labels = [_BRANCH_STATE.findall(graph.nodes[n].label) for n in outputs]
        self._labelled: dict[int, dict[str, int]] = {}  # depth → label → the results under it
        self.reach: dict[int, int] = {}  # per node of the update: the results it reaches, a bit each
        reach, consumers = self.reach, flow.consumers
        for start in sorted(inside, reverse=True):  # a value's consumers come after it: read first
            bits = 0
            for c in consumers[start]:
                if c in inside and c not in reach:
                    self._reach_from(start, inside, outputs)  # one that does not
                    break
                bits |= outputs.get(c, 0) | reach.get(c, 0)
            else:
                reach[start] = bits

    def _reach_from(self, start: int, inside: set[int], outputs: dict[int, int]) -> None:
        """``reach`` of ``start`` and of the nodes of the update that read its values, consumers first."""
        reach, consumers = self.reach, self.flow.consumers
        stack = [start]
        while stack:
            n = stack[-1]
            if n in reach:
                stack.pop()
                continue
            todo = [c for c in consumers[n] if c not in reach and c in inside and c not in stack]
            if todo:
                stack.extend(todo)
                continue
            stack.pop()
            bits = 0
            for c in consumers[n]:
                bits |= outputs.get(c, 0) | reach.get(c, 0)
            reach[n] = bits

    def label(self, nodes: Iterable[int], splits: int) -> str | None:
        """The label of the ``multi_transform`` branch (the ``splits``-th one down) whose
        state ``nodes`` read or write: the one label at that depth of the inputs they read
        and the results they reach (a state's). None where they touch no state (a
        stateless transformation's) or several labels'."""
        if splits <= 0:
            return None
        if splits not in self._labelled:
            by_label = self._labelled[splits] = {}
            for i, found in enumerate(self._output_labels):
                if len(found) >= splits:
                    key = "".join(found[splits - 1])
                    by_label[key] = by_label.get(key, 0) | 1 << i
        labels: set[str] = set()
        for n in nodes:
            bits = self.reach.get(n, 0)
            labels.update(key for key, under in self._labelled[splits].items() if bits & under)
            for p in self.flow.producers[n]:
                if self.graph.nodes[p].kind == "input":
                    found = _BRANCH_STATE.findall(self.graph.nodes[p].label)
                    if len(found) >= splits:
                        labels.add("".join(found[splits - 1]))
        return labels.pop() if len(labels) == 1 else None

    def instances(self, members: list[tuple[int, tuple[Step, ...], Any]],
                  root: Step | None) -> list[tuple[tuple[Step, int], ...]]:
        """Per member (its first node, its transformations below ``root``, its line), in
        program order: its transformations, each with which call of it (0, 1…) in the
        call around it the member is in."""
        calls: dict[tuple[Any, ...], int] = {}  # (the calls around it, a transformation) → its call
        lines: dict[Any, tuple[tuple[Any, ...], int, int]] = {}  # line → (its calls, last reach, all reached)
        branches: dict[tuple[Any, ...], _Branch] = {}  # per call of a branch
        placed: list[tuple[tuple[Step, int], ...]] = []
        branch_depths: dict[tuple[Step, ...], int | None] = {}  # the innermost branch's, per steps
        resolved: dict[tuple[Step, ...], tuple[tuple[Step, int], ...]] = {}  # per steps, while ``calls`` holds
        for node, steps, line in members:
            path = resolved.get(steps)
            if path is None:
                path = resolved[steps] = _resolve(steps, calls)
            bits = self.reach.get(node, 0)
            depth = branch_depths.get(steps, -1)
            if depth == -1:
                depth = branch_depths[steps] = max((d for d, s in enumerate(steps) if s.kind == BRANCH), default=None)
            label, cut = None, None
            if depth is not None:
                splits = sum(s.kind == SPLIT for s in steps[:depth]) + int(root is not None and root.kind == SPLIT)
                label = self.label([node], splits)
                branch = branches.get(path[:depth + 1])
                if branch is not None and branch.next_one(steps[depth + 1:], line, bits, label):
                    cut = depth
            if cut is None and bits:
                cut = _restarted(steps, path, bits, lines.get(line), root)
            if cut is not None:
                key = (path[:cut], steps[cut])
                calls[key] = calls.get(key, 0) + 1
                resolved.clear()
                path = resolved[steps] = _resolve(steps, calls)
            if depth is not None:
                branches.setdefault(path[:depth + 1], _Branch()).add(steps[depth + 1:], line, bits, label)
            if bits:
                held, _, everything = lines.get(line, (None, 0, 0))
                lines[line] = (path, bits, (everything if held == path else 0) | bits)
            placed.append(path)
        return placed


class _Branch:
    """What one call of a ``multi_transform`` branch has run so far: a branch runs one
    transformation (what it holds), on parameters of its own (those its label's state is
    of)."""

    def __init__(self) -> None:
        self.held: Step | None = None  # the transformation it holds
        self.steps: set[Step] = set()  # the transformations inside it
        self.lines: set[Any] = set()
        self.reached = self.last = 0  # the results its equations reached; its last one did
        self.label: str | None = None  # the label its state is under

    def next_one(self, inner: tuple[Step, ...], line: Any, bits: int, label: str | None) -> bool:
        """Whether an equation (inside ``inner``, at ``line``, reaching ``bits``, reading
        the state of ``label``) is the next branch's: it runs another
        transformation than this branch holds, or reads another label's state, or is
        (a line of) a transformation the branch has not run that starts on parameters
        none of its equations reached (where it is a line the branch has not run, before
        what the last one reached: a transformation running other lines on some
        parameters, Adafactor on a matrix, goes on in order)."""
        if not self.steps:
            return False
        if inner and self.held is not None and inner[0] != self.held:
            return True
        if label is not None and self.label is not None and label != self.label:
            return True
        if not bits or bits & self.reached or line in self.lines:
            return False
        return bool(inner and inner[-1] not in self.steps) or _lowest(bits) < _lowest(self.last)

    def add(self, inner: tuple[Step, ...], line: Any, bits: int, label: str | None) -> None:
        if inner:
            self.held = self.held or inner[0]
            self.steps.add(inner[-1])
        self.lines.add(line)
        self.reached |= bits
        self.last = bits or self.last
        self.label = self.label or label


def _resolve(steps: tuple[Step, ...], calls: dict[tuple[Any, ...], int]) -> tuple[tuple[Step, int], ...]:
    path: tuple[tuple[Step, int], ...] = ()
    for step in steps:
        path += ((step, calls.get((path, step), 0)),)
    return path


def _restarted(steps: tuple[Step, ...], path: tuple[Any, ...], bits: int,
               record: tuple[tuple[Any, ...], int, int] | None, root: Step | None) -> int | None:
    """Where a new call begins, if the line an equation ran (its last ``record``: the
    calls it was in, what its last equation reached, what all did) starts over: the
    depth of the transformation called anew. On results the line reached before, the
    chain ran a transformation again (``chain(scale(2.), scale(-1.))``): the innermost
    chain's. On others, the next branch (of ``multi_transform``) or mask (of ``masked``)."""
    if record is None:
        return None
    held, last, everything = record
    if held != path or not last or bits & last or _lowest(bits) >= _lowest(last):
        return None

    def in_sequence(d: int) -> bool:  # the transformation at depth d is one of a chain's
        above = steps[d - 1] if d else root
        return above is None or above.kind == SEQUENCE

    if not bits & everything:
        divides = [d for d, s in enumerate(steps) if s.kind == BRANCH
                   or s.kind == TRANSFORM and d + 1 < len(steps) and in_sequence(d)]
        if divides:
            return divides[-1]
    return next((d for d in reversed(range(len(steps))) if in_sequence(d)), len(steps) - 1)


def _lowest(bits: int) -> int:
    return (bits & -bits).bit_length()


def _name_loose_updates(graph: Graph, update: Group, keys: dict[int, str | None]) -> None:
    """An update equation of one parameter that no group named after it holds (SGD's
    ``p - lr * g``, an equation or two per parameter) says which parameter it updates."""
    if len({k for k in keys.values() if k}) < 2:
        return  # one parameter: saying so on every equation tells nothing
    stack: list[tuple[int, frozenset[str]]] = [(update.id, frozenset())]
    while stack:
        gid, named = stack.pop()
        group = graph.groups[gid]
        for n in group.nodes:
            key = keys.get(n)
            if key and key not in named and graph.nodes[n].kind == "eqn":
                graph.nodes[n].label = f"{graph.nodes[n].label} · {key}"
        stack.extend((c, named | {graph.groups[c].name}) for c in group.groups)


def _dissolve_library_calls(graph: Graph, update: Group, outside_phases: dict[int, Any],
                            transform_of: TransformOf) -> list[Group]:
    """The optimizer's inner call groups (``chain`` › ...) give way to its
    transformations, which the optimizer's adapter names and which are then split by
    parameter: their members move up into the call the user made (``optimizer.update``,
    ``TrainState.apply_gradients``), which stays, named as the user called it. Another
    library's call (a solver sampling in the update) keeps its calls. The groups whose
    members are then grouped by transformation: those calls, or the phase."""
    library = [g for g in graph.descendants(update.id) if graph.groups[g].kind == "library"]
    known = {transform_of(outside_phases[n]) for g in library for n in graph.groups[g].nodes
             if n in outside_phases} - {None}
    if not _several_transformations([o for o in known if o is not None]):
        return [update]
    made = [graph.groups[g] for g in library if graph.groups[graph.groups[g].parent or 0].kind != "library"]
    for call in made:
        if not _runs_transformations(graph, call.id, outside_phases, transform_of):
            continue
        inner = [g for g in graph.descendants(call.id) if g != call.id and graph.groups[g].kind == "library"]
        targets = {g: _dissolve_target(graph, g, call.id) for g in inner}  # before anything moves
        for gid in inner:
            _dissolve_into(graph, graph.groups[gid], graph.groups[targets[gid]])
        for target in {call.id, *targets.values()}:
            graph.groups[target].nodes.sort()  # program order, which the transformations are grouped in
    return made


def _runs_transformations(graph: Graph, gid: int, outside_phases: dict[int, Any], transform_of: TransformOf) -> bool:
    """Whether the library call ``gid`` runs the optimizer's transformations: a solver or
    a sampler called in the update (a diffusion model's sampling) keeps its calls."""
    return any(transform_of(outside_phases[n]) is not None for n in nodes_below(graph, gid) if n in outside_phases)


def _several_transformations(origins: list[Origin]) -> bool:
    """Whether equations came from several transformations: of two names, or from one
    inside a combinator that holds it (``masked``, ``multi_transform``)."""
    return len({o.name for o in origins}) > 1 or any(s.kind != SEQUENCE for o in origins for s in o.steps[:-1])


def _dissolve_target(graph: Graph, gid: int, call: int) -> int:
    """Where a library call's members go: into the equation whose body it runs in (a
    library's ``jit``, whose body stays inside it), or else the call the user made."""
    parent = graph.groups[gid].parent
    while parent is not None and parent != call and graph.groups[parent].holder is None:
        parent = graph.groups[parent].parent
    return call if parent is None else parent


def _dissolve_into(graph: Graph, group: Group, target: Group) -> None:
    if group.nodes:
        _move(graph, target, list(group.nodes), [])
    inner = [c for c in group.groups if graph.groups[c].kind != "library"]
    if inner:
        _move(graph, target, [], inner)
    parent = graph.groups[group.parent] if group.parent is not None else None
    if parent is not None:
        parent.groups = [c for c in parent.groups if c != group.id]
    group.groups = []
    group.parent = None


def _members(group: Group) -> list[tuple[str, int]]:
    return [("n", n) for n in group.nodes] + [("g", g) for g in group.groups]


def _subtree_keys(graph: Graph, update: Group, flow: _Flow) -> dict[int, str | None]:
    """Per node of the update: the parameter subtree it works on (None: several).

    First from the outputs each node reaches. A node that reaches several (the per-leaf
    squares of a global norm reach every parameter through the norm) then takes the subtree
    of what it reads, when that is one: a gradient coming in from the backward pass is
    of the subtree of the nodes that consume it and reach one output."""
    inside = set(nodes_below(graph, update.id))
    producers = flow.producers
    consumers = _ConsumersInside(flow.consumers, inside)
    keys = _keys_from_outputs(graph, inside, flow)
    for n in sorted(n for n in inside if keys.get(n) is None):  # producers first
        read = {_key_of_value(p, keys, inside, consumers) for p in producers[n]}
        read.discard(UNKNOWN)
        if not read:
            keys[n] = UNKNOWN  # a constant, say: decided by its consumers below
        elif len(read) == 1 and None not in read:
            keys[n] = read.pop()
    for n in sorted((n for n in inside if keys.get(n) == UNKNOWN), reverse=True):
        used = {keys.get(c) for c in consumers.get(n)}
        keys[n] = used.pop() if len(used) == 1 and UNKNOWN not in used else None
    return keys


UNKNOWN = ""  # a node's subtree not known yet (None: it works on several)


class _ConsumersInside:
    """A node's consumers that lie ``inside`` (the update), listed for the nodes asked
    about only (the update reads few of the graph's)."""

    def __init__(self, consumers: list[list[int]], inside: set[int]) -> None:
        self._all, self._inside = consumers, inside
        self._found: dict[int, list[int]] = {}

    def get(self, node: int) -> Sequence[int]:
        found = self._found.get(node)
        if found is None:
            found = self._found[node] = [c for c in self._all[node] if c in self._inside]
        return found


def _keys_from_outputs(graph: Graph, inside: set[int], flow: _Flow) -> dict[int, str | None]:
    """The subtree of the output each node reaches (None: several), following each value
    through the equations that pass their sub-jaxprs' results through."""
    keys: dict[int, str | None] = {}
    inputs = _inputs_by_rest(graph, flow.inputs)
    edges_in: dict[int, list[tuple[int, str]]] = {}
    for e in graph.edges:
        if e.src in inside:
            edges_in.setdefault(e.dst, []).append((e.src, e.var))
    for out in flow.outputs:
        key = param_subtree(_as_input(graph.nodes[out].label, inputs))
        todo = list(edges_in.get(out, ()))
        while todo:
            n, var = todo.pop()
            have = keys.get(n, UNKNOWN)
            if n in flow.values_through:  # reached for one value: go on with that value only
                keys[n] = key if have in (UNKNOWN, key) else None
                todo.extend((p, v) for p, v in edges_in.get(n, ()) if flow.goes_into(n, v, var))
                continue
            if have == key or have is None:
                continue
            keys[n] = key if have == UNKNOWN else None
            todo.extend(edges_in.get(n, ()))
    return keys


def _key_of_value(producer: int, keys: dict[int, str | None], inside: set[int],
                  consumers: _ConsumersInside) -> str | None:
    """The subtree of a value read by the update: its producer's, if inside; else that of
    its consumers that have one (``UNKNOWN`` when none has)."""
    if producer in inside:
        return keys.get(producer)
    found = {keys.get(c) for c in consumers.get(producer)} - {None, UNKNOWN}
    return found.pop() if len(found) == 1 else (UNKNOWN if not found else None)


class _SubtreeKeys:
    """The parameter subtree each node of the update works on (``_subtree_keys``), and the
    one all the equations below a group work on, read once per group: grouping the update
    asks again of the boxes it made, and a box's equations stay below it."""

    def __init__(self, graph: Graph, keys: dict[int, str | None]) -> None:
        self.graph, self.keys = graph, keys
        self._below: dict[int, Any] = {}

    def of_member(self, kind: str, member: int) -> str | None:
        """The one subtree of a member (a node or a group); None where it works on several,
        or on none."""
        if kind == "n":
            return self.keys.get(member) if self.graph.nodes[member].kind == "eqn" else None
        found = self._of_group(member)
        return None if found is _NO_EQUATION or found is _SEVERAL else found

    def _of_group(self, gid: int) -> Any:
        found = self._below.get(gid, _UNREAD)
        if found is _UNREAD:
            group, nodes = self.graph.groups[gid], self.graph.nodes
            found = _NO_EQUATION
            for n in group.nodes:
                if nodes[n].kind == "eqn":
                    found = _joined(found, self.keys.get(n))
            for c in group.groups:
                if found is _SEVERAL:
                    break
                found = _joined(found, self._of_group(c))
            self._below[gid] = found
        return found


_UNREAD, _NO_EQUATION, _SEVERAL = object(), object(), object()


def _joined(found: Any, key: Any) -> Any:
    """What a set of equations works on, one more equation (or set) added: the one
    subtree they all do, ``_NO_EQUATION`` or ``_SEVERAL``."""
    if found is _NO_EQUATION or found == key:
        return key
    return found if key is _NO_EQUATION else _SEVERAL


def _group_subtrees(graph: Graph, group: Group, subtrees: _SubtreeKeys) -> None:
    """Members whose every node updates one parameter subtree go into a group named after
    it; those shared by several (a global norm) stay where they are."""
    by_key: dict[str, tuple[list[int], list[int]]] = {}
    for kind, member in _members(group):
        key = subtrees.of_member(kind, member)
        if key is not None:
            slot = by_key.setdefault(key, ([], []))
            slot[0 if kind == "n" else 1].append(member)
        elif kind == "g" and graph.groups[member].kind in BODY_KINDS:
            _group_subtrees(graph, graph.groups[member], subtrees)  # a body over several parameters
    if len(by_key) < 2:
        return  # one subtree: a box would hide nothing
    if sum(len(n) + len(g) for n, g in by_key.values()) < SUBTREE_MIN_MEMBERS * len(by_key):
        return  # an equation or two each: boxes would hide nothing
    _split(graph, group, by_key, "scope")


def _inputs_by_rest(graph: Graph, inputs: list[int]) -> dict[str, str]:
    """Input leaf names (of the nodes ``inputs``) by their path below the argument
    (``[1]['w']`` → ``params[1]['w']``)."""
    out: dict[str, str] = {}
    for label in (graph.nodes[n].label for n in inputs):
        root = _ROOT.match(label)
        if root and root.end() < len(label):
            out.setdefault(label[root.end():], label)
    return out


def _as_input(output: str, inputs: dict[str, str]) -> str:
    """An updated parameter's output path in the argument's words: ``out[0][1]['w']`` is
    ``params[1]['w']`` when that is an input (the update returns what it was given)."""
    root = _ROOT.match(output)
    rest = output[root.end():] if root else output
    for candidate in (rest, _FIRST_INDEX.sub("", rest, count=1)):
        if candidate in inputs:
            return inputs[candidate]
    return output


_ROOT = re.compile(r"[A-Za-z_]\w*")
_FIRST_INDEX = re.compile(r"^\[\d+\]")
_COMPONENT = re.compile(r"\['([^']*)'\]|\[(\d+)\]|\.(\w+)")


@functools.lru_cache(maxsize=8192)  # a step traced again updates the same paths
def param_subtree(path: str) -> str | None:
    """The parameter subtree a leaf path belongs to, in the user's words: the first string
    key with any list indices after it (``out[0].params['h_0']['Dense_0']['kernel']`` and
    ``out[0].opt_state[1][0].mu['h_0']…`` → ``h_0``; ``out['blocks'][3]['qkv']`` →
    ``blocks[3]``), else the first attribute holding a list (``out[1][0].mu.blocks[2].w``
    → ``blocks[2]``), else the attribute holding the leaf (``out.head.weight`` → ``head``)."""
    parts = [(m.group(1), m.group(2), m.group(3)) for m in _COMPONENT.finditer(path)]
    root = _ROOT.match(path)

    def with_indices(i: int, name: str) -> str:
        for _, index, _ in parts[i + 1:]:  # i = -1: from the first component
            if index is None:
                break
            name += f"[{index}]"
        return name

    if root and root.group() != "out" and len(parts) > 1 and parts[0][1] is not None:
        lead = next((i for i, (_, index, _) in enumerate(parts) if index is None), len(parts))
        if lead == len(parts) or parts[lead][2] is None:
            return with_indices(-1, root.group())  # a list argument: params[1]['w'] → params[1]
        # An optimizer's state (opt_state[1][0].mu…): its mu['h_0']… is h_0's, as
        # out[0].params['h_0'] is; its mu[2]… is of a list argument it does not name.
        if lead + 1 < len(parts) and parts[lead + 1][1] is not None:
            return None
    for i, (key, _, _) in enumerate(parts):
        if key is not None:
            return with_indices(i, key)
    for i, (_, _, attr) in enumerate(parts[:-1]):
        if attr is not None and parts[i + 1][1] is not None:
            return with_indices(i, attr)
    if len(parts) >= 2 and parts[-2][2] is not None:
        return parts[-2][2]
    return None
