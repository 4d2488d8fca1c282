"""Gate verdicts: why a task attempt was (not) admitted, newest first; each verdict over its decisions.

A run-condition gate records its decisions under its own task id (``<task>__gate``); they are the
admission of the task it gates, so filtering by a task also shows its gate's decisions, and each
verdict links the gate and its task both ways.
"""

from __future__ import annotations

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import HTMLResponse

from airflow_leastaction.catalog.store import utcnow
from airflow_leastaction.gating.engine import DecisionResult
from airflow_leastaction.run_conditions.model import gate_task_id, gated_task_id, is_gate_task_id
from airflow_leastaction.www import airflow_state
from airflow_leastaction.www.access import READ_TASK_INSTANCES, READABLE_DAGS
from airflow_leastaction.www.attempts import AttemptView, attempt_views, undecided_view, waiting_views, with_warnings
from airflow_leastaction.www.expected import expect_cards
from airflow_leastaction.www.names import Names
from airflow_leastaction.www.params import MAX_INT32, blank, bounded_int, one_of, parse_time
from airflow_leastaction.www.present import Clock
from airflow_leastaction.www.queries import Cursor, DagScope, DecisionFilter, Page
from airflow_leastaction.www.reads import ROWS_OF_ONE_ATTEMPT, ROWS_PER_ATTEMPT, CatalogReads
from airflow_leastaction.www.render import Scope, catalog_reads, display_clock, page_scope, render
from airflow_leastaction.www.schemas import Attempt, DeadlineWarning, Decision, Listing

router = APIRouter(tags=["decisions"], dependencies=[READ_TASK_INSTANCES])

RESULTS = tuple(r.value for r in DecisionResult)


def decision_filter(
    dag_id: str | None = Query(None, description="exact DAG id"),
    task_id: str | None = Query(None, description="exact task id (its run-condition gate's decisions too)"),
    run_id: str | None = Query(None, description="exact run id"),
    map_index: str | None = None,
    result: str | None = None,
    since: str | None = Query(None, description="ISO datetime, inclusive; naive means Airflow's default timezone"),
    until: str | None = Query(None, description="ISO datetime, exclusive; naive means Airflow's default timezone"),
    dag: str | None = Query(None, description="part of a DAG id, any case"),
    task: str | None = Query(None, description="part of a task id, any case"),
    run: str | None = Query(None, description="part of a run id, any case"),
    reads: CatalogReads = Depends(catalog_reads),
    clock: Clock = Depends(display_clock),
) -> DecisionFilter:
    if map_index == "{MAP_INDEX}":
        map_index = None  # the UI leaves the placeholder as is for a task instance that is not mapped
    task_id = blank(task_id)
    names = Names(reads.engine)
    dag_ids = names.dags(blank(dag)) if blank(dag) else None
    return DecisionFilter(
        dag_id=blank(dag_id),
        task_id=task_id,
        gate_task_id=gate_of(task_id),
        run_id=blank(run_id),
        map_index=bounded_int(map_index, "map_index", low=-1, high=MAX_INT32),
        result=one_of(result, RESULTS, "result"),
        since=parse_time(since, "since", clock),
        until=parse_time(until, "until", clock),
        dag_ids=dag_ids,
        task_ids=names.tasks(blank(task), dag_ids) if blank(task) else None,
        run_part=blank(run),
    )


def gate_of(task_id: str | None) -> str | None:
    """The run-condition gate that records ``task_id``'s decisions (None for a gate itself)."""
    if not task_id or is_gate_task_id(task_id):
        return None
    return gate_task_id(task_id)


def gated_by(task_id: str | None) -> str | None:
    """The task a run-condition gate admits, for a gate's task id (else None)."""
    return gated_task_id(task_id)


def decision_page(
    f: DecisionFilter = Depends(decision_filter),
    reads: CatalogReads = Depends(catalog_reads),
    cursor: str | None = None,
    limit: int = Query(50, ge=1, le=500),
    scope: DagScope = READABLE_DAGS,
) -> tuple[DecisionFilter, Page, CatalogReads]:
    return f, reads.decisions(f, Cursor.decode(blank(cursor)), limit, scope), reads


@router.get("/api/decisions", response_model=Listing[Decision])
def list_decisions(page=Depends(decision_page)):
    """Gate decisions matching the filters, newest first."""
    _, result, _ = page
    return Listing[Decision](items=result.rows, next_cursor=result.next_cursor)


def attempt_model(view: AttemptView) -> Attempt:
    v = view.verdict
    return Attempt(
        **view.key.__dict__,
        outcome=v.outcome,
        headline=v.headline,
        condition=v.condition,
        met=v.met,
        total=v.total,
        at=v.at,
        since=v.since,
        deadline=v.deadline,
        next_look=v.next_look,
        why=v.why,
        gated=list(view.gated),
        decisions=view.rows,
        warnings=[DeadlineWarning(**w, warned_at=w["created_at"]) for w in view.warnings],
    )


@router.get("/api/attempts", response_model=Listing[Attempt])
def list_attempts(page=Depends(decision_page), readable: DagScope = READABLE_DAGS):
    """Gate attempts whose decisions match the filters, newest first, each with its verdict and all its
    decisions (an attempt cut by the page's end is listed whole on both pages)."""
    _, result, reads = page
    with airflow_state.one_session():
        views = with_warnings(reads, attempt_views(reads, result.rows, readable))
    return Listing[Attempt](items=[attempt_model(v) for v in views], next_cursor=result.next_cursor)


def _one_task_instance(f: DecisionFilter) -> bool:
    return f.dag_id is not None and f.task_id is not None and f.run_id is not None


@router.get("/decisions", response_class=HTMLResponse, name="decisions_page")
def decisions_page(
    request: Request,
    page=Depends(decision_page),
    scope: Scope = Depends(page_scope),
    readable: DagScope = READABLE_DAGS,
    clock: Clock = Depends(display_clock),
):
    f, result, reads = page
    one = _one_task_instance(f)
    with airflow_state.one_session():
        views = attempt_views(reads, result.rows, readable, ROWS_OF_ONE_ATTEMPT if one else ROWS_PER_ATTEMPT)
        undecided, rule = None, ""
        if not views and one and request.query_params.get("cursor") is None:
            index = -1 if f.map_index is None else f.map_index
            undecided, rule = undecided_view(f.dag_id, f.task_id, f.run_id, index)
        waiting = [] if one or request.query_params.get("cursor") else _waiting(f, readable)
        cards = [*views, *waiting, *([undecided] if undecided else [])]
        expect_cards(reads, cards, clock, utcnow(), readable)
        with_warnings(reads, cards)
    return render(
        request,
        "decisions.html",
        "decisions",
        clock=clock,
        scope=scope,
        f=f,
        page=result,
        views=views,
        waiting=waiting,
        undecided=undecided,
        trigger_rule=rule,
        results=RESULTS,
        gated_task_id=gated_by(f.task_id),
        gated_by=gated_by,
    )


def _waiting(f: DecisionFilter, readable: DagScope) -> list[AttemptView]:
    """Gates waiting now that match the page's filters (a waiting gate records no decision yet)."""
    if f.result not in (None, "UNSATISFIED") or f.since is not None or f.until is not None:
        return []
    dags = readable.dag_ids
    for wanted in ({f.dag_id} if f.dag_id else None, set(f.dag_ids) if f.dag_ids else None):
        if wanted is not None:
            dags = wanted if dags is None else dags & wanted
    views = waiting_views(dags)
    tasks = {t for t in (f.task_id, f.gate_task_id) if t} | set(f.task_ids or ())
    return [
        v
        for v in views
        if (not tasks or v.key.task_id in tasks or set(v.gated) & tasks)
        and (f.run_id is None or v.key.run_id == f.run_id)
        and (f.run_part is None or f.run_part.lower() in v.key.run_id.lower())
    ]
