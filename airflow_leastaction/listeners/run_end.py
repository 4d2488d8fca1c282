"""Mirror the outcomes Airflow sets without a worker, and mapped tasks as a whole.

Task listener hooks fire in the task runner, so a task the scheduler skips (trigger rule, branch, gate)
or marks ``upstream_failed`` leaves no slot record, and a cross-DAG child would wait for it as "has not
run yet". When a run ends (``on_dag_run_success`` / ``on_dag_run_failed``, fired by the scheduler, by
``dag.test()`` and by the API server when a run's state is set by hand) every task's final state is
reconciled with the catalog (:mod:`airflow_leastaction.airflow_seam.run_end`). A mapped task is also recorded as a
whole under its unmapped name: running while any map index runs, and finished as soon as its last map
index ends on a worker (succeeds, fails for good or is skipped), else at run end.
"""

from __future__ import annotations

import logging

from airflow.listeners import hookimpl

from airflow_leastaction.airflow_seam.run_end import TaskOutcome, mapped_task_state, outcomes_to_record, run_outcomes
from airflow_leastaction.catalog.outcomes import deliver
from airflow_leastaction.hooks.catalog import catalog_store
from airflow_leastaction.listeners.catalog import (
    dag_run_of,
    failed_state,
    run_slot_of,
    run_type_of,
    slot_of,
    task_event,
)
from airflow_leastaction.refs import airflow_task
from airflow_leastaction.states import NOT_STARTED_STATES, UNFINISHED_STATES
from airflow_leastaction.version_compat import supervisor_task_states, supervisor_ti_count

log = logging.getLogger(__name__)

#: Unfinished task states as the execution API's count filter spells them (no state is "null").
_UNFINISHED_QUERY = sorted({"null" if s in NOT_STARTED_STATES else s for s in UNFINISHED_STATES})


def _text(state) -> str | None:
    state = getattr(state, "value", state)
    return None if state is None else str(state)


def _task_instances(dag_run) -> list:
    # The hook fires inside the scheduler's (or API server's) transaction: read through the run's own
    # session so states set in this transaction, and not yet committed, are seen.
    from sqlalchemy.orm import object_session

    session = object_session(dag_run)
    return dag_run.get_task_instances(session=session) if session is not None else dag_run.get_task_instances()


def record_run_end(dag_run) -> list[TaskOutcome]:
    """Record the final task states of ``dag_run`` the catalog lacks; returns them. Never raises."""
    try:
        return _record_run_end(dag_run)
    except Exception:
        log.exception(
            "leastaction: could not reconcile the task states of run %s of %s with the catalog",
            getattr(dag_run, "run_id", "?"),
            getattr(dag_run, "dag_id", "?"),
        )
        return []


def _record_run_end(dag_run) -> list[TaskOutcome]:
    slot = run_slot_of(dag_run)
    if slot is None:
        return []
    final = [
        TaskOutcome(
            ti.task_id, -1 if ti.map_index is None else ti.map_index, _text(ti.state), max(int(ti.try_number or 0), 1)
        )
        for ti in _task_instances(dag_run)
    ]
    outcomes = run_outcomes(final)
    mapped = {o.task_id for o in final if o.map_index >= 0}
    names = {(o.task_id, o.map_index): airflow_task(dag_run.dag_id, o.task_id, map_index=o.map_index) for o in outcomes}
    try:
        found = catalog_store().runs.slot_records((identity, slot) for identity in names.values())
        todo = outcomes_to_record(outcomes, {k: found.get((i, slot)) for k, i in names.items()}, dag_run.run_id, mapped)
    except Exception as exc:  # catalog down: spool what cannot clash with a worker's own report
        log.warning(
            "leastaction: catalog unreadable at the end of run %s (%s); recording its unsuccessful "
            "outcomes and mapped tasks",
            dag_run.run_id,
            exc,
        )
        todo = [o for o in outcomes if o.state != "success" or (o.map_index < 0 and o.task_id in mapped)]
    dag = getattr(dag_run, "dag", None)
    for outcome in todo:
        deliver(
            task_event(
                outcome.state,
                dag_run.dag_id,
                outcome.task_id,
                slot,
                dag=dag,
                run_id=dag_run.run_id,
                attempt=outcome.attempt,
                run_type=run_type_of(dag_run),
                map_index=outcome.map_index,
            )
        )
    if todo:
        log.info(
            "leastaction: run %s of %s ended; recorded %s",
            dag_run.run_id,
            dag_run.dag_id,
            ", ".join(
                f"{o.task_id}[{o.map_index}]={o.state}" if o.map_index >= 0 else f"{o.task_id}={o.state}" for o in todo
            ),
        )
    return todo


def record_mapped_whole(ti, state: str) -> None:
    """When the last map index of a mapped task finishes on a worker, record the task as a whole.

    ``state`` is the map index's own: ``success``, ``failed``, ``skipped`` (``up_for_retry`` finishes
    nothing). Two map indexes finishing at once may each see the other unfinished; the run's end then
    records it, as it does map indexes the scheduler ends without a worker (``upstream_failed``).
    """
    map_index = getattr(ti, "map_index", -1)
    if map_index is None or map_index < 0:
        return
    try:
        where = {"dag_id": ti.dag_id, "task_ids": [ti.task_id], "run_ids": [ti.run_id]}
        # Count first, so a task of n map indexes reads every state only at its last ones, not n times n.
        if supervisor_ti_count(**where, states=_UNFINISHED_QUERY) > 1:
            return
        states = supervisor_task_states(**where)
    except Exception:  # not in a task runner (a state set in the UI): the run's end records it
        return
    prefix = f"{ti.task_id}_"
    by_index = {
        int(key[len(prefix) :]): _text(value)
        for key, value in (states.get(ti.run_id) or {}).items()
        if key.startswith(prefix) and key[len(prefix) :].isdigit()
    }
    by_index[map_index] = state
    whole = mapped_task_state(by_index.values())
    slot = slot_of(ti)
    if whole is None or slot is None:
        return
    dag = getattr(getattr(ti, "task", None), "dag", None)
    deliver(
        task_event(
            whole,
            ti.dag_id,
            ti.task_id,
            slot,
            dag=dag,
            run_id=ti.run_id,
            attempt=int(getattr(ti, "try_number", 1) or 1),
            run_type=run_type_of(dag_run_of(ti)),
        )
    )


@hookimpl
def on_dag_run_success(dag_run, msg):
    record_run_end(dag_run)


@hookimpl
def on_dag_run_failed(dag_run, msg):
    record_run_end(dag_run)


def record_mapped_running(ti) -> None:
    """A map index started: the mapped task as a whole is running again (a re-run stops satisfying)."""
    map_index = getattr(ti, "map_index", -1)
    slot = slot_of(ti) if map_index is not None and map_index >= 0 else None
    if slot is None:
        return
    dag = getattr(getattr(ti, "task", None), "dag", None)
    deliver(
        task_event(
            "running",
            ti.dag_id,
            ti.task_id,
            slot,
            dag=dag,
            run_id=ti.run_id,
            attempt=int(getattr(ti, "try_number", 1) or 1),
            run_type=run_type_of(dag_run_of(ti)),
        )
    )


def _whole(record, task_instance, *args) -> None:
    """Record a mapped task as a whole; a listener never fails the task it reports on."""
    try:
        record(task_instance, *args)
    except Exception:
        log.exception("leastaction: could not record mapped task %s as a whole", task_instance)


@hookimpl
def on_task_instance_running(previous_state, task_instance):
    _whole(record_mapped_running, task_instance)


@hookimpl
def on_task_instance_success(previous_state, task_instance):
    _whole(record_mapped_whole, task_instance, "success")


@hookimpl
def on_task_instance_failed(previous_state, task_instance, error):
    _whole(record_mapped_whole, task_instance, failed_state(task_instance))


@hookimpl
def on_task_instance_skipped(previous_state, task_instance):
    _whole(record_mapped_whole, task_instance, "skipped")
