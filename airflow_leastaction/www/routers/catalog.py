"""The catalog: every task Airflow or an external system reported, with its recent slots."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import HTMLResponse

from airflow_leastaction.catalog.store import utcnow
from airflow_leastaction.identity import TASK_SOURCES
from airflow_leastaction.www.access import READ_TASKS, READABLE_DAGS
from airflow_leastaction.www.expected import expect_next_slots
from airflow_leastaction.www.params import blank, one_of
from airflow_leastaction.www.present import Clock
from airflow_leastaction.www.queries import CatalogFilter, DagScope, Page
from airflow_leastaction.www.reads import CatalogReads, CatalogRow
from airflow_leastaction.www.render import Scope, catalog_reads, display_clock, page_scope, render
from airflow_leastaction.www.schemas import CatalogTask, Identity, Listing, PublishedAsset, Slot

router = APIRouter(tags=["catalog"], dependencies=[READ_TASKS])

#: Who reports a task: Airflow's listener, a system outside Airflow, Airflow's asset events.
SOURCES = TASK_SOURCES


def catalog_filter(
    q: str | None = Query(None, description="part of the task name, any case"),
    project: str | None = None,
    state: str | None = None,
    source: str | None = None,
    dag_id: str | None = None,
) -> CatalogFilter:
    return CatalogFilter(
        search=blank(q),
        project=blank(project),
        state=blank(state),
        source=one_of(source, SOURCES, "source"),
        dag_id=blank(dag_id),
    )


def catalog_page(
    f: CatalogFilter = Depends(catalog_filter),
    reads: CatalogReads = Depends(catalog_reads),
    cursor: str | None = None,
    limit: int = Query(50, ge=1, le=500),
    scope: DagScope = READABLE_DAGS,
) -> tuple[CatalogFilter, Page]:
    return f, reads.catalog(f, blank(cursor), limit, scope)


def catalog_task(row: CatalogRow) -> CatalogTask:
    t = row.task
    return CatalogTask(
        **{
            k: t[k]
            for k in (
                "id",
                "name",
                "project",
                "account",
                "partition",
                "source",
                "cron",
                "timezone",
                "state",
                "logical_date",
                "dag_id",
                "task_id",
                "updated_at",
            )
        },
        granularity=row.granularity,
        watermark=t["prev_interval_start"],
        parents=[Identity(**p.as_dict()) for p in row.parents],
        withheld_parents=row.withheld,
        recent_slots=[Slot(**{k: s[k] for k in Slot.model_fields}) for s in row.slots],
        assets=[
            PublishedAsset(
                deployment=b.deployment,
                name=b.asset_name,
                uri=b.asset_uri,
                key_format=b.key_format,
                last_slot=b.cursor.slot if b.cursor else None,
                last_revision=b.last_revision,
                last_emitted_at=b.last_emitted_at,
            )
            for b in row.assets
        ],
    )


@router.get("/api/catalog", response_model=Listing[CatalogTask])
def list_catalog(page=Depends(catalog_page)):
    """Catalog tasks ordered by name, each with its most recent slot records."""
    _, result = page
    return Listing[CatalogTask](items=[catalog_task(r) for r in result.rows], next_cursor=result.next_cursor)


@router.get("/catalog", response_class=HTMLResponse)
def catalog_view(
    request: Request,
    page=Depends(catalog_page),
    scope: Scope = Depends(page_scope),
    reads: CatalogReads = Depends(catalog_reads),
    readable: DagScope = READABLE_DAGS,
    clock: Clock = Depends(display_clock),
):
    f, result = page
    # Each scheduled task's next slot, with when it is expected to be done: one read of each kind.
    expected = expect_next_slots(reads, [r.task for r in result.rows], clock, utcnow(), readable)
    return render(
        request, "catalog.html", "catalog", clock=clock, scope=scope, f=f, page=result, sources=SOURCES,
        expected=expected,
    )  # fmt: skip
