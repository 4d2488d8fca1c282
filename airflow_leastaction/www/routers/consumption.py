"""Consumption records: which upstream revision each successful attempt consumed; stale ones flagged."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import HTMLResponse

from airflow_leastaction.www.access import READ_TASK_INSTANCES, READABLE_DAGS
from airflow_leastaction.www.names import Names
from airflow_leastaction.www.params import blank, optional_int
from airflow_leastaction.www.queries import ConsumptionFilter, Cursor, DagScope, Page
from airflow_leastaction.www.reads import CatalogReads
from airflow_leastaction.www.render import Scope, catalog_reads, page_scope, render
from airflow_leastaction.www.schemas import Consumption, Listing

router = APIRouter(tags=["consumption"], dependencies=[READ_TASK_INSTANCES])


def consumption_filter(
    dag_id: str | None = Query(None, description="exact downstream DAG id"),
    task_id: str | None = Query(None, description="exact downstream task id"),
    upstream_task_pk: str | None = Query(None, description="catalog id of the upstream task"),
    stale: bool = Query(False, description="only consumers of an upstream slot that was repaired since"),
    dag: str | None = Query(None, description="part of the downstream DAG id, any case"),
    task: str | None = Query(None, description="part of the downstream task id, any case"),
    upstream: str | None = Query(None, description="part of the upstream task's catalog name, any case"),
    reads: CatalogReads = Depends(catalog_reads),
) -> ConsumptionFilter:
    names = Names(reads.engine)
    dag_ids = names.dags(blank(dag)) if blank(dag) else None
    return ConsumptionFilter(
        dag_id=blank(dag_id),
        task_id=blank(task_id),
        upstream_task_pk=optional_int(upstream_task_pk, "upstream_task_pk"),
        stale_only=stale,
        dag_ids=dag_ids,
        task_ids=names.tasks(blank(task), dag_ids) if blank(task) else None,
        upstream_task_pks=names.catalog_tasks(blank(upstream)) if blank(upstream) else None,
    )


def consumption_page(
    f: ConsumptionFilter = Depends(consumption_filter),
    reads: CatalogReads = Depends(catalog_reads),
    cursor: str | None = None,
    limit: int = Query(50, ge=1, le=500),
    scope: DagScope = READABLE_DAGS,
) -> tuple[ConsumptionFilter, Page, CatalogReads]:
    return f, reads.consumption(f, Cursor.decode(blank(cursor)), limit, scope), reads


@router.get("/api/consumption", response_model=Listing[Consumption])
def list_consumption(page=Depends(consumption_page)):
    """Consumption records, newest first, each with the upstream slot's current revision (left out, with
    the upstream, when the upstream is a task of a DAG the caller may not read)."""
    _, result, _ = page
    return Listing[Consumption](items=result.rows, next_cursor=result.next_cursor)


@router.get("/consumption", response_class=HTMLResponse)
def consumption_view(
    request: Request,
    page=Depends(consumption_page),
    readable: DagScope = READABLE_DAGS,
    scope: Scope = Depends(page_scope),
):
    f, result, reads = page
    upstream = reads.task_by_pk(f.upstream_task_pk) if f.upstream_task_pk is not None else None
    if upstream is not None and not readable.allows(upstream["dag_id"]):
        upstream = None  # the heading would name a task of a DAG this user may not read
    return render(request, "consumption.html", "consumption", scope=scope, f=f, page=result, upstream=upstream)
