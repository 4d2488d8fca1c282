"""The graph a user limited to some DAGs sees: only tasks connected to the centre through readable tasks.

Checked against an oracle written from the rule's words (docs/ui.md, "Who can see what"): a task is shown
when it is a centre, or when it may be read and shares an edge with a shown task; nothing else is. Edges
are shown when both ends are.
"""

from __future__ import annotations

import datetime as dt

from hypothesis import given, settings
from hypothesis import strategies as st

from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.www.lineage import Lineage, LineageEdge, _withhold

HIDDEN_DAG = "finance_weekly"
# A node's catalog row: in a readable DAG, in the hidden DAG, external (no DAG), or not in the catalog.
ROWS = st.sampled_from(["sales_daily", HIDDEN_DAG, None, "missing"])


def _graph(kinds: list[str | None], centres: int, edges: list[tuple[int, int]]) -> Lineage:
    graph = Lineage(dt.datetime(2024, 1, 1, tzinfo=dt.UTC))
    ids = [TaskIdentity(f"t{i}", "p") for i in range(len(kinds))]
    for i, kind in enumerate(kinds):
        row = None if kind == "missing" else {"dag_id": kind, "id": i}
        graph.add(ids[i], 0 if i < centres else 1 + i % 3, row)
    graph.edges = [LineageEdge(ids[a], ids[b]) for a, b in edges if a != b]
    return graph


def _readable(row: dict) -> bool:
    return row["dag_id"] != HIDDEN_DAG


def _oracle(graph: Lineage) -> set[TaskIdentity]:
    def readable(i):
        row = graph.nodes[i].row
        return row is None or _readable(row)

    shown = {i for i, n in graph.nodes.items() if n.depth == 0}
    while True:
        more = {
            other
            for e in graph.edges
            for a, other in ((e.parent, e.child), (e.child, e.parent))
            if a in shown and other not in shown and readable(other) and readable(a)
        }
        if not more:
            return shown
        shown |= more


@st.composite
def graphs(draw):
    kinds = draw(st.lists(ROWS, min_size=1, max_size=12))
    centres = draw(st.integers(1, min(2, len(kinds))))
    # Centres are tasks the reader opened, so readable (the route answers 403 otherwise).
    kinds[:centres] = ["sales_daily"] * centres
    index = st.integers(0, len(kinds) - 1)
    edges = draw(st.lists(st.tuples(index, index), max_size=24))
    return _graph(kinds, centres, edges)


@settings(max_examples=300, deadline=None)
@given(graphs())
def test_the_graph_shows_only_tasks_reached_through_readable_tasks(graph):
    before = len(graph.nodes)
    expected = _oracle(graph)
    _withhold(graph, _readable)
    assert set(graph.nodes) == expected
    assert graph.withheld == before - len(expected)
    assert all(e.parent in expected and e.child in expected for e in graph.edges)
    assert all(n.row is None or _readable(n.row) for n in graph.nodes.values())


def test_a_parent_named_only_by_a_hidden_task_is_not_shown():
    # t0 (centre, readable) <- t1 (hidden DAG) <- t2 (named by t1 only, not in the catalog)
    graph = _graph(["sales_daily", HIDDEN_DAG, "missing"], 1, [(1, 0), (2, 1)])
    _withhold(graph, _readable)
    assert [i.name for i in graph.nodes] == ["t0"]
    assert graph.edges == [] and graph.withheld == 2


def test_a_readable_task_reached_only_through_a_hidden_one_is_not_shown():
    # t0 (centre) -> t1 (hidden) -> t2 (readable): t2 would tell that t1 names t0 and t2 names t1
    graph = _graph(["sales_daily", HIDDEN_DAG, "sales_daily", None], 1, [(0, 1), (1, 2), (3, 0)])
    _withhold(graph, _readable)
    assert {i.name for i in graph.nodes} == {"t0", "t3"}
    assert graph.withheld == 2
