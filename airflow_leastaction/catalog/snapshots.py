"""The gates' snapshot of the catalog: the parents' task rows and their slot records inside each parent's
own windows, read in two statements for any number of waiting gates (see :meth:`CatalogStore.snapshot`)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable

from sqlalchemy import and_, func, select
from sqlalchemy.engine import Connection

from airflow_leastaction.catalog.bound_rows import bound_rows
from airflow_leastaction.catalog.schema import in_chunks, task, task_run
from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.intervals.judging import (
    SlotIndex,
    SlotSnapshot,
    TaskSnapshot,
    read_windows,
)

Wanted = dict[TaskIdentity, set[tuple[dt.datetime, dt.datetime | None]]]


def wanted_windows(requests: Iterable[tuple]) -> Wanted:
    """Requests ``(parent, child interval start[, end])`` grouped by parent."""
    wanted: Wanted = {}
    for identity, child_interval, *rest in requests:
        wanted.setdefault(identity, set()).add((child_interval, rest[0] if rest else None))
    return wanted


def read_snapshot(conn: Connection, wanted: Wanted) -> tuple[dict[TaskIdentity, TaskSnapshot], list[SlotSnapshot]]:
    tasks = _read_tasks(conn, wanted)
    return tasks, read_slots(conn, tasks, wanted)


def read_slots(conn: Connection, tasks: dict[TaskIdentity, TaskSnapshot], wanted: Wanted) -> SlotIndex:
    """The slot records of ``tasks`` inside each one's windows of ``wanted``: one statement for any
    number of (parent, window) pairs, none when there is no window."""
    slots = SlotIndex()
    slot_type = task_run.c.slot.type
    w = bound_rows(conn.dialect, "w", [("pk", task_run.c.task_pk.type), ("s", slot_type), ("e", slot_type)])
    # Parents on one schedule waited on for the same intervals share one windows tuple (read_windows):
    # its bounds are encoded once, not once per parent.
    encoded: dict[int, tuple] = {}
    rows = []
    for ident, t in sorted(tasks.items(), key=lambda item: item[1].pk):
        windows = read_windows(t, wanted[ident])
        bounds = encoded.get(id(windows))
        if bounds is None or bounds[0] is not windows:  # the tuple is held here, so its id stays its own
            bounds = encoded[id(windows)] = (windows, [w.encode((None, s, e))[1:] for s, e in windows])
        pk = w.encode((t.pk, None, None))[0]
        rows.extend((pk, *b) for b in bounds[1])
    if not rows:
        return slots
    pk, start, end = w.columns
    query = select(
        task_run.c.id,
        task_run.c.task_pk,
        task_run.c.slot,
        task_run.c.state,
        task_run.c.output_revision,
        task_run.c.rows_written,
        task_run.c.repair_pending,
        task_run.c.rows_error,
    ).join_from(w.table, task_run, and_(task_run.c.task_pk == pk, task_run.c.slot >= start, task_run.c.slot < end))
    slots.extend(
        map(SlotSnapshot._make, conn.execute(query, w.params(rows, encoded=True)))
    )  # the columns in its field order
    return slots


def task_columns():
    """The task row columns a snapshot holds (with the task's first recorded slot)."""
    first = (
        select(func.min(task_run.c.slot)).where(task_run.c.task_pk == task.c.id).scalar_subquery().label("first_slot")
    )
    c = task.c
    return (c.id, c.name, c.project, c.account, c.partition, c.cron, c.timezone, c.state, c.prev_interval_start, first)


def task_snapshot(row, identity: TaskIdentity | None = None) -> TaskSnapshot:
    """A row of :func:`task_columns` as a snapshot (``identity``: the row's, when the caller has it)."""
    return TaskSnapshot(
        row.id,
        identity or TaskIdentity.from_row(row),
        row.cron,
        row.timezone,
        row.state,
        row.prev_interval_start,
        row.first_slot is not None,
        row.first_slot,
    )


def _read_tasks(conn: Connection, wanted) -> dict[TaskIdentity, TaskSnapshot]:
    tasks: dict[TaskIdentity, TaskSnapshot] = {}
    for chunk in in_chunks(sorted({i.name for i in wanted})):
        for row in conn.execute(select(*task_columns()).where(task.c.name.in_(chunk))):
            snap = task_snapshot(row)
            if snap.identity in wanted:
                tasks[snap.identity] = snap
    return tasks
