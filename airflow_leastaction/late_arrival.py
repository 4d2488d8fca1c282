"""Re-running a degraded run once what it ran without arrives (``Fallback(on_late_arrival="rerun")``).

Called by whoever records a completion: the catalog listener after a task's success (the late upstream's,
or the degraded consumer's own), and ``report_completion`` for systems outside Airflow. Each re-run that is
due (:meth:`~airflow_leastaction.catalog.late_arrivals.LateArrivals.due_late_arrivals`) is claimed by one
of them, and cleared through Airflow's API (:mod:`~airflow_leastaction.airflow_api`): the gate judges
again and admits in full, the task runs again and consumes what arrived. The catalog keeps the outcome.
"""

from __future__ import annotations

import datetime as dt
import logging
import time

from airflow_leastaction.airflow_api import AirflowApi
from airflow_leastaction.catalog.audit import AttemptKey
from airflow_leastaction.catalog.late_arrivals import FAILED, RERUN, DueRerun
from airflow_leastaction.catalog.store import CatalogStore

log = logging.getLogger(__name__)

#: After a clear, how many times (and how many seconds apart) the run is looked at in case it ended anyway.
REQUEUE_LOOKS = 10
REQUEUE_PAUSE = 1.0


def after_completion(
    store: CatalogStore,
    *,
    task_pk: int | None = None,
    slot: dt.datetime | None = None,
    consumer: AttemptKey | None = None,
    api: AirflowApi | None = None,
) -> list[str]:
    """Re-run every degraded run that the completion of ``slot`` of task ``task_pk`` (or the success of
    ``consumer``) made due. Returns what was done, one line per re-run; never raises: a re-run that cannot
    be made is recorded ``failed`` with the reason, and ``stale`` still lists the run."""
    try:
        due = store.due_late_arrivals(task_pk, slot) if task_pk is not None else []
        if consumer is not None:
            due += [d for d in store.due_late_arrivals(consumer=consumer) if d.id not in {x.id for x in due}]
    except Exception:
        log.exception("leastaction: could not look for degraded runs to re-run")
        return []
    return [line for rerun in due if (line := _rerun(store, rerun, api))]


def _rerun(store: CatalogStore, rerun: DueRerun, api: AirflowApi | None) -> str | None:
    try:
        if not store.claim_late_arrival(rerun.id):
            return None  # another process claimed it
    except Exception:
        log.exception("leastaction: could not claim the re-run of %s run %s", rerun.dag_id, rerun.run_id)
        return None
    what = ", ".join(rerun.to_clear) if rerun.to_clear else "every task"
    try:
        api = api or AirflowApi.from_connection()
        cleared = api.clear(rerun.dag_id, rerun.run_id, rerun.to_clear)
        line = f"{rerun.dag_id} run {rerun.run_id}: cleared {len(cleared)} task instance(s) ({what}) to re-run"
        store.finish_late_arrival(rerun.id, RERUN, line)
    except Exception as exc:
        line = f"{rerun.dag_id} run {rerun.run_id}: the re-run on late arrival failed: {exc}"
        log.warning("leastaction: %s", line)
        try:
            store.finish_late_arrival(rerun.id, FAILED, line)
        except Exception:
            log.exception("leastaction: could not record that %s", line)
        return line
    try:
        if _keep_queued(api, rerun):
            line += " (the run was set back to queued: it had ended as they were cleared)"
            store.finish_late_arrival(rerun.id, RERUN, line)
    except Exception as exc:  # cleared; only the look at whether they started again failed
        log.warning("leastaction: %s; could not check that they started: %s", line, exc)
    log.info("leastaction: %s", line)
    return line


def _keep_queued(api: AirflowApi, rerun: DueRerun, looks: int = REQUEUE_LOOKS) -> bool:
    """Make sure the cleared tasks run. The completion that made the re-run due is often the last task of
    the run, whose end the scheduler may be recording as the tasks are cleared: the run then ends with them
    cleared and never started. Until they are on their way, a run that ended is set back to queued. True
    when it had to be."""
    requeued = False
    for _ in range(looks):
        states = api.task_states(rerun.dag_id, rerun.run_id)
        if all(states.get(t) is not None for t in (rerun.to_clear or states)):
            return requeued  # scheduled again (or already done)
        if api.run(rerun.dag_id, rerun.run_id).get("state") in ("success", "failed"):
            api.requeue(rerun.dag_id, rerun.run_id)
            requeued = True
        time.sleep(REQUEUE_PAUSE)
    return requeued


def after_delivered(event, outcome) -> None:
    """:func:`after_completion` for a listener's catalog event once it was applied (``outcome``): a success
    that published a revision may be what a degraded run waited for, or the degraded run's own success."""
    if outcome is None or event.state != "success" or not outcome.applied:
        return
    try:
        store = CatalogStore()
    except Exception:
        log.exception("leastaction: could not look for degraded runs to re-run")
        return
    after_completion(store, task_pk=outcome.task_pk, slot=event.slot, consumer=event.consumer)
