"""Mirror Airflow task outcomes into the catalog: running, success, up for retry and failure per slot.

The slot is the run's slot by :func:`~airflow_leastaction.intervals.run_slot.run_slot` (data-interval
start, else logical date, else ``run_after``), the instant the run's gates judge. Runs in the worker for
task outcomes and in the API server for states set in the UI. Every write goes through
:func:`airflow_leastaction.catalog.outcomes.deliver`, which never raises: a catalog outage spools the
outcome to local disk instead of failing the task.
"""

from __future__ import annotations

import datetime as dt
import logging

from airflow.listeners import hookimpl

from airflow_leastaction.airflow_seam.schedule import schedule_meta
from airflow_leastaction.catalog.outcomes import SlotEvent, deliver
from airflow_leastaction.catalog.store import AttemptKey
from airflow_leastaction.exceptions import RowsUnreadableError
from airflow_leastaction.intervals.run_slot import run_slot
from airflow_leastaction.refs import airflow_task
from airflow_leastaction.rows import reported_rows

log = logging.getLogger(__name__)


def dag_run_of(ti):
    try:
        return ti.get_template_context()["dag_run"]
    except Exception:
        return getattr(ti, "dag_run", None)


def slot_of(ti) -> dt.datetime | None:
    return run_slot_of(dag_run_of(ti))


def run_slot_of(dag_run) -> dt.datetime | None:
    """The catalog slot of a DAG run (:func:`~airflow_leastaction.intervals.run_slot.run_slot`), an instant."""
    found = run_slot(dag_run) if dag_run is not None else None
    return found.instant if found is not None else None


def run_type_of(dag_run) -> str | None:
    """Airflow's run type of ``dag_run`` (``scheduled``, ``manual``, ``backfill``...), as plain text."""
    value = getattr(dag_run, "run_type", None)
    return None if value is None else str(getattr(value, "value", value))


def is_gate(task) -> bool:
    """Gate tasks (sensors, run-condition gates) say so with ``consumes_own_decisions = False``."""
    return task is not None and getattr(task, "consumes_own_decisions", True) is False


def admitting_gates(task) -> list[str]:
    """The gate tasks whose admission ``task`` consumes: gates directly upstream of it and, through
    each of them, the gates upstream of that gate (a sensor feeding a run-condition gate)."""
    found: set[str] = set()
    frontier = list(getattr(task, "upstream_list", ()) or ())
    while frontier:
        upstream = frontier.pop()
        if upstream.task_id in found or not is_gate(upstream):
            continue
        found.add(upstream.task_id)
        frontier.extend(upstream.upstream_list)
    return sorted(found)


def task_event(
    state: str,
    dag_id: str,
    task_id: str,
    slot: dt.datetime,
    *,
    dag,
    run_id: str,
    attempt: int,
    run_type: str | None,
    map_index: int = -1,
) -> SlotEvent:
    """The catalog event of an Airflow task's outcome in one run (``map_index`` -1: the task as a whole)."""
    return SlotEvent(
        state=state,
        identity=airflow_task(dag_id, task_id, map_index=map_index),
        slot=slot,
        at=dt.datetime.now(dt.UTC),
        meta=schedule_meta(dag, task_id, dag_id=dag_id),
        run_id=run_id,
        attempt=attempt,
        run_type=run_type,
    )


def build_event(ti, state: str, *, gate: bool | None = None, read_rows: bool = True) -> SlotEvent | None:
    """The catalog event of ``ti``'s outcome. ``gate``: whether the task admits others rather than consuming
    its own admission (None: ask the task, :func:`is_gate`; a task deserialized in the triggerer cannot say).
    ``read_rows`` False: the task reports no rows written, so its XCom is not read (from the triggerer that
    is a round trip through Airflow's API)."""
    slot = slot_of(ti)
    if slot is None:
        log.warning("leastaction: %s.%s run %s has no interval; not recorded", ti.dag_id, ti.task_id, ti.run_id)
        return None
    task = getattr(ti, "task", None)
    dag = getattr(task, "dag", None)
    map_index = getattr(ti, "map_index", -1)
    map_index = -1 if map_index is None else map_index
    attempt = int(getattr(ti, "try_number", 1) or 1)
    event = task_event(
        state,
        ti.dag_id,
        ti.task_id,
        slot,
        dag=dag,
        run_id=ti.run_id,
        attempt=attempt,
        run_type=run_type_of(dag_run_of(ti)),
        map_index=map_index,
    )
    if state == "success":
        try:
            event.rows_written = reported_rows(ti) if read_rows else None
        except RowsUnreadableError as exc:  # recorded as unknown for this reason, never as "no rows"
            event.rows_error = exc.why
        # A gate admits other tasks; they, not the gate, consume its decisions.
        if not (is_gate(task) if gate is None else gate):
            event.consumer = AttemptKey(ti.dag_id, ti.task_id, ti.run_id, map_index, attempt)
            event.gate_task_ids = admitting_gates(task)
    return event


def record_outcome(ti, state: str, *, gate: bool | None = None, read_rows: bool = True) -> None:
    """Deliver ``ti``'s outcome to the catalog (spooled while it is down). Never raises: a task's own
    outcome is never failed by its record. Also called by a trigger that ends its task in the triggerer,
    where no listener hook fires."""
    try:
        event = build_event(ti, state, gate=gate, read_rows=read_rows)
    except Exception:
        log.exception("leastaction: could not read %s for the catalog", ti)
        return
    if event is not None:
        deliver(event)  # which sweeps for the re-runs it makes due


@hookimpl
def on_task_instance_running(previous_state, task_instance):
    record_outcome(task_instance, "running")


@hookimpl
def on_task_instance_success(previous_state, task_instance):
    record_outcome(task_instance, "success")


def failed_state(ti) -> str:
    """``up_for_retry`` or ``failed``: Airflow calls the failed hook for an attempt it will retry too.

    The task runner sets ``ti.state`` to its decision (retries left, the retry policy) before it calls
    the hook; only the last attempt, or a state set in the UI, is ``failed``.
    """
    state = getattr(ti, "state", None)
    return "up_for_retry" if getattr(state, "value", state) == "up_for_retry" else "failed"


@hookimpl
def on_task_instance_failed(previous_state, task_instance, error):
    record_outcome(task_instance, failed_state(task_instance))


@hookimpl
def on_task_instance_skipped(previous_state, task_instance):
    record_outcome(task_instance, "skipped")
