"""The dbt queue: what is pending or running, in which batch, and what requests did to the queue."""

from __future__ import annotations

from dataclasses import dataclass

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse

from airflow_leastaction.dbt.queue_reads import OUTCOMES, QueueReads, QueueView
from airflow_leastaction.www.access import READ_TASK_INSTANCES, requires_access_every_dag
from airflow_leastaction.www.links import TaskInstanceRef
from airflow_leastaction.www.params import blank
from airflow_leastaction.www.present import Clock
from airflow_leastaction.www.reads import CatalogReads
from airflow_leastaction.www.render import catalog_reads, display_clock, render
from airflow_leastaction.www.schemas import Queue

# The queue merges the requests of every DAG that asks for models (one row per model, its request
# count across DAGs): it cannot be cut per DAG without miscounting, so it needs read access to every DAG.
router = APIRouter(tags=["queue"], dependencies=[READ_TASK_INSTANCES, Depends(requires_access_every_dag)])

# The chart's geometry, in pixels.
BAR, PLOT_H, LEFT, TOP = 26, 150, 44, 10


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
        passes=view.passes,
        today=view.today,
    )


@dataclass(frozen=True)
class Chart:
    """The stacked bars of request outcomes per hour, with a y-axis of request counts."""

    width: int
    height: int
    bars: list[dict]
    ticks: list[dict]
    labels: list[dict]


def _nice_top(peak: int) -> int:
    for step in (1, 2, 5):
        for scale in (1, 10, 100, 1000, 10000, 100000):
            if step * scale * 4 >= peak:
                return step * scale * 4
    return peak


def chart(view: QueueView, clock: Clock) -> Chart:
    peak = max((b.total for b in view.buckets), default=0)
    top = _nice_top(max(peak, 1))
    bars, labels = [], []
    for i, b in enumerate(view.buckets):
        x, y = LEFT + i * BAR, TOP + PLOT_H
        for outcome in OUTCOMES:
            h = round(b.counts[outcome] / top * PLOT_H, 1)
            y -= h
            if h:
                title = f"{clock.when(b.hour)}: {b.counts[outcome]} {outcome}"
                bars.append({"x": x, "y": round(y, 1), "w": BAR - 4, "h": h, "outcome": outcome, "title": title})
        if i % 6 == 0:
            labels.append({"x": x, "text": clock.hour(b.hour)})
    ticks = [{"y": round(TOP + PLOT_H - v / top * PLOT_H, 1), "value": v} for v in range(0, top + 1, top // 4)]
    return Chart(LEFT + len(view.buckets) * BAR + 8, TOP + PLOT_H + 24, bars, ticks, labels)


@router.get("/queue", response_class=HTMLResponse)
def queue_page(request: Request, view: QueueView = Depends(queue_view), clock: Clock = Depends(display_clock)):
    batch_tis = {b["id"]: TaskInstanceRef.parse(b.get("airflow_ti")) for b in view.batches}
    return render(
        request,
        "queue.html",
        "queue",
        clock=clock,
        view=view,
        outcomes=OUTCOMES,
        chart=chart(view, clock),
        batch_tis=batch_tis,
        ti_ref=TaskInstanceRef.parse,
    )
