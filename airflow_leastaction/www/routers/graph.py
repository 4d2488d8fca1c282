"""The dependency graph around a task (catalog lineage), and a DAG's dependencies (its tab in Airflow)."""

from __future__ import annotations

import datetime as dt

from fastapi import APIRouter, Depends, HTTPException, Query, Request, status
from fastapi.responses import HTMLResponse

from airflow_leastaction.www import airflow_state
from airflow_leastaction.www.access import READ_TASKS, READABLE_DAGS, require_readable
from airflow_leastaction.www.attempts import DagGates
from airflow_leastaction.www.dag_graph import DagGraph, JudgedRun, build
from airflow_leastaction.www.lineage import Lineage, build_lineage
from airflow_leastaction.www.params import MAX_ID, blank, bounded_int, parse_time
from airflow_leastaction.www.present import Clock
from airflow_leastaction.www.queries import CatalogFilter, DagScope, DecisionFilter
from airflow_leastaction.www.reads import CatalogReads
from airflow_leastaction.www.render import Scope, catalog_reads, display_clock, page_scope, render
from airflow_leastaction.www.schemas import DagDependencies, DagDependencyEdge, Graph, GraphEdge, GraphNode, Identity

router = APIRouter(tags=["graph"], dependencies=[READ_TASKS])

#: Decisions of one judged run read for a DAG's graph (every gate of a large DAG, a few dependencies each).
RUN_DECISIONS = 500


def _interval(chosen: dt.datetime | None, row: dict) -> dt.datetime:
    # Default: the latest slot the task completed (its watermark), else the one it last ran, else now.
    if chosen is not None:
        return chosen
    return row["prev_interval_start"] or row["logical_date"] or dt.datetime.now(dt.UTC)


def task_graph(
    task_pk: str | None = Query(None, description="catalog id of the centre task"),
    interval: str | None = Query(None, description="child interval to judge edges for"),
    up: int = Query(2, ge=0, le=6),
    down: int = Query(2, ge=0, le=6),
    reads: CatalogReads = Depends(catalog_reads),
    scope: DagScope = READABLE_DAGS,
    clock: Clock = Depends(display_clock),
) -> tuple[dict | None, Lineage | None]:
    pk = bounded_int(task_pk, "task_pk", low=1, high=MAX_ID)
    chosen = parse_time(interval, "interval", clock)
    if pk is None:
        return None, None
    row = reads.task_by_pk(pk)
    if row is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no catalog task with id {pk}")
    require_readable(scope, row["dag_id"], f"catalog task {pk}")
    return row, build_lineage(reads.engine, [row], _interval(chosen, row), up=up, down=down, visible=_visible(scope))


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
                source=n.row["source"] if n.row else None,
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
    readable: DagScope = READABLE_DAGS,
    scope: Scope = Depends(page_scope),
):
    centre, graph = found
    matches = reads.catalog(CatalogFilter(search=blank(q)), None, 20, readable).rows if blank(q) else []
    return render(
        request, "graph.html", "graph", scope=scope, centre=centre, graph=graph, q=blank(q) or "", matches=matches
    )


def dag_dependencies(
    dag_id: str = Query(..., max_length=250),
    run_id: str | None = Query(None, description="the run to judge (default: the latest finished run)"),
    internal: bool = Query(False, description="also draw gates and the run-outcome task"),
    interval: str | None = Query(None, description="the slot to judge catalog edges for, when no run is judged"),
    reads: CatalogReads = Depends(catalog_reads),
    readable: DagScope = READABLE_DAGS,
    clock: Clock = Depends(display_clock),
) -> tuple[DagGraph, list, airflow_state.RunFacts | None]:
    """Every dependency of ``dag_id``, each with its type and its state in the judged run."""
    require_readable(readable, dag_id, f"DAG {dag_id!r}")  # also the router's check; kept next to the read
    chosen = parse_time(interval, "interval", clock)
    with airflow_state.one_session():
        runs = airflow_state.recent_runs(dag_id)
        judged = _judged_run(dag_id, blank(run_id), runs)
        states = (
            {t: s for (t, m), s in airflow_state.run_states(dag_id, judged.run_id).items() if m < 1} if judged else {}
        )
        gates = DagGates([dag_id])
    decisions: dict[str, list[dict]] = {}
    if judged is not None:
        f = DecisionFilter(dag_id=dag_id, run_id=judged.run_id)
        for row in reads.decisions(f, None, RUN_DECISIONS).rows:
            decisions.setdefault(row["task_id"], []).append(row)
    rows = [r for r in reads.tasks_of_dag(dag_id) if r["task_id"]]
    slot = judged.slot if judged is not None and judged.slot is not None else chosen
    lineage = (
        build_lineage(reads.engine, rows, slot or _latest_slot(rows), up=1, down=1, visible=_visible(readable))
        if rows
        else None
    )
    graph = build(
        gates.tasks.get(dag_id, {}), gates.gates(dag_id), JudgedRun(states, decisions), lineage,
        dag_id=dag_id, internal=internal, catalog_tasks={r["task_id"]: r["state"] for r in rows},
    )  # fmt: skip
    return graph, runs, judged


def _judged_run(dag_id: str, run_id: str | None, runs: list) -> airflow_state.RunFacts | None:
    if run_id is not None:
        found = [r for r in runs if r.run_id == run_id] or airflow_state.recent_runs(dag_id, 1, run_id)
        if not found:
            raise HTTPException(status.HTTP_404_NOT_FOUND, f"DAG {dag_id!r} has no run {run_id!r}")
        return found[0]
    return next((r for r in runs if r.finished), runs[0] if runs else None)


def _latest_slot(rows: list[dict]) -> dt.datetime:
    dates = [r["prev_interval_start"] or r["logical_date"] for r in rows]
    return max((d for d in dates if d is not None), default=dt.datetime.now(dt.UTC))


@router.get("/api/dag", response_model=DagDependencies)
def get_dag(found=Depends(dag_dependencies)):
    """A DAG's dependencies (run conditions, run gate, sensors' parents, catalog parents and children,
    dbt), each with its type and its state in the judged run."""
    graph, _, judged = found
    return DagDependencies(
        run_id=judged.run_id if judged else None,
        slot=judged.slot if judged else None,
        hidden=graph.hidden,
        edges=[
            DagDependencyEdge(
                parent=e.parent,
                child=e.child,
                kind=e.kind,
                state=e.state,
                reason=e.reason,
            )
            for e in graph.edges
        ],  # fmt: skip
    )


@router.get("/dag", response_class=HTMLResponse)
def dag_view(
    request: Request,
    found=Depends(dag_dependencies),
    scope: Scope = Depends(page_scope),
    reads: CatalogReads = Depends(catalog_reads),
):
    """One DAG's dependencies, drawn for one run, and its runs admitted degraded at a fallback's deadline."""
    graph, runs, judged = found
    dag_id = request.query_params["dag_id"]
    scope = scope if scope.tab else Scope("dag", dag_id)
    degraded = reads.degraded_runs(dag_id)
    return render(
        request, "dag.html", "dag", scope=scope, dag_id=dag_id, graph=graph, runs=runs, judged=judged, degraded=degraded
    )
