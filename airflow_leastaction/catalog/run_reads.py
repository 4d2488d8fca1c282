"""Reading task runs of other DAGs: what a run-condition gate judges a cross-DAG dependency by.

Part of :class:`~airflow_leastaction.catalog.store.CatalogStore`.
"""

from __future__ import annotations

import datetime as dt
from typing import Iterable

from sqlalchemy import func, or_, select

from airflow_leastaction.catalog.schema import IN_CHUNK, identity_clause, in_chunks, task, task_run
from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.parents import IN_FLIGHT_STATES, LatestRuns, RunRecord

#: Airflow's run type of a backfill. A backfill re-runs history: it never counts as a task's latest run,
#: so it neither satisfies nor blocks a dependency on that task, and no gate waits for it.
BACKFILL_RUN_TYPE = "backfill"


class RunReads:
    """Run-record reads of the catalog store (needs ``engine``)."""

    def slot_records(self, requests: Iterable[tuple[TaskIdentity, dt.datetime]]) -> dict:
        """The slot record of each (task, slot) pair that has one: one query for any number of pairs."""
        wanted = set(requests)
        if not wanted:
            return {}
        names = sorted({i.name for i, _ in wanted})
        slots = sorted({s for _, s in wanted})
        found = {}
        with self.engine.connect() as conn:
            for chunk in in_chunks(names, IN_CHUNK // 2):
                rows = conn.execute(select(task.c.name, task.c.project, task.c.account, task.c.partition,
                                           *_run_columns()).join(task, task.c.id == task_run.c.task_pk)
                                    .where(task.c.name.in_(chunk), task_run.c.slot.in_(slots[:IN_CHUNK // 2])))
                for r in rows:
                    key = (TaskIdentity(r.name, r.project, r.account, r.partition), r.slot)
                    if key in wanted:
                        found[key] = _run_record(r)
        return found

    def latest_runs(self, identities: Iterable[TaskIdentity], history: int = 20) -> dict:
        """Per task: its latest run, latest finished run and average run length of its last ``history``
        successes (what a gate on another DAG's task judges and times its looks by). Records of backfill
        runs are never the latest run."""
        out = {}
        with self.engine.connect() as conn:
            for identity in sorted(set(identities)):
                task_pk = conn.execute(select(task.c.id).where(*identity_clause(identity))).scalar()
                if task_pk is None:
                    out[identity] = LatestRuns(None, None, None, None)
                    continue
                base = select(*_run_columns()).where(task_run.c.task_pk == task_pk, or_(
                    task_run.c.run_type.is_(None), task_run.c.run_type != BACKFILL_RUN_TYPE))
                order = (task_run.c.started_at.desc(), task_run.c.id.desc())
                latest = conn.execute(base.order_by(*order).limit(1)).first()
                finished = conn.execute(base.where(task_run.c.finished_at.is_not(None),
                                                   task_run.c.state.not_in(sorted(IN_FLIGHT_STATES)))
                                        .order_by(task_run.c.finished_at.desc(), task_run.c.id.desc())
                                        .limit(1)).first()
                spans = conn.execute(select(task_run.c.started_at, task_run.c.finished_at).where(
                    task_run.c.task_pk == task_pk, task_run.c.state == "success",
                    task_run.c.started_at.is_not(None), task_run.c.finished_at.is_not(None))
                    .order_by(task_run.c.finished_at.desc()).limit(history)).all()
                lengths = [f - s for s, f in spans if f >= s]
                average = sum(lengths, dt.timedelta(0)) / len(lengths) if lengths else None
                out[identity] = LatestRuns(task_pk, latest and _run_record(latest),
                                           finished and _run_record(finished), average)
        return out

    def run_rows_written(self, dag_id: str, run_id: str) -> int | None:
        """Rows the tasks of one DAG run reported writing, summed (None: none of them reported any)."""
        with self.engine.connect() as conn:
            total = conn.execute(select(func.sum(task_run.c.rows_written)).join(task, task.c.id == task_run.c.task_pk)
                                 .where(task.c.dag_id == dag_id, task.c.task_id.is_not(None),
                                        task_run.c.run_id == run_id, task_run.c.state == "success")).scalar()
        return None if total is None else int(total)  # PostgreSQL sums bigints as numeric


def _run_columns():
    r = task_run.c
    return (r.id, r.task_pk, r.slot, r.run_id, r.state, r.output_revision, r.rows_written, r.started_at,
            r.finished_at)


def _run_record(row) -> RunRecord:
    return RunRecord(row.id, row.task_pk, row.slot, row.run_id, row.state, row.output_revision, row.rows_written,
                     row.started_at, row.finished_at)
