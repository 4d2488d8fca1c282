"""The gates' snapshot of the catalog: the parents' task rows and their slot records inside each parent's
own windows, read in two statements for any number of waiting gates (see :meth:`CatalogStore.snapshot`)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable

from sqlalchemy import and_, column, func, select, values
from sqlalchemy.engine import Connection

from airflow_leastaction.catalog.schema import in_chunks, task, task_run
from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.intervals.judging import SlotIndex, SlotSnapshot, TaskSnapshot, merge_windows, read_window

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
    """The slot records of ``tasks`` inside each one's windows of ``wanted``: one statement per
    :data:`WINDOWS_PER_QUERY` (parent, window) rows, none when there is no window."""
    slots = SlotIndex()
    by_window: dict[tuple[dt.datetime, dt.datetime], list[int]] = {}
    for ident, t in tasks.items():
        for window in task_windows(t, wanted[ident]):
            by_window.setdefault(window, []).append(t.pk)
    for rows in _window_rows(by_window):
        # The windows travel as a VALUES list joined to the slot records: one statement for any
        # number of windows (an OR chain of them would hit SQLite's expression-depth limit).
        windows = (
            values(
                column("pk", task_run.c.task_pk.type),
                column("s", task_run.c.slot.type),
                column("e", task_run.c.slot.type),
                name="w",
            )
            .data(rows)
            .cte("w")
        )
        slots.extend(
            SlotSnapshot(r.id, r.task_pk, r.slot, r.state, r.output_revision, r.rows_written, r.repair_pending)
            for r in conn.execute(
                select(
                    task_run.c.id,
                    task_run.c.task_pk,
                    task_run.c.slot,
                    task_run.c.state,
                    task_run.c.output_revision,
                    task_run.c.rows_written,
                    task_run.c.repair_pending,
                ).join(
                    windows,
                    and_(
                        task_run.c.task_pk == windows.c.pk,
                        task_run.c.slot >= windows.c.s,
                        task_run.c.slot < windows.c.e,
                    ),
                )
            )
        )
    return slots


def task_windows(t: TaskSnapshot, intervals) -> list[tuple[dt.datetime, dt.datetime]]:
    """The merged windows of slot records that judging ``t`` for ``intervals`` (``(start, end)``) reads."""
    return merge_windows(read_window(t, ci, end) for ci, end in intervals)


def task_columns():
    """The task row columns a snapshot holds (with the task's first recorded slot)."""
    first = (
        select(func.min(task_run.c.slot)).where(task_run.c.task_pk == task.c.id).scalar_subquery().label("first_slot")
    )
    c = task.c
    return (c.id, c.name, c.project, c.account, c.partition, c.cron, c.timezone, c.state, c.prev_interval_start, first)


def task_snapshot(row) -> TaskSnapshot:
    """A row of :func:`task_columns` as a snapshot."""
    return TaskSnapshot(
        row.id,
        TaskIdentity.from_row(row),
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


#: (parent, window) rows read by one statement: three bound parameters each, under every driver's limit.
WINDOWS_PER_QUERY = 10_000


def _window_rows(by_window: dict[tuple[dt.datetime, dt.datetime], list[int]]):
    """``(task pk, start, end)`` rows, one per parent and window, in chunks of :data:`WINDOWS_PER_QUERY`."""
    rows = [(pk, start, end) for (start, end), pks in sorted(by_window.items()) for pk in sorted(pks)]
    for i in range(0, len(rows), WINDOWS_PER_QUERY):
        yield rows[i : i + WINDOWS_PER_QUERY]
