"""Expected times as JSON: when a task's slot is expected to be done, and which parent decides it."""

from __future__ import annotations

import re

from fastapi import APIRouter, Depends, HTTPException, Query, status

from airflow_leastaction.catalog.store import utcnow
from airflow_leastaction.expectations.reads import expectations_with_dags, find_task, next_open_slot
from airflow_leastaction.expectations.wording import expectation_json, expectation_line
from airflow_leastaction.www.access import READ_TASKS, READABLE_DAGS
from airflow_leastaction.www.expected import withhold
from airflow_leastaction.www.params import blank, parse_time, unprocessable
from airflow_leastaction.www.present import Clock
from airflow_leastaction.www.queries import DagScope
from airflow_leastaction.www.reads import CatalogReads
from airflow_leastaction.www.render import catalog_reads, display_clock
from airflow_leastaction.www.schemas import Eta

# The dag_id in the query is the DAG READ_TASKS checks access to: 403 for a DAG the caller may not read.
router = APIRouter(tags=["expected times"], dependencies=[READ_TASKS])

#: An Airflow id: letters, digits, ``_``, ``-`` and ``.``, at most 250 characters.
AIRFLOW_ID = re.compile(r"[\w.-]{1,250}", re.ASCII)


def airflow_id(value: str | None, name: str) -> str:
    """``value`` as an Airflow DAG or task id; 422 naming ``name`` otherwise."""
    value = blank(value)
    if value is None or not AIRFLOW_ID.fullmatch(value):
        raise unprocessable(f"{name} must be an Airflow id (letters, digits, _ - and ., at most 250), got {value!r}")
    return value


@router.get("/api/eta", response_model=Eta)
def eta(
    dag_id: str = Query(..., description="the task's DAG"),
    task_id: str = Query(..., description="the task"),
    slot: str | None = Query(
        None,
        description="the slot (interval start), ISO; naive means Airflow's default timezone; "
        "default: the task's next slot not yet complete",
    ),
    reads: CatalogReads = Depends(catalog_reads),
    clock: Clock = Depends(display_clock),
    readable: DagScope = READABLE_DAGS,
) -> Eta:
    """When the task's slot is expected to be done (median and p90), its status, and the critical path of
    parents that decides it; times of day in the line in Airflow's default timezone. 404 when the catalog
    has no such task."""
    dag_id, task_id = airflow_id(dag_id, "dag_id"), airflow_id(task_id, "task_id")
    when = parse_time(slot, "slot", clock)
    row = find_task(reads, dag_id=dag_id, task_id=task_id)
    if row is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"task {task_id!r} of DAG {dag_id!r} is not in the catalog")
    now = utcnow()
    when = when or next_open_slot(row, now)
    if when is None:
        raise unprocessable("slot is needed: the task has no schedule the catalog can read (ad hoc)")
    found, dags = expectations_with_dags(reads, [(row.identity, when)], now, zone=clock.zone)
    shown = withhold(found[(str(row.identity), when)], dags, readable)
    return Eta(**expectation_json(shown), line=expectation_line(shown, clock.zone, now))
