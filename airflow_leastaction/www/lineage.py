"""The catalog lineage (which task names which as a parent), computed on read from declared parents: no
edge is ever stored. Not the run-condition waves of a DAG (:mod:`airflow_leastaction.run_conditions.waves`).

Around one or more centre tasks, ancestors are found by reading each task's ``parents`` list and
descendants by finding the tasks whose list names a task of the frontier. Every edge is judged for one
chosen interval with the same code the gates use (:func:`judge_parent` on a :meth:`CatalogStore.snapshot`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field

from sqlalchemy.engine import Engine

from airflow_leastaction.catalog.declared_parents import naming_any, parse_parents
from airflow_leastaction.catalog.store import CatalogStore
from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.intervals.parents import judge_parents
from airflow_leastaction.www.layout import Box, lay_out
from airflow_leastaction.www.names import rows_by_identity

#: A graph page never grows past this many nodes; the page says when it was cut.
MAX_NODES = 150


@dataclass
class LineageNode:
    identity: TaskIdentity
    depth: int  # < 0 ancestors, 0 the centre, > 0 descendants
    row: dict | None  # None: named as a parent but not in the catalog
    x: int = 0
    y: int = 0
    width: int = 0
    lines: tuple[str, ...] = ()

    @property
    def state(self) -> str:
        if self.row is None:
            return "unknown"
        return self.row["state"] or "none"

    @property
    def pk(self) -> int | None:
        return None if self.row is None else self.row["id"]


@dataclass
class LineageEdge:
    parent: TaskIdentity
    child: TaskIdentity
    satisfied: bool = False
    rejected: bool = False
    reason: str = ""
    path: str = ""


@dataclass
class Lineage:
    interval: dt.datetime
    nodes: dict[TaskIdentity, LineageNode] = field(default_factory=dict)
    edges: list[LineageEdge] = field(default_factory=list)
    truncated: bool = False
    #: Tasks left out because they belong to a DAG the reader may not read (or are reached only through one).
    withheld: int = 0
    width: int = 0
    height: int = 0

    def add(self, identity: TaskIdentity, depth: int, row: dict | None) -> bool:
        if identity in self.nodes:
            return False
        if len(self.nodes) >= MAX_NODES:
            self.truncated = True
            return False
        self.nodes[identity] = LineageNode(identity, depth, row)
        return True

    def parents_of(self, identity: TaskIdentity) -> list[LineageEdge]:
        return [e for e in self.edges if e.child == identity]

    def children_of(self, identity: TaskIdentity) -> list[LineageEdge]:
        return [e for e in self.edges if e.parent == identity]


def build_lineage(
    engine: Engine,
    centres: list[dict],
    interval: dt.datetime,
    *,
    up: int = 2,
    down: int = 2,
    visible: Callable[[dict], bool] | None = None,
) -> Lineage:
    """Ancestors ``up`` levels and descendants ``down`` levels around ``centres`` (catalog task rows).

    :param visible: which catalog rows the reader may see (default: all); see :func:`_withhold`.
    """
    graph = Lineage(interval)
    for row in centres:
        graph.add(TaskIdentity.from_row(row), 0, row)
    with engine.connect() as conn:
        _walk_up(conn, graph, list(graph.nodes), up)
        _walk_down(conn, graph, [i for i, n in graph.nodes.items() if n.depth == 0], down)
    if visible is not None:
        _withhold(graph, visible)
    _judge_edges(CatalogStore(engine), graph)
    _layout(graph)
    return graph


def _walk_up(conn, graph: Lineage, frontier: list[TaskIdentity], levels: int) -> None:
    for level in range(1, levels + 1):
        declared = [(p, child) for child in frontier for p in parse_parents(_row_parents(graph, child))]
        if not declared:
            return
        rows = rows_by_identity(conn, {parent for parent, _ in declared})
        frontier = []
        for parent, child in declared:
            graph.edges.append(LineageEdge(parent, child))
            if graph.add(parent, -level, rows.get(parent)):
                frontier.append(parent)


def _row_parents(graph: Lineage, identity: TaskIdentity) -> str | None:
    row = graph.nodes[identity].row
    return None if row is None else row["parents"]


def _walk_down(conn, graph: Lineage, frontier: list[TaskIdentity], levels: int) -> None:
    seen_edges = {(e.parent, e.child) for e in graph.edges}
    for level in range(1, levels + 1):
        if not frontier:
            return
        targets = set(frontier)
        next_frontier = []
        for row in _naming_any(conn, targets):
            child = TaskIdentity.from_row(row)
            for parent in parse_parents(row["parents"]):
                if parent in targets and (parent, child) not in seen_edges:
                    seen_edges.add((parent, child))
                    graph.edges.append(LineageEdge(parent, child))
                    if graph.add(child, level, row):
                        next_frontier.append(child)
        frontier = next_frontier


def _naming_any(conn, identities: set[TaskIdentity]):
    """Task rows whose declared parents may name one of ``identities`` (the caller checks exactly)."""
    names = sorted({i.name for i in identities})
    for start in range(0, len(names), 500):
        yield from (dict(r) for r in conn.execute(naming_any(names[start : start + 500])).mappings())


def _withhold(graph: Lineage, visible: Callable[[dict], bool]) -> None:
    """Drop the catalog rows ``visible`` refuses, their edges, and whatever is then cut off from the centre.

    A task reached only through a hidden one (its parent named by a hidden declaration, say) would tell
    what the hidden task declares, so only tasks still connected to a centre through visible ones stay.
    """
    hidden = {i for i, n in graph.nodes.items() if n.row is not None and n.depth != 0 and not visible(n.row)}
    edges = [e for e in graph.edges if e.parent not in hidden and e.child not in hidden]
    neighbours: dict[TaskIdentity, set[TaskIdentity]] = {}
    for e in edges:
        neighbours.setdefault(e.parent, set()).add(e.child)
        neighbours.setdefault(e.child, set()).add(e.parent)
    reached = {i for i, n in graph.nodes.items() if n.depth == 0}
    frontier = list(reached)
    while frontier:
        for other in neighbours.get(frontier.pop(), ()):
            if other not in reached:
                reached.add(other)
                frontier.append(other)
    graph.withheld = len(graph.nodes) - len(reached)
    graph.nodes = {i: n for i, n in graph.nodes.items() if i in reached}
    graph.edges = [e for e in edges if e.parent in reached and e.child in reached]


def _judge_edges(store: CatalogStore, graph: Lineage) -> None:
    # One snapshot (two queries) for every parent in the graph, judged for the one chosen interval.
    parents = sorted({e.parent for e in graph.edges})
    if not parents:
        return
    verdicts = dict(
        zip(
            parents,
            judge_parents(parents, graph.interval, store.snapshot((p, graph.interval) for p in parents)),
            strict=True,
        )
    )
    for edge in graph.edges:
        j = verdicts[edge.parent]
        edge.satisfied, edge.rejected, edge.reason = j.satisfied, j.rejected, j.reason


#: How a box says its task is a dbt model the queue builds (catalog source ``dbt``).
_DBT_MARK = " · dbt model"


def _is_dbt(node) -> bool:
    return node.row is not None and node.row["source"] == "dbt"


def _layout(graph: Lineage) -> None:
    """Columns by depth (ancestors left), boxes sized to their labels (:mod:`~airflow_leastaction.www.layout`)."""
    if not graph.nodes:
        return
    lo = min(n.depth for n in graph.nodes.values())
    boxes = [
        Box(
            i,
            n.depth - lo,
            (i.name, f"{i.project}{_DBT_MARK if _is_dbt(n) else ''} · {n.state}"),
            order=(i.project, i.name),
        )
        for i, n in graph.nodes.items()
    ]
    canvas, curves = lay_out(boxes, [(e.parent, e.child) for e in graph.edges])
    graph.width, graph.height = canvas.width, canvas.height
    for i, n in graph.nodes.items():
        box = canvas.boxes[i]
        n.x, n.y, n.width, n.lines = box.x, box.y, box.width, box.shown
    paths = {(c.parent, c.child): c.path for c in curves}
    for edge in graph.edges:
        edge.path = paths.get((edge.parent, edge.child), "")
