"""The catalog change sequence: how a triggerer's poller learns, in one query, which tasks changed.

Writers: every write transaction that changes what a gate judges of a task (its row: schedule, state,
watermark; or its slot records: inserted, updated, pruned) marks the task with :func:`mark_changed`, and
the slot records it wrote with :func:`mark_run_changed`. Just before that transaction commits,
:func:`publish_changes` takes the next number from the one-row counter ``la_change_counter`` and sets it
as the marked tasks' and slot records' ``change_seq``: an asset watcher's cursor is the number of the
last slot record it emitted.

Why a reader never misses a change: the counter row stays locked from the moment a transaction takes its
number until it commits (PostgreSQL row lock; SQLite's single writer), so numbers are committed in the
order they are handed out. A reader whose statement sees number *n* committed also sees every number
below it, and a change committed later carries a number above every number committed before it. The
poller remembers the counter's value as read in the same statement as the changed rows and asks next
time for ``change_seq`` above it. Taking the number last, after the transaction's other writes and
after locking the marked task rows, keeps the counter's hold short and never makes a transaction that
holds it wait for another lock (no deadlock).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from sqlalchemy import exists, false, or_, select, update
from sqlalchemy.engine import Connection

from airflow_leastaction.catalog.schema import change_counter, in_chunks, task, task_run
from airflow_leastaction.exceptions import CatalogError

_MARKS = "leastaction_changed_tasks"
_RUN_MARKS = "leastaction_changed_runs"


def mark_changed(conn: Connection, *task_pks: int) -> None:
    """Record that this write transaction changed what gates judge of ``task_pks``."""
    conn.info.setdefault(_MARKS, set()).update(task_pks)


def mark_run_changed(conn: Connection, *run_pks: int) -> None:
    """Record that this write transaction wrote the slot records ``run_pks`` (their task is marked too)."""
    conn.info.setdefault(_RUN_MARKS, set()).update(run_pks)


def forget_marks(conn: Connection) -> None:
    """Drop the marks of a transaction that ends without publishing (rolled back)."""
    conn.info.pop(_MARKS, None)
    conn.info.pop(_RUN_MARKS, None)


def publish_changes(conn: Connection) -> int | None:
    """Give the tasks marked in this transaction the next change number; the transaction's last writes."""
    pks = sorted(conn.info.pop(_MARKS, ()))
    runs = sorted(conn.info.pop(_RUN_MARKS, ()))
    if not pks:
        return None
    if conn.dialect.name != "sqlite":
        # Lock the rows before the counter, so the counter's holder waits for nobody; as the UPDATE below
        # would (FOR NO KEY UPDATE), so slot records inserted meanwhile (their key-share locks) never block it.
        for chunk in in_chunks(pks):
            lock = select(task.c.id).where(task.c.id.in_(chunk)).order_by(task.c.id).with_for_update(key_share=True)
            conn.execute(lock)
    seq = conn.execute(
        update(change_counter)
        .where(change_counter.c.id == 1)
        .values(seq=change_counter.c.seq + 1)
        .returning(change_counter.c.seq)
    ).scalar()
    if seq is None:
        raise CatalogError("the catalog has no change counter row (la_change_counter): run its migrations")
    for chunk in in_chunks(pks):
        conn.execute(update(task).where(task.c.id.in_(chunk)).values(change_seq=seq))
    for chunk in in_chunks(runs):  # rows this transaction wrote: already locked by it
        conn.execute(update(task_run).where(task_run.c.id.in_(chunk)).values(change_seq=seq))
    return seq


def mark_pruned_slots(conn: Connection, run_pks: list[int]) -> None:
    """Mark the tasks whose slot records ``run_pks`` are about to be deleted (pruning changes the first
    recorded slot and the records a gate finds)."""
    pks = conn.execute(select(task_run.c.task_pk).where(task_run.c.id.in_(run_pks)).distinct()).scalars()
    mark_changed(conn, *pks)


def changed_tasks(
    conn: Connection,
    columns,
    since: int | None,
    names: Iterable[str],
    watched: Callable[[], Iterable[str]] | None = None,
) -> tuple[list, int]:
    """The poller's tick read: ``columns`` of the tasks changed after ``since`` or named in ``names``
    (subscriptions not read yet), and the counter's value read in the same statement, which the next
    tick passes as ``since``. One statement (one more per :data:`IN_CHUNK` names beyond the first).

    The counter row drives the statement (outer join), so the counter comes back even when no task
    changed: an idle tick is one statement returning one row of NULL task columns.

    With ``watched`` (the names the reader's subscribers watch, asked only when a task changed), only the
    changed tasks of those names are read: the first statement tells whether any task changed after
    ``since`` (an index probe of ``ix_la_task_change_seq_name``); only then one more per :data:`IN_CHUNK`
    watched names reads them (PostgreSQL: a range of that index, filtered by name within it; SQLite: a
    probe of ``ix_la_task_name_id`` per watched name, the change number checked on each). A triggerer so reads
    the changes of its own gates' parents, not every change of the catalog. A change committed between
    the two statements may be read now and again next tick; none is missed (the counter is read first).
    """
    chunks = list(in_chunks(sorted(set(names)))) or [[]]
    apart = watched is not None and since is not None
    rows: list = []
    high = None
    changed = False
    for i, chunk in enumerate(chunks):
        terms = [task.c.name.in_(chunk)] if chunk else []
        first = i == 0 and since is not None
        if first and not apart:
            terms.append(task.c.change_seq > since)
        joined = change_counter.outerjoin(task, or_(*terms) if terms else false())
        later = task.alias("later")
        flag = exists(select(later.c.id).where(later.c.change_seq > since)) if first and apart else false()
        query = (
            select(change_counter.c.seq.label("high"), flag.label("changed"), task.c.change_seq, *columns)
            .select_from(joined)
            .where(change_counter.c.id == 1)
        )
        for row in conn.execute(query):
            if high is None:  # the first statement's: it read the changes
                high, changed = row.high, bool(row.changed)
            if row.id is not None:
                rows.append(row)
    if high is None:
        raise CatalogError("the catalog has no change counter row (la_change_counter): run its migrations")
    if apart and changed:
        for chunk in in_chunks(sorted(set(watched()))):
            query = select(task.c.change_seq, *columns).where(task.c.change_seq > since, task.c.name.in_(chunk))
            rows.extend(conn.execute(query))
    return rows, high
