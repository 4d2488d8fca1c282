"""A task's recent history, as expected times read it: the last :data:`~.estimate.WINDOW` first-time successes
of every task of a question in one windowed statement, kept per catalog change sequence number.

``ROW_NUMBER() OVER (PARTITION BY task_pk ORDER BY slot DESC)`` ranks each task's successes newest slot first
(on SQLite and PostgreSQL alike); runs that finished before their slot (a worker's clock behind) are
counted as skewed and left out, and so are backfills and repairs, which finish long after their slot by
design. While the change sequence number (``la_change_counter.seq``) does not move, nothing was written:
the histories already read are used again.
"""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from sqlalchemy import func, or_, select
from sqlalchemy.engine import Connection

from airflow_leastaction.catalog.schema import change_counter, in_chunks, task_run
from airflow_leastaction.expectations.estimate import WINDOW, Usual, usual_of

#: Runs that finish long after their slot by design tell nothing of a scheduled slot's time: backfills.
LEFT_OUT_RUN_TYPES = ("backfill",)


@dataclass(frozen=True)
class History:
    """A task's recent successes: offsets from their slots, durations, the UTC weekday each finished on (as
    the offsets), and the runs left out for skew; and their quantiles, sorted out once with the history (kept
    with it until the catalog changes), not once per question."""

    offsets: tuple[dt.timedelta, ...] = ()
    durations: tuple[dt.timedelta, ...] = ()
    skewed: int = 0
    weekdays: tuple[int, ...] = ()
    usual: Usual | None = None


NO_HISTORY = History()


def read_change_seq(conn: Connection) -> int:
    return conn.execute(select(change_counter.c.seq).where(change_counter.c.id == 1)).scalar() or 0


def read_history(conn: Connection, task_pks: Sequence[int]) -> dict[int, History]:
    """The last :data:`WINDOW` first-time successes of each task (backfills and repairs left out), in one
    windowed statement; runs finished before their slot are counted as skewed and left out."""
    r = task_run.c
    found: dict[int, list] = {pk: [] for pk in task_pks}
    for chunk in in_chunks(sorted(task_pks)):
        ranked = (
            select(
                r.task_pk,
                r.slot,
                r.started_at,
                r.finished_at,
                func.row_number().over(partition_by=r.task_pk, order_by=r.slot.desc()).label("rn"),
            )
            .where(
                r.task_pk.in_(chunk),
                r.state == "success",
                r.finished_at.is_not(None),
                r.output_revision == 1,
                or_(r.run_type.is_(None), r.run_type.not_in(LEFT_OUT_RUN_TYPES)),
            )
            .subquery()
        )
        query = select(ranked.c.task_pk, ranked.c.slot, ranked.c.started_at, ranked.c.finished_at).where(
            ranked.c.rn <= WINDOW
        )
        for row in conn.execute(query):
            found[row.task_pk].append(row)
    return {pk: history_of(runs) for pk, runs in found.items()}


def history_of(runs) -> History:
    """Offsets, durations and weekdays of ``runs`` (rows with ``slot``, ``started_at``, ``finished_at``; a naive
    instant is UTC, as the catalog stores it)."""
    offsets, durations, weekdays, skewed = [], [], [], 0
    for run in runs:
        if run.finished_at < run.slot:
            skewed += 1
            continue
        offsets.append(run.finished_at - run.slot)
        finished = run.finished_at if run.finished_at.tzinfo is None else run.finished_at.astimezone(dt.UTC)
        weekdays.append(finished.weekday())
        if run.started_at is not None and run.started_at <= run.finished_at:
            durations.append(run.finished_at - run.started_at)
    if not runs:
        return NO_HISTORY
    offsets, durations = tuple(offsets), tuple(durations)
    return History(offsets, durations, skewed, tuple(weekdays), usual_of(offsets, durations))


# -- the history cache -------------------------------------------------------------------------------------
class HistoryCache:
    """Histories read at one catalog change sequence number, per catalog: kept until the number moves."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_catalog: dict[str, tuple[int, dict[int, History]]] = {}

    def histories(self, conn: Connection, catalog: str, seq: int, task_pks: Iterable[int]) -> dict[int, History]:
        with self._lock:
            held_seq, held = self._by_catalog.get(catalog, (None, {}))
            known = dict(held) if held_seq == seq else {}
        missing = [pk for pk in set(task_pks) if pk not in known]
        if missing:
            known.update(read_history(conn, missing))
            with self._lock:
                self._by_catalog[catalog] = (seq, known)
        return known

    def clear(self) -> None:
        with self._lock:
            self._by_catalog.clear()


HISTORIES = HistoryCache()
