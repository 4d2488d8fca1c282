"""Reading task runs of other DAGs: what a run-condition gate judges a cross-DAG dependency by.

A part of :class:`~airflow_leastaction.catalog.store.CatalogStore` (``store.runs``).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable

from sqlalchemy import and_, case, func, or_, select
from sqlalchemy.engine import Engine

from airflow_leastaction.catalog.bridges import completions_by_pk
from airflow_leastaction.catalog.schema import IN_CHUNK, in_chunks, task, task_run
from airflow_leastaction.catalog.snapshots import task_columns, task_snapshot
from airflow_leastaction.catalog.transactions import Transactions
from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.run_conditions.latest_run import LatestRuns, RunRecord
from airflow_leastaction.states import IN_FLIGHT_STATES

#: Airflow's run type of a backfill. A backfill re-runs history: it never counts as a task's latest run,
#: so it neither satisfies nor blocks a dependency on that task, and no gate waits for it.
BACKFILL_RUN_TYPE = "backfill"


class RunReads:
    """Run-record reads of the catalog store (``store.runs``): the poller's batched reads in ``transactions``,
    the others on ``engine``."""

    def __init__(self, engine: Engine, transactions: Transactions):
        self.engine = engine
        self.transactions = transactions

    def slot_records(self, requests: Iterable[tuple[TaskIdentity, dt.datetime]]) -> dict:
        """The slot record of each (task, slot) pair that has one: one query for any number of pairs."""
        wanted = set(requests)
        if not wanted:
            return {}
        names = sorted({i.name for i, _ in wanted})
        slots = sorted({s for _, s in wanted})
        found = {}
        with self.transactions.poll_read() as conn:
            for chunk in in_chunks(names, IN_CHUNK // 2):
                rows = conn.execute(
                    select(task.c.name, task.c.project, task.c.account, task.c.partition, *_run_columns())
                    .join(task, task.c.id == task_run.c.task_pk)
                    .where(task.c.name.in_(chunk), task_run.c.slot.in_(slots[: IN_CHUNK // 2]))
                )
                for r in rows:
                    key = (TaskIdentity.from_row(r), r.slot)
                    if key in wanted:
                        found[key] = _run_record(r)
        return found

    def latest_runs(self, identities: Iterable[TaskIdentity], history: int = 20) -> dict:
        """Per task: its latest run, latest finished run and average run length of its last ``history``
        successes (what a gate on another DAG's task judges and times its looks by). Records of backfill
        runs are never the latest run.

        Two queries for any number of tasks: their task rows, then only the run rows that matter (each
        task's latest, latest finished and last ``history`` successes, ranked per task by the database).
        """
        wanted = set(identities)
        out = {i: LatestRuns(None, None, None, None) for i in wanted}
        if not wanted:
            return out
        with self.transactions.poll_read() as conn:
            pks = _task_pks(conn, wanted)
            by_pk = latest_runs_by_pk(conn, pks.values(), history)
        for identity, pk in pks.items():
            out[identity] = by_pk[pk]
        return out

    def completions(self, requests: Iterable[tuple[TaskIdentity, int]]) -> dict:
        """What asset watchers read: per requested task, its row as gates see it (None: not in the catalog)
        and its completed slot records written at or after the request's change number, in cursor order.
        Two statements for any number of tasks."""
        floors: dict[TaskIdentity, int] = {}
        for identity, seq in requests:
            floors[identity] = min(seq, floors.get(identity, seq))
        tasks = {}
        with self.transactions.poll_read() as conn:
            for chunk in in_chunks(sorted({i.name for i in floors})):
                for row in conn.execute(select(*task_columns()).where(task.c.name.in_(chunk))):
                    snap = task_snapshot(row)
                    if snap.identity in floors:
                        tasks[snap.identity] = snap
            by_pk = completions_by_pk(conn, {t.pk: floors[i] for i, t in tasks.items()})
        return {i: (tasks.get(i), by_pk[tasks[i].pk] if i in tasks else []) for i in floors}

    def run_rows_written(self, dag_id: str, run_id: str) -> tuple[int | None, str | None]:
        """Rows the tasks of one DAG run reported writing, summed (None: none of them reported any), and why
        the rows of one of them are unknown (its read failed; None: no such task)."""
        with self.engine.connect() as conn:
            total, error = conn.execute(
                select(func.sum(task_run.c.rows_written), func.max(task_run.c.rows_error))
                .join(task, task.c.id == task_run.c.task_pk)
                .where(
                    task.c.dag_id == dag_id,
                    task.c.task_id.is_not(None),
                    task_run.c.run_id == run_id,
                    task_run.c.state == "success",
                )
            ).one()
        return (None if total is None else int(total)), error  # PostgreSQL sums bigints as numeric


def latest_runs_by_pk(conn, task_pks: Iterable[int], history: int = 20) -> dict[int, LatestRuns]:
    """:meth:`RunReads.latest_runs` of tasks known by their pks: one query per ``IN_CHUNK`` tasks."""
    ranked: dict[int, _Ranked] = {pk: _Ranked() for pk in task_pks}
    for chunk in in_chunks(sorted(ranked)):
        for row in conn.execute(_ranked_runs(chunk, history)):
            ranked[row.task_pk].add(row, history)
    return {pk: r.result(pk) for pk, r in ranked.items()}


def slot_records_by_pk(conn, pairs: Iterable[tuple[int, dt.datetime]]) -> dict[tuple[int, dt.datetime], RunRecord]:
    """The slot record of each (task pk, slot) pair that has one: one query per ``IN_CHUNK // 2`` tasks
    and slots (the records of every pk and slot are read, the pairs kept)."""
    wanted = set(pairs)
    pks, slots = sorted({p for p, _ in wanted}), sorted({s for _, s in wanted})
    found = {}
    for pk_chunk in in_chunks(pks, IN_CHUNK // 2):
        for slot_chunk in in_chunks(slots, IN_CHUNK // 2):
            query = select(*_run_columns()).where(task_run.c.task_pk.in_(pk_chunk), task_run.c.slot.in_(slot_chunk))
            for r in conn.execute(query):
                if (r.task_pk, r.slot) in wanted:
                    found[(r.task_pk, r.slot)] = _run_record(r)
    return found


def _run_columns():
    r = task_run.c
    return (
        r.id,
        r.task_pk,
        r.slot,
        r.run_id,
        r.state,
        r.output_revision,
        r.rows_written,
        r.started_at,
        r.finished_at,
        r.rows_error,
    )


def _run_record(row) -> RunRecord:
    return RunRecord(
        row.id,
        row.task_pk,
        row.slot,
        row.run_id,
        row.state,
        row.output_revision,
        row.rows_written,
        row.started_at,
        row.finished_at,
        row.rows_error,
    )


def _task_pks(conn, wanted: set[TaskIdentity]) -> dict[TaskIdentity, int]:
    """The catalog pk of each wanted task that has a row (one query per ``IN_CHUNK`` names)."""
    pks = {}
    for chunk in in_chunks(sorted({i.name for i in wanted})):
        for r in conn.execute(
            select(task.c.id, task.c.name, task.c.project, task.c.account, task.c.partition).where(
                task.c.name.in_(chunk)
            )
        ):
            ident = TaskIdentity.from_row(r)
            if ident in wanted:
                pks[ident] = r.id
    return pks


def _ranked_runs(task_pks: list[int], history: int):
    """The run rows of ``task_pks`` that a gate reads, each with its rank in the three per-task orders:
    latest start among non-backfill runs, latest finish among finished non-backfill runs, latest finish
    among timed successes (backfills included, as they ran). A row is returned when it ranks first in
    either of the first two or within ``history`` in the third."""
    r = task_run.c
    not_backfill = or_(r.run_type.is_(None), r.run_type != BACKFILL_RUN_TYPE)
    finished = and_(not_backfill, r.finished_at.is_not(None), r.state.not_in(sorted(IN_FLIGHT_STATES)))
    timed = and_(r.state == "success", r.started_at.is_not(None), r.finished_at.is_not(None))
    flags = {"is_latest": not_backfill, "is_finished": finished, "is_timed": timed}
    flag = {k: case((cond, 1), else_=0).label(k) for k, cond in flags.items()}
    # Same orders as one query per task would use (so NULL placement follows the backend's default).
    ranks = (
        func.row_number()
        .over(partition_by=(r.task_pk, flag["is_latest"]), order_by=(r.started_at.desc(), r.id.desc()))
        .label("rank_latest"),
        func.row_number()
        .over(partition_by=(r.task_pk, flag["is_finished"]), order_by=(r.finished_at.desc(), r.id.desc()))
        .label("rank_finished"),
        func.row_number()
        .over(partition_by=(r.task_pk, flag["is_timed"]), order_by=(r.finished_at.desc(), r.id.desc()))
        .label("rank_timed"),
    )
    inner = select(*_run_columns(), *flag.values(), *ranks).where(r.task_pk.in_(task_pks)).subquery()
    q = inner.c
    return select(inner).where(
        or_(
            and_(q.is_latest == 1, q.rank_latest == 1),
            and_(q.is_finished == 1, q.rank_finished == 1),
            and_(q.is_timed == 1, q.rank_timed <= history),
        )
    )


class _Ranked:
    """One task's ranked run rows, turned into its :class:`LatestRuns`."""

    def __init__(self):
        self.latest = self.finished = None
        self.spans: list[tuple[int, dt.timedelta | None]] = []

    def add(self, row, history: int) -> None:
        if row.is_latest and row.rank_latest == 1:
            self.latest = _run_record(row)
        if row.is_finished and row.rank_finished == 1:
            self.finished = _run_record(row)
        if row.is_timed and row.rank_timed <= history:
            self.spans.append((row.rank_timed, row.finished_at - row.started_at))

    def result(self, task_pk: int) -> LatestRuns:
        lengths = [span for _, span in sorted(self.spans) if span >= dt.timedelta(0)]
        average = sum(lengths, dt.timedelta(0)) / len(lengths) if lengths else None
        return LatestRuns(task_pk, self.latest, self.finished, average)
