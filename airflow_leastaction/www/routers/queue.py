"""The dbt queue: what is pending or running, in which batch, and what requests did to the queue."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse

from airflow_leastaction.dbt.queue_reads import OUTCOMES, QueueReads, QueueView
from airflow_leastaction.www.access import READ_TASK_INSTANCES, requires_access_every_dag
from airflow_leastaction.www.params import blank
from airflow_leastaction.www.reads import CatalogReads
from airflow_leastaction.www.render import catalog_reads, render
from airflow_leastaction.www.schemas import Queue

# The queue merges the requests of every DAG that asks for models (one row per model, its request
# count across DAGs): it cannot be cut per DAG without miscounting, so it needs read access to every DAG.
router = APIRouter(tags=["queue"], dependencies=[READ_TASK_INSTANCES, Depends(requires_access_every_dag)])


def queue_view(environment: str | None = None, reads: CatalogReads = Depends(catalog_reads)) -> QueueView:
    return QueueReads(reads.engine).page(blank(environment))


@router.get("/api/queue", response_model=Queue)
def get_queue(view: QueueView = Depends(queue_view)):
    """Active rows, hourly request outcomes, recent batches and request events of one environment."""
    return Queue(
        environments=view.environments,
        environment=view.environment,
        active=view.active,
        outcomes=[{"hour": b.hour, **b.counts} for b in view.buckets],
        batches=view.batches,
        events=view.events,
    )


@router.get("/queue", response_class=HTMLResponse)
def queue_page(request: Request, view: QueueView = Depends(queue_view)):
    peak = max((b.total for b in view.buckets), default=0)
    return render(request, "queue.html", "queue", view=view, outcomes=OUTCOMES, peak=peak)
