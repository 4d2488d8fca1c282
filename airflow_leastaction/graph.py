"""Validating a DAG's run conditions and laying its tasks out as waves. Pure logic, no Airflow import.

The checks run at DAG parse time (each ``run_condition(...)`` declaration, then the whole graph) and in
``airflow-leastaction graph``. Each kind of mistake raises its own exception class with its own exit
status. Waves are the guaranteed-safe order: every task appears after all its upstreams, even an ANY or
N task that may start sooner during a run.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from airflow_leastaction.exceptions import (
    CountWithoutNError,
    DependencyCycleError,
    InactiveDependencyError,
    InvalidCountError,
    RunConditionError,
    SelfDependencyError,
    UnknownDependencyTypeError,
    UnknownTaskError,
)
from airflow_leastaction.gate import DependencyType

CONDITION_KINDS = ("ALL", "ANY", "N")


@dataclass(frozen=True)
class Node:
    """A task of the graph: its upstream task ids in the same DAG, its run condition, and if it is active."""

    task_id: str
    upstream: tuple[str, ...] = ()
    condition: str = "ALL"
    active: bool = True
    elsewhere: tuple[str, ...] = ()  # dependencies on tasks in other DAGs: shown, not placed in waves


def check_type(dag_id: str | None, task_id: str, value) -> DependencyType:
    try:
        return DependencyType(str(getattr(value, "value", value)).upper())
    except ValueError:
        names = ", ".join(m.value for m in DependencyType)
        raise UnknownDependencyTypeError(dag_id, task_id, f"unknown dependency type {value!r}; expected one "
                                         f"of {names}") from None


def check_condition(dag_id: str | None, task_id: str, kind, count, total: int) -> tuple[str, int | None]:
    """Check a run condition for a task with ``total`` dependencies; returns (kind, count)."""
    kind = str(kind or "ALL").upper()
    if kind not in CONDITION_KINDS:
        raise RunConditionError(dag_id, task_id, f"unknown run condition {kind!r}; expected ALL, ANY or N")
    if count is not None and kind != "N":
        raise CountWithoutNError(dag_id, task_id, f"a count ({count}) is set only with run condition N, not {kind}")
    if kind == "N":
        if count is None or isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise InvalidCountError(dag_id, task_id, f"run condition N needs a count of at least 1, got {count!r}")
        if count > total:
            raise InvalidCountError(dag_id, task_id, f"run condition N needs {count} satisfied dependencies but "
                                    f"the task has only {total}; it could never start")
    return kind, count


def check_upstreams(dag_id: str | None, task_id: str, upstream: Iterable[str], known: Iterable[str]) -> None:
    """Self-dependency and dependencies on tasks the DAG does not have."""
    known = set(known)
    for up in upstream:
        if up == task_id:
            raise SelfDependencyError(dag_id, task_id, "the task depends on itself")
        if up not in known:
            raise UnknownTaskError(dag_id, task_id, f"depends on task {up!r}, which the DAG does not have")


def find_cycle(nodes: Mapping[str, Node]) -> list[str] | None:
    """A cycle as a list of task ids (first == last), or None."""
    color: dict[str, int] = {}
    stack: list[str] = []

    def visit(tid: str) -> list[str] | None:
        color[tid] = 1
        stack.append(tid)
        for up in nodes[tid].upstream if tid in nodes else ():
            if color.get(up) == 1:
                return stack[stack.index(up):] + [up]
            if up in nodes and color.get(up) is None:
                found = visit(up)
                if found:
                    return found
        stack.pop()
        color[tid] = 2
        return None

    for tid in sorted(nodes):
        if color.get(tid) is None:
            found = visit(tid)
            if found:
                return list(reversed(found))
    return None


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
                raise InactiveDependencyError(dag_id, node.task_id, f"depends on inactive task {up!r}; it could "
                                              "never run (activate it or drop the dependency)")
    cycle = find_cycle({t: n for t, n in nodes.items() if n.active})
    if cycle:
        raise DependencyCycleError(dag_id, cycle[0], "dependency cycle: " + " -> ".join(cycle))


def waves(nodes: Mapping[str, Node]) -> list[list[str]]:
    """Active tasks in waves: each wave depends only on earlier ones. Call :func:`validate` first."""
    active = {t: n for t, n in nodes.items() if n.active}
    placed: dict[str, int] = {}
    remaining = set(active)
    out: list[list[str]] = []
    while remaining:
        wave = sorted(t for t in remaining if all(u in placed for u in active[t].upstream))
        if not wave:
            raise DependencyCycleError(None, min(remaining), "dependency cycle among " + ", ".join(sorted(remaining)))
        for t in wave:
            placed[t] = len(out)
        remaining -= set(wave)
        out.append(wave)
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
