"""Re-running a degraded run once what it ran without arrives (``Fallback(on_late_arrival="rerun")``).

A durable, swept, idempotent step. The arrival is the durable record: a re-run is due when its run ran
without slots that have all completed since (``LateArrivals.due`` in
:mod:`~airflow_leastaction.catalog.late_arrivals`), which the catalog answers from what is committed, so
nothing is lost when a process dies right after recording a completion. A sweep takes what is due and what
an earlier claimant left: every writer path sweeps for what it recorded (a listener's or an asset event's
delivery, a spool replay, a report from outside Airflow, the same report retried), and ``airflow-leastaction
catalog rerun-late`` sweeps everything. Each due re-run is claimed with a lease (one claimant; a claim that
outlived its lease is taken back) and cleared through Airflow's API
(:mod:`~airflow_leastaction.airflow_seam.api`): the gate judges again and admits in full, the task runs again and
consumes what arrived. The run's ``queued_at`` is kept before the clear is asked, and Airflow changes it on
every clear: a claimant taking over sees whether the clear it would ask was made already, so the run is
cleared once whatever process dies where. The row keeps the outcome.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections.abc import Iterable

from airflow_leastaction.airflow_seam.api import AirflowApi
from airflow_leastaction.catalog.audit import AttemptKey
from airflow_leastaction.catalog.late_arrivals import FAILED, LEASE, RERUN, DueRerun
from airflow_leastaction.catalog.store import CatalogStore
from airflow_leastaction.config import setting
from airflow_leastaction.crash_points import CrashPoint

log = logging.getLogger(__name__)

#: After a clear, how many times (and how many seconds apart) the run is looked at in case it ended anyway.
REQUEUE_LOOKS = 10
REQUEUE_PAUSE = 1.0

BEFORE_SWEEP = CrashPoint("late_arrival.before_sweep", "a completion that may make a re-run due is committed")
AFTER_CLAIM = CrashPoint("late_arrival.after_claim", "a due re-run is claimed (requested, with a lease)")
AFTER_RUN_READ = CrashPoint("late_arrival.after_run_read", "the run's queued_at before the clear is recorded")
AFTER_CLEAR = CrashPoint("late_arrival.after_clear", "Airflow cleared the run's tasks; not recorded yet")


def lease() -> dt.timedelta:
    """How long a claim holds: ``[leastaction] rerun_lease_seconds`` (default 600)."""
    return dt.timedelta(seconds=float(setting("rerun_lease_seconds", str(LEASE.total_seconds()))))


def sweep(
    store: CatalogStore,
    *,
    arrivals: Iterable[tuple[int, dt.datetime]] = (),
    consumers: Iterable[AttemptKey] = (),
    everything: bool = False,
    api: AirflowApi | None = None,
) -> list[str]:
    """Re-run every degraded run due: those the completions ``arrivals`` ((task pk, slot)) or the successes
    of ``consumers`` made due, every due one with ``everything``, and those an earlier claimant left (its
    lease expired). Returns what was done, one line per re-run; never raises: a re-run that cannot be made
    is recorded ``failed`` with the reason, and ``stale`` still lists the run. A sweep with nothing to look
    at (the common case: no re-run waits on what was recorded, no claim expired) costs one query."""
    BEFORE_SWEEP()
    now = dt.datetime.now(dt.UTC)
    arrivals, consumers = list(arrivals), list(consumers)
    due: dict[int, DueRerun] = {}
    try:
        if not store.late_arrivals.any_to_sweep(now, arrivals, consumers, everything):
            return []
        for task_pk, slot in arrivals:
            due.update((d.id, d) for d in store.late_arrivals.due(task_pk, slot))
        for consumer in consumers:
            due.update((d.id, d) for d in store.late_arrivals.due(consumer=consumer))
        if everything:
            due.update((d.id, d) for d in store.late_arrivals.due_anywhere())
        due.update((d.id, d) for d in store.late_arrivals.abandoned(now))
    except Exception:
        log.exception("leastaction: could not look for degraded runs to re-run")
        return []
    return [line for rerun in due.values() if (line := _rerun(store, rerun, api))]


def after_completion(
    store: CatalogStore,
    *,
    task_pk: int | None = None,
    slot: dt.datetime | None = None,
    consumer: AttemptKey | None = None,
    api: AirflowApi | None = None,
) -> list[str]:
    """:func:`sweep` after the completion of ``slot`` of task ``task_pk`` (or the success of ``consumer``)."""
    arrivals = [(task_pk, slot)] if task_pk is not None else []
    return sweep(store, arrivals=arrivals, consumers=[consumer] if consumer is not None else [], api=api)


def _rerun(store: CatalogStore, rerun: DueRerun, api: AirflowApi | None) -> str | None:
    try:
        if not store.late_arrivals.claim(rerun.id, lease=lease()):
            return None  # another process holds it, or it is done
    except Exception:
        log.exception("leastaction: could not claim the re-run of %s run %s", rerun.dag_id, rerun.run_id)
        return None
    AFTER_CLAIM()
    what = ", ".join(rerun.to_clear) if rerun.to_clear else "every task"
    try:
        api = api or AirflowApi.from_connection()
        if _cleared_already(store, api, rerun):
            line = f"{rerun.dag_id} run {rerun.run_id}: cleared already ({what}) to re-run; not cleared twice"
            store.late_arrivals.finish(rerun.id, RERUN, line)
            return line
        cleared = api.clear(rerun.dag_id, rerun.run_id, rerun.to_clear)
        AFTER_CLEAR()
        line = f"{rerun.dag_id} run {rerun.run_id}: cleared {len(cleared)} task instance(s) ({what}) to re-run"
        store.late_arrivals.finish(rerun.id, RERUN, line)
    except Exception as exc:
        line = f"{rerun.dag_id} run {rerun.run_id}: the re-run on late arrival failed: {exc}"
        log.warning("leastaction: %s", line)
        try:
            store.late_arrivals.finish(rerun.id, FAILED, line)
        except Exception:
            log.exception("leastaction: could not record that %s", line)
        return line
    try:
        if _keep_queued(api, rerun):
            line += " (the run was set back to queued: it had ended as they were cleared)"
            store.late_arrivals.finish(rerun.id, RERUN, line)
    except Exception as exc:  # cleared; only the look at whether they started again failed
        log.warning("leastaction: %s; could not check that they started: %s", line, exc)
    log.info("leastaction: %s", line)
    return line


def _cleared_already(store: CatalogStore, api: AirflowApi, rerun: DueRerun) -> bool:
    """Whether the clear this claim would ask was made by an earlier claimant: Airflow sets a run's
    ``queued_at`` anew on every clear, so a run queued since the time kept before that claimant's clear
    was cleared. The first claimant keeps it now."""
    queued_at = str(api.run(rerun.dag_id, rerun.run_id).get("queued_at") or "")
    kept = store.late_arrivals.queued_before(rerun.id)
    if kept is None:
        store.late_arrivals.record_queued_before(rerun.id, queued_at)
        AFTER_RUN_READ()
        return False
    return queued_at != kept


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


def after_delivered(store: CatalogStore, event, outcome) -> None:
    """:func:`after_completion` for a catalog event applied (``outcome``): a success may be what a degraded
    run waited for, or the degraded run's own success. Applied or not: a success recorded already (a retry
    of a delivery whose process died before its sweep) still sweeps."""
    if outcome is None or event.state != "success":
        return
    after_completion(store, task_pk=outcome.task_pk, slot=event.slot, consumer=event.consumer)
