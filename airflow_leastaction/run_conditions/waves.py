"""Validating a DAG's run conditions and laying its tasks out as waves. Pure logic, no Airflow import.

The checks run at DAG parse time (each ``run_condition(...)`` declaration, then the whole graph) and in
``airflow-leastaction graph``. Each kind of mistake raises its own exception class with its own exit
status. Waves are the guaranteed-safe order: every task appears after all its upstreams, even an ANY or
N task that may start sooner during a run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence, Set
from dataclasses import dataclass

from airflow_leastaction.exceptions import (
    ConfigurationError,
    DependencyCycleError,
    InactiveDependencyError,
    SelfDependencyError,
    UnknownDependencyTypeError,
    UnknownTaskError,
)
from airflow_leastaction.gating.engine import DependencyType


@dataclass(frozen=True)
class Node:
    """A task of the graph: its upstream task ids in the same DAG, its run condition, and if it is active."""

    task_id: str
    upstream: tuple[str, ...] = ()
    condition: str = "ALL"
    active: bool = True
    elsewhere: tuple[str, ...] = ()  # dependencies on tasks in other DAGs: shown, not placed in waves


def check_type(dag_id: str | None, task_id: str, value) -> DependencyType:
    """:meth:`DependencyType.parse`, with an error naming the DAG and task."""
    try:
        return DependencyType.parse(value)
    except ConfigurationError as exc:
        raise UnknownDependencyTypeError(dag_id, task_id, str(exc)) from None


def check_upstreams(dag_id: str | None, task_id: str, upstream: Iterable[str], known: Iterable[str]) -> None:
    """Self-dependency and dependencies on tasks the DAG does not have."""
    known = known if isinstance(known, (Set, Mapping)) else set(known)
    for up in upstream:
        if up == task_id:
            raise SelfDependencyError(dag_id, task_id, "the task depends on itself")
        if up not in known:
            raise UnknownTaskError(dag_id, task_id, f"depends on task {up!r}, which the DAG does not have")


def find_cycle(nodes: Mapping[str, Node]) -> list[str] | None:
    """A cycle as a list of task ids (first == last), or None.

    Depth-first along upstream edges with an explicit stack: a chain of thousands of tasks is an
    ordinary DAG and must not hit Python's recursion limit.
    """
    color: dict[str, int] = {}  # 1: on the current path, 2: done
    for root in sorted(nodes):
        if root in color:
            continue
        color[root] = 1
        path, pending = [root], [iter(nodes[root].upstream)]
        while pending:
            for up in pending[-1]:
                if color.get(up) == 1:
                    return list(reversed(path[path.index(up) :] + [up]))
                if up in nodes and up not in color:
                    color[up] = 1
                    path.append(up)
                    pending.append(iter(nodes[up].upstream))
                    break
            else:  # every upstream of the task at the top is done
                color[path.pop()] = 2
                pending.pop()
    return None


def _inactive_upstream(dag_id: str | None, task_id: str, up: str) -> InactiveDependencyError:
    return InactiveDependencyError(
        dag_id, task_id, f"depends on inactive task {up!r}; it could never run (activate it or drop the dependency)"
    )


def _cycle(dag_id: str | None, cycle: list[str]) -> DependencyCycleError:
    return DependencyCycleError(dag_id, cycle[0], "dependency cycle: " + " -> ".join(cycle))


def validate(dag_id: str | None, nodes: Mapping[str, Node]) -> None:
    """Check the whole graph: unknown and self dependencies, inactive upstreams of active tasks, cycles.

    The dependencies of an inactive task are ignored.
    """
    for node in nodes.values():
        if not node.active:
            continue
        check_upstreams(dag_id, node.task_id, node.upstream, nodes)
        for up in node.upstream:
            if not nodes[up].active:
                raise _inactive_upstream(dag_id, node.task_id, up)
    cycle = find_cycle({t: n for t, n in nodes.items() if n.active})
    if cycle:
        raise _cycle(dag_id, cycle)


def validate_addition(
    dag_id: str | None, new: Node, node: Callable[[str], Node | None], dependents: Callable[[str], Iterable[str]]
) -> None:
    """The checks of :func:`validate` for one task getting its upstreams, in a graph already checked.

    Only what the new edges can break is looked at: the new task's upstreams, its dependents, and a path
    from it back to one of its upstreams (a new cycle runs through the new task). Declaring a long
    chain task by task, in either order, stays about linear.

    :param new: the task with its new upstreams (it had none before).
    :param node: the node of a task id of the graph as it is (None: not a task of the graph).
    :param dependents: the task ids that depend directly on a task id.
    """
    check_upstreams(dag_id, new.task_id, new.upstream, {u for u in new.upstream if node(u) is not None})
    if not new.active:
        for down in dependents(new.task_id):
            if node(down).active:
                raise _inactive_upstream(dag_id, down, new.task_id)
        return
    for up in new.upstream:
        if not node(up).active:
            raise _inactive_upstream(dag_id, new.task_id, up)
    cycle = _path_back(new, node, dependents)
    if cycle:
        raise _cycle(dag_id, cycle)


def _path_back(
    new: Node, node: Callable[[str], Node | None], dependents: Callable[[str], Iterable[str]]
) -> list[str] | None:
    """A cycle new -> ... -> one of its upstreams -> new, or None.

    Searched from both ends in step (downstream from the new task, upstream from its upstreams), so the
    cost follows the smaller side: the part of a chain declared before the new task, or after it.
    """
    down_from = {new.task_id: None}  # task -> the task it was reached from, going downstream
    up_from = {u: None for u in new.upstream}  # task -> the task it was reached from, going upstream
    down_todo, up_todo = [new.task_id], list(up_from)
    while down_todo and up_todo:
        current = down_todo.pop()
        for down in dependents(current):
            if down not in down_from and node(down).active:
                down_from[down] = current
                down_todo.append(down)
            if down in up_from and down in down_from:
                return _joined(down, down_from, up_from, new.task_id)
        current = up_todo.pop()
        upstream = node(current)
        for up in upstream.upstream if upstream.active else ():
            if up not in up_from:
                up_from[up] = current
                up_todo.append(up)
            if up in down_from:
                return _joined(up, down_from, up_from, new.task_id)
    return None


def _joined(meet: str, down_from: dict, up_from: dict, start: str) -> list[str]:
    head = [meet]
    while down_from.get(head[-1]) is not None:
        head.append(down_from[head[-1]])
    tail, step = [], up_from.get(meet)
    while step is not None:
        tail.append(step)
        step = up_from[step]
    return list(reversed(head)) + tail + [start]


def waves(nodes: Mapping[str, Node]) -> list[list[str]]:
    """Active tasks in waves: each wave depends only on earlier ones. Call :func:`validate` first.

    A task's wave is one after the latest wave of its upstreams (Kahn's order, linear in the graph).
    """
    active = {t: n for t, n in nodes.items() if n.active}
    downstream: dict[str, list[str]] = {t: [] for t in active}
    missing = {t: len(set(n.upstream)) for t, n in active.items()}
    for t, n in active.items():
        for up in set(n.upstream):
            if up in downstream:
                downstream[up].append(t)
    level = {t: 0 for t, m in missing.items() if m == 0}
    ready = list(level)
    while ready:
        t = ready.pop()
        for down in downstream[t]:
            level[down] = max(level.get(down, 0), level[t] + 1)
            missing[down] -= 1
            if missing[down] == 0:
                ready.append(down)
    stuck = sorted(t for t, m in missing.items() if m > 0)
    if stuck:
        raise DependencyCycleError(None, stuck[0], "dependency cycle among " + ", ".join(stuck))
    out: list[list[str]] = [[] for _ in range(max(level.values(), default=-1) + 1)]
    for t in sorted(level):
        out[level[t]].append(t)
    return out


def format_waves(dag_id: str, nodes: Mapping[str, Node], layout: Sequence[Sequence[str]]) -> str:
    lines = [f"DAG {dag_id}: {sum(len(w) for w in layout)} active tasks in {len(layout)} waves"]
    for i, wave in enumerate(layout, 1):
        parts = []
        for t in wave:
            n = nodes[t]
            deps = list(n.upstream) + list(n.elsewhere)
            note = f" [{n.condition} of {', '.join(deps)}]" if deps and n.condition != "ALL" else ""
            if n.elsewhere and n.condition == "ALL":
                note = f" [also {', '.join(n.elsewhere)}]"
            parts.append(t + note)
        lines.append(f"wave {i}: " + ", ".join(parts))
    inactive = sorted(t for t, n in nodes.items() if not n.active)
    if inactive:
        lines.append("inactive: " + ", ".join(inactive))
    return "\n".join(lines)
