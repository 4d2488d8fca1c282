"""The gates' snapshot of the catalog: the parents' task rows and their slot records inside each parent's
own windows, read in two statements for any number of waiting gates (see :meth:`CatalogStore.snapshot`)."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable
from dataclasses import dataclass

from sqlalchemy import BigInteger, DateTime, String, and_, bindparam, cast, func, select
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.engine import Connection

from airflow_leastaction.catalog.schema import in_chunks, task, task_run
from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.intervals.judging import (
    SlotIndex,
    SlotSnapshot,
    TaskSnapshot,
    merge_windows,
    read_window,
    schedule_error,
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
    rows = sorted((t.pk, start, end) for ident, t in tasks.items() for start, end in task_windows(t, wanted[ident]))
    if not rows:
        return slots
    windows, params = _windows_table(conn, rows)
    query = select(
        task_run.c.id,
        task_run.c.task_pk,
        task_run.c.slot,
        task_run.c.state,
        task_run.c.output_revision,
        task_run.c.rows_written,
        task_run.c.repair_pending,
    ).join_from(
        windows.table,
        task_run,
        and_(task_run.c.task_pk == windows.pk, task_run.c.slot >= windows.start, task_run.c.slot < windows.end),
    )
    slots.extend(
        SlotSnapshot(r.id, r.task_pk, r.slot, r.state, r.output_revision, r.rows_written, r.repair_pending)
        for r in conn.execute(query, params)
    )
    return slots


@dataclass(frozen=True)
class _Windows:
    table: object
    pk: object
    start: object
    end: object


def _windows_table(conn: Connection, rows: list[tuple[int, dt.datetime, dt.datetime]]):
    """The windows as a table bound in one or three parameters, so the statement compiles once whatever the
    number of windows (a VALUES list of 10,000 windows took SQLAlchemy seconds to compile): a JSON array
    unpacked by ``json_each`` on SQLite, three arrays unpacked by ``unnest`` on PostgreSQL."""
    dialect = conn.dialect
    if dialect.name == "sqlite":
        # The slots compare as the text the column stores, so the JSON carries that text.
        to_text = task_run.c.slot.type.dialect_impl(dialect).bind_processor(dialect)
        w = func.json_each(bindparam("windows", type_=String)).table_valued("value").alias("w")
        params = {"windows": json.dumps([[pk, to_text(start), to_text(end)] for pk, start, end in rows])}
        field = [func.json_extract(w.c.value, f"$[{i}]") for i in range(3)]
        return _Windows(w, *field), params
    if dialect.name == "postgresql":
        w = (
            func.unnest(
                cast(bindparam("pks"), ARRAY(BigInteger)),
                cast(bindparam("starts"), ARRAY(DateTime(timezone=True))),
                cast(bindparam("ends"), ARRAY(DateTime(timezone=True))),
            )
            .table_valued("pk", "s", "e")
            .render_derived(name="w")
        )
        pks, starts, ends = (list(c) for c in zip(*rows, strict=True))
        return _Windows(w, w.c.pk, w.c.s, w.c.e), {"pks": pks, "starts": starts, "ends": ends}
    raise NotImplementedError(f"the catalog supports SQLite and PostgreSQL, not {dialect.name}")


def task_windows(t: TaskSnapshot, intervals) -> list[tuple[dt.datetime, dt.datetime]]:
    """The merged windows of slot records that judging ``t`` for ``intervals`` (``(start, end)``) reads: none
    when its schedule cannot be judged (its children wait, saying why)."""
    if schedule_error(t) is not None:
        return []
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
