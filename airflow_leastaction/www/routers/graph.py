"""The dependency graph around a task, and the DAG view (a DAG's catalog parents and children)."""

from __future__ import annotations

import datetime as dt

from fastapi import APIRouter, Depends, HTTPException, Query, Request, status
from fastapi.responses import HTMLResponse

from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.www.access import READ_TASKS, READABLE_DAGS, require_readable
from airflow_leastaction.www.lineage import Lineage, build_lineage
from airflow_leastaction.www.params import blank, parse_time
from airflow_leastaction.www.reads import CatalogFilter, CatalogReads, DagScope
from airflow_leastaction.www.render import catalog_reads, render
from airflow_leastaction.www.schemas import Graph, GraphEdge, GraphNode, Identity

router = APIRouter(tags=["graph"], dependencies=[READ_TASKS])


def _interval(value: str | None, rows: list[dict]) -> dt.datetime:
    # Default: the latest interval the centre tasks ran, else now.
    chosen = parse_time(value, "interval")
    if chosen is not None:
        return chosen
    dates = [r["logical_date"] for r in rows if r["logical_date"] is not None]
    return max(dates) if dates else dt.datetime.now(dt.UTC)


def task_graph(
    task_pk: int | None = None,
    interval: str | None = Query(None, description="child interval to judge edges for"),
    up: int = Query(2, ge=0, le=6),
    down: int = Query(2, ge=0, le=6),
    reads: CatalogReads = Depends(catalog_reads),
    scope: DagScope = READABLE_DAGS,
) -> tuple[dict | None, Lineage | None]:
    if task_pk is None:
        return None, None
    row = reads.task_by_pk(task_pk)
    if row is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no catalog task with id {task_pk}")
    require_readable(scope, row["dag_id"], f"catalog task {task_pk}")
    return row, build_lineage(
        reads.engine, [row], _interval(interval, [row]), up=up, down=down, visible=_visible(scope)
    )


def _visible(scope: DagScope):
    return None if scope.dag_ids is None else (lambda row: scope.allows(row["dag_id"]))


def graph_model(graph: Lineage) -> Graph:
    return Graph(
        interval=graph.interval,
        truncated=graph.truncated,
        withheld=graph.withheld,
        nodes=[
            GraphNode(
                task_pk=n.pk,
                identity=Identity(**i.as_dict()),
                label=str(i),
                depth=n.depth,
                state=n.state,
                in_catalog=n.row is not None,
            )
            for i, n in graph.nodes.items()
        ],
        edges=[
            GraphEdge(
                parent=str(e.parent), child=str(e.child), satisfied=e.satisfied, rejected=e.rejected, reason=e.reason
            )
            for e in graph.edges
        ],
    )


@router.get("/api/graph", response_model=Graph)
def get_graph(found=Depends(task_graph)):
    """Ancestors and descendants of ``task_pk``, each edge judged for ``interval``."""
    _, graph = found
    if graph is None:
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, "task_pk is required")
    return graph_model(graph)


@router.get("/graph", response_class=HTMLResponse)
def graph_view(
    request: Request,
    q: str | None = None,
    found=Depends(task_graph),
    reads: CatalogReads = Depends(catalog_reads),
    scope: DagScope = READABLE_DAGS,
):
    centre, graph = found
    matches = reads.catalog(CatalogFilter(search=blank(q)), None, 20, scope).rows if blank(q) else []
    return render(request, "graph.html", "graph", centre=centre, graph=graph, q=blank(q) or "", matches=matches)


@router.get("/dag", response_class=HTMLResponse)
def dag_view(
    request: Request,
    dag_id: str,
    interval: str | None = None,
    reads: CatalogReads = Depends(catalog_reads),
    scope: DagScope = READABLE_DAGS,
):
    """The catalog tasks of one DAG with their declared parents and the tasks that name them as parents."""
    require_readable(scope, dag_id, f"DAG {dag_id!r}")  # also the router's check; kept next to the read
    rows = reads.tasks_of_dag(dag_id)
    graph = (
        build_lineage(reads.engine, rows, _interval(interval, rows), up=1, down=1, visible=_visible(scope))
        if rows
        else None
    )
    sections = [
        (r, graph.parents_of(TaskIdentity.from_row(r)), graph.children_of(TaskIdentity.from_row(r))) for r in rows
    ]
    return render(request, "dag.html", "graph", dag_id=dag_id, rows=rows, graph=graph, sections=sections)
