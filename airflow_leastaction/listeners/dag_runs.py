"""Mirror Airflow DAG runs into the catalog: what a dependency on a whole DAG is judged by.

Each run of a DAG is one slot record of its catalog identity (:func:`~airflow_leastaction.refs.airflow_dag`),
at the run's slot. Runs in the scheduler (a run starts or ends) and in the API server (a run's state set in
the UI). When a run succeeds, the SATISFIED decisions of its run gate are consumed in the same transaction
as the run's success record. Writes go through :func:`~airflow_leastaction.catalog.outcomes.deliver`, which
never raises.
"""

from __future__ import annotations

import datetime as dt
import logging

from airflow.listeners import hookimpl

from airflow_leastaction.airflow_seam.schedule import schedule_meta
from airflow_leastaction.catalog.outcomes import SlotEvent, deliver
from airflow_leastaction.catalog.store import AttemptKey
from airflow_leastaction.hooks.catalog import catalog_store
from airflow_leastaction.listeners.catalog import run_slot_of, run_type_of
from airflow_leastaction.refs import airflow_dag
from airflow_leastaction.run_conditions.model import DAG_GATE_TASK_ID
from airflow_leastaction.run_conditions.run_outcome import RUN_OUTCOME_TASK_ID

log = logging.getLogger(__name__)

#: Tasks that end a run on their own whatever happened: left out when telling whether all were skipped.
_BOOKKEEPING = frozenset({RUN_OUTCOME_TASK_ID})


def _all_skipped(dag_run) -> bool:
    """Every task of the run was skipped: Airflow ends it ``success``; the catalog records it skipped, so a
    SUCCESS dependency on this DAG is not met by it."""
    from sqlalchemy.orm import object_session

    session = object_session(dag_run)
    tis = dag_run.get_task_instances(session=session) if session is not None else dag_run.get_task_instances()
    states = [str(getattr(ti.state, "value", ti.state)) for ti in tis if ti.task_id not in _BOOKKEEPING]
    return bool(states) and all(s == "skipped" for s in states)


def build_run_event(dag_run, state: str) -> SlotEvent | None:
    slot = run_slot_of(dag_run)
    if slot is None:
        log.warning("leastaction: run %s of %s has no slot; not recorded", dag_run.run_id, dag_run.dag_id)
        return None
    dag = getattr(dag_run, "dag", None)
    attempt = int(getattr(dag_run, "clear_number", 0) or 0) + 1
    event = SlotEvent(
        state=state,
        identity=airflow_dag(dag_run.dag_id),
        slot=slot,
        at=dt.datetime.now(dt.UTC),
        meta=schedule_meta(dag, dag_id=dag_run.dag_id),
        run_id=dag_run.run_id,
        attempt=attempt,
        run_type=run_type_of(dag_run),
    )
    if state == "success":
        if _all_skipped(dag_run):
            event.state = "skipped"
            return event
        try:
            total, error = catalog_store().runs.run_rows_written(dag_run.dag_id, dag_run.run_id)
            # No rows from the tasks that could be read, one that could not: unknown for that reason, not "none".
            event.rows_written, event.rows_error = (None, error) if error and not total else (total, None)
        except Exception as exc:  # the catalog is down: spooled with why its rows are unknown, not as "none"
            log.warning("leastaction: rows written by run %s of %s unknown", dag_run.run_id, dag_run.dag_id)
            event.rows_error = f"the catalog could not be read: {type(exc).__name__}"
        event.consumer = AttemptKey(dag_run.dag_id, DAG_GATE_TASK_ID, dag_run.run_id, -1, attempt)
        event.gate_task_ids = [DAG_GATE_TASK_ID]
        event.consume_own = False
    return event


def _record(dag_run, state: str) -> None:
    try:
        event = build_run_event(dag_run, state)
    except Exception:
        log.exception("leastaction: could not read run %s for the catalog", getattr(dag_run, "run_id", dag_run))
        return
    if event is not None:
        deliver(event)  # which sweeps for the re-runs it makes due


@hookimpl
def on_dag_run_running(dag_run, msg):
    _record(dag_run, "running")


@hookimpl
def on_dag_run_success(dag_run, msg):
    _record(dag_run, "success")


@hookimpl
def on_dag_run_failed(dag_run, msg):
    _record(dag_run, "failed")
