"""Latest-run reads of cross-DAG upstreams, batched: the same answers as one task at a time, in at most two
statements for any number of tasks, on SQLite and PostgreSQL."""

from __future__ import annotations

import datetime as dt
import random

import pytest
from sqlalchemy import insert, or_, select

from airflow_leastaction.catalog.run_reads import BACKFILL_RUN_TYPE, _run_columns, _run_record
from airflow_leastaction.catalog.schema import identity_clause, task, task_run
from airflow_leastaction.catalog.store import TaskMeta, utcnow
from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.run_conditions.latest_run import LatestRuns
from airflow_leastaction.states import IN_FLIGHT_STATES
from tests.helpers.statement_count import StatementCounter

UTC = dt.UTC
T0 = dt.datetime(2026, 11, 1, tzinfo=UTC)
STATES = ["success", "success", "failed", "running", "queued", "up_for_retry", "skipped", "upstream_failed"]
RUN_TYPES = [None, "scheduled", "manual", BACKFILL_RUN_TYPE]


def one_task_at_a_time(store, identities, history: int = 20) -> dict:
    """The reads as they were made before batching: four queries per task (the oracle)."""
    out = {}
    with store.engine.connect() as conn:
        for identity in sorted(set(identities)):
            task_pk = conn.execute(select(task.c.id).where(*identity_clause(identity))).scalar()
            if task_pk is None:
                out[identity] = LatestRuns(None, None, None, None)
                continue
            base = select(*_run_columns()).where(
                task_run.c.task_pk == task_pk,
                or_(task_run.c.run_type.is_(None), task_run.c.run_type != BACKFILL_RUN_TYPE),
            )
            latest = conn.execute(base.order_by(task_run.c.started_at.desc(), task_run.c.id.desc()).limit(1)).first()
            finished = conn.execute(
                base.where(task_run.c.finished_at.is_not(None), task_run.c.state.not_in(sorted(IN_FLIGHT_STATES)))
                .order_by(task_run.c.finished_at.desc(), task_run.c.id.desc())
                .limit(1)
            ).first()
            spans = conn.execute(
                select(task_run.c.started_at, task_run.c.finished_at)
                .where(
                    task_run.c.task_pk == task_pk,
                    task_run.c.state == "success",
                    task_run.c.started_at.is_not(None),
                    task_run.c.finished_at.is_not(None),
                )
                .order_by(task_run.c.finished_at.desc())
                .limit(history)
            ).all()
            lengths = [f - s for s, f in spans if f >= s]
            average = sum(lengths, dt.timedelta(0)) / len(lengths) if lengths else None
            out[identity] = LatestRuns(
                task_pk, latest and _run_record(latest), finished and _run_record(finished), average
            )
    return out


def seed(store, tasks: int, seed_value: int, prefix: str = "up") -> list[TaskIdentity]:
    """Tasks with random runs: every state and run type, unfinished and unstarted runs, runs that finished
    before they started (clock skew); every timestamp distinct, so each order has one answer."""
    rng = random.Random(seed_value)
    minutes = iter(rng.sample(range(1, 500_000), 20 * tasks * 2))
    identities = [TaskIdentity(f"{prefix}_{i}", rng.choice(["team-a", "team-b"])) for i in range(tasks)]
    rows = []
    for n, identity in enumerate(identities):
        pk = store.register_task(identity, TaskMeta(cron="0 0 * * *"))
        for k in range(rng.randrange(0, 20) if n else 0):  # the first task never ran
            state = rng.choice(STATES)
            started = T0 + dt.timedelta(minutes=next(minutes)) if rng.random() > 0.1 else None
            finished = T0 + dt.timedelta(minutes=next(minutes)) if state not in IN_FLIGHT_STATES else None
            rows.append(
                {
                    "task_pk": pk,
                    "slot": T0 + dt.timedelta(days=k),
                    "state": state,
                    "attempt": 1,
                    "run_id": f"r{k}",
                    "run_type": rng.choice(RUN_TYPES),
                    "output_revision": int(state == "success"),
                    "repair_pending": False,
                    "rows_written": rng.randrange(100),
                    "started_at": started,
                    "finished_at": finished,
                    "updated_at": utcnow(),
                }
            )
    with store.write() as conn:
        conn.execute(insert(task_run), rows)
    return identities


@pytest.mark.parametrize("history", [1, 3, 20])
def test_batched_latest_runs_answer_as_one_task_at_a_time(store, history):
    for seed_value in range(3):
        wanted = seed(store, 12, seed_value, f"seed{seed_value}") + [TaskIdentity("never_registered", "team-a")]
        assert store.runs.latest_runs(wanted, history=history) == one_task_at_a_time(store, wanted, history)


def test_latest_runs_of_any_number_of_tasks_take_at_most_two_statements(store):
    identities = seed(store, 60, 7)
    for wanted in (identities[:1], identities[:40], identities + [TaskIdentity("unknown", "x")]):
        with StatementCounter(store.engine) as counter:
            found = store.runs.latest_runs(wanted)
        assert 1 <= counter.total <= 2, counter.statements
        assert set(found) == set(wanted)


def test_latest_runs_of_unknown_tasks_only_take_one_statement(store):
    with StatementCounter(store.engine) as counter:
        found = store.runs.latest_runs([TaskIdentity("unknown", "x"), TaskIdentity("other", "y")])
    assert counter.total == 1, counter.statements
    assert set(found.values()) == {LatestRuns(None, None, None, None)}
