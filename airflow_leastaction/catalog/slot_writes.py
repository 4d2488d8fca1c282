"""How an outcome is written to a slot record and its task's row: the slot's record, whether an outcome is
older than the one the record holds, the task's current state (never moved back by a late replay of an
older slot), and the watermark, which only moves forward. Used by
:class:`~airflow_leastaction.catalog.store.CatalogStore`'s ``record_*`` methods, inside their transactions.
"""

from __future__ import annotations

import datetime as dt

from sqlalchemy import and_, case, literal, or_, select, update
from sqlalchemy.engine import Connection

from airflow_leastaction.catalog.changes import mark_changed, mark_run_changed
from airflow_leastaction.catalog.schema import UtcDateTime, task, task_run


def slot_row(conn: Connection, task_pk: int, slot: dt.datetime):
    return conn.execute(select(task_run).where(and_(task_run.c.task_pk == task_pk, task_run.c.slot == slot))).first()


def older_than_held(current, run_id: str | None, attempt: int, at: dt.datetime) -> bool:
    """Is the outcome (``run_id``, ``attempt``, ``at``) older than the slot record ``current`` holds?

    Within one run the try number orders attempts, whatever the clocks of the machines that reported them
    say; within one attempt, and between different runs of the same slot, the time of the outcome does.
    An outcome as new as the held one applies (a success replayed twice is caught by its completion key).
    """
    if current is None:
        return False
    if run_id is not None and current.run_id == run_id and current.attempt != attempt:
        return current.attempt > attempt
    return current.updated_at > at


def update_task_state(
    conn: Connection, task_pk: int, run_pk: int, now: dt.datetime, latest: dict, always: dict | None = None
) -> None:
    """Set the task row's current state (``latest``) unless another of its slots has a newer outcome: a
    late replay of an older slot changes that slot's record, never the task's current state. Either
    way the task's slot records changed: it and the record are marked for the change sequence."""
    mark_changed(conn, task_pk)
    mark_run_changed(conn, run_pk)
    newer = conn.execute(
        select(task_run.c.id)
        .where(task_run.c.task_pk == task_pk, task_run.c.id != run_pk, task_run.c.updated_at > now)
        .limit(1)
    ).first()
    values = dict(always or {})
    if newer is None:
        values.update(latest, updated_at=now)
    if values:
        conn.execute(update(task).where(task.c.id == task_pk).values(**values))


def forward_only(slot: dt.datetime):
    # Decided in SQL, so two slots of one task completing at once can never move the watermark back.
    new = literal(slot, UtcDateTime())
    wm = task.c.prev_interval_start
    return case((or_(wm.is_(None), wm < new), new), else_=wm)
