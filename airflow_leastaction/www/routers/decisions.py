"""Gate decisions: why a task attempt was (not) admitted, newest first.

A run-condition gate records its decisions under its own task id (``<task>__gate``); they are the
admission of the task it gates, so filtering by a task also shows its gate's decisions, and each
page links the gate and its task both ways.
"""

from __future__ import annotations

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import HTMLResponse

from airflow_leastaction.run_conditions.run_outcome import GATE_SUFFIX
from airflow_leastaction.www.access import READ_TASK_INSTANCES, READABLE_DAGS
from airflow_leastaction.www.params import blank, one_of, optional_int, parse_time
from airflow_leastaction.www.reads import CatalogReads, Cursor, DagScope, DecisionFilter, Page
from airflow_leastaction.www.render import catalog_reads, render
from airflow_leastaction.www.schemas import Decision, Listing

router = APIRouter(tags=["decisions"], dependencies=[READ_TASK_INSTANCES])

RESULTS = ("SATISFIED", "UNSATISFIED", "BYPASSED")


def decision_filter(
    dag_id: str | None = None,
    task_id: str | None = None,
    run_id: str | None = None,
    map_index: str | None = None,
    result: str | None = None,
    since: str | None = Query(None, description="ISO datetime, inclusive; naive means UTC"),
    until: str | None = Query(None, description="ISO datetime, exclusive; naive means UTC"),
) -> DecisionFilter:
    if map_index == "{MAP_INDEX}":
        map_index = None  # the UI leaves the placeholder as is for a task instance that is not mapped
    task_id = blank(task_id)
    return DecisionFilter(
        dag_id=blank(dag_id),
        task_id=task_id,
        gate_task_id=gate_of(task_id),
        run_id=blank(run_id),
        map_index=optional_int(map_index, "map_index"),
        result=one_of(result, RESULTS, "result"),
        since=parse_time(since, "since"),
        until=parse_time(until, "until"),
    )


def gate_of(task_id: str | None) -> str | None:
    """The run-condition gate that records ``task_id``'s decisions (None for a gate itself)."""
    if task_id is None or task_id.endswith(GATE_SUFFIX):
        return None
    return task_id + GATE_SUFFIX


def gated_by(task_id: str | None) -> str | None:
    """The task a run-condition gate admits, for a gate's task id (else None)."""
    if task_id is None or not task_id.endswith(GATE_SUFFIX) or task_id == GATE_SUFFIX:
        return None
    return task_id[: -len(GATE_SUFFIX)]


def decision_page(
    f: DecisionFilter = Depends(decision_filter),
    reads: CatalogReads = Depends(catalog_reads),
    cursor: str | None = None,
    limit: int = Query(50, ge=1, le=500),
    scope: DagScope = READABLE_DAGS,
) -> tuple[DecisionFilter, Page]:
    return f, reads.decisions(f, Cursor.decode(blank(cursor)), limit, scope)


@router.get("/api/decisions", response_model=Listing[Decision])
def list_decisions(page: tuple[DecisionFilter, Page] = Depends(decision_page)):
    """Gate decisions matching the filters, newest first."""
    _, result = page
    return Listing[Decision](items=result.rows, next_cursor=result.next_cursor)


@router.get("/decisions", response_class=HTMLResponse, name="decisions_page")
def decisions_page(request: Request, page: tuple[DecisionFilter, Page] = Depends(decision_page)):
    f, result = page
    return render(
        request,
        "decisions.html",
        "decisions",
        f=f,
        page=result,
        results=RESULTS,
        gated_task_id=gated_by(f.task_id),
        gated_by=gated_by,
    )
