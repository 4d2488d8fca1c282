"""A crash between the admission decision and the success commit leaves none of the ending writes; a
crash after the commit leaves all of them. The writer is a real process killed with SIGKILL while it
applies the success event exactly as the listener does (``outcomes.apply``)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest
from sqlalchemy import select

from airflow_leastaction.catalog.schema import task_run
from airflow_leastaction.catalog.store import AttemptKey
from airflow_leastaction.gating.engine import DependencyType, Judgement
from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.refs import airflow_task
from tests.helpers.run_conditions import consumed, day

UP = TaskIdentity("rc_crash_upstream", "other-team")

WRITER = textwrap.dedent("""
    import datetime as dt, sys, time
    from sqlalchemy import event
    from airflow_leastaction.catalog.engine import get_engine
    from airflow_leastaction.catalog.outcomes import SlotEvent, apply
    from airflow_leastaction.catalog.store import AttemptKey, CatalogStore
    from airflow_leastaction.refs import airflow_task

    url, phase = sys.argv[1], sys.argv[2]
    engine = get_engine(url)
    if phase == "before-commit":
        @event.listens_for(engine, "commit")
        def stall(conn):  # runs inside the transaction, right before COMMIT reaches the database
            eaten = conn.exec_driver_sql("SELECT count(*) FROM la_consumption").scalar()
            done = conn.exec_driver_sql("SELECT count(*) FROM la_task_run WHERE state = 'success' "
                                        "AND rows_written = 7").scalar()
            print(f"COMMITTING consumption={eaten} success={done}", flush=True)
            time.sleep(120)
    now = dt.datetime.now(dt.timezone.utc)
    event_ = SlotEvent(state="success", identity=airflow_task("rc_crash", "report", project="airflow"),
                       slot=dt.datetime(2026, 11, 1, tzinfo=dt.timezone.utc), at=now, run_id="run-1", attempt=1,
                       rows_written=7, consumer=AttemptKey("rc_crash", "report", "run-1", -1, 1),
                       gate_task_ids=["report__gate"])
    apply(CatalogStore(engine), event_)
    print("COMMITTED", flush=True)
    time.sleep(120)
""")


def kill_writer_at(url: str, phase: str, marker: str) -> str:
    seen: list[str] = []
    env = dict(os.environ, AIRFLOW__LEASTACTION__PROJECT="airflow")
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, url, phase], stdout=subprocess.PIPE, text=True, env=env, start_new_session=True
    )
    try:
        for line in proc.stdout:
            if line.startswith(marker):
                seen.append(line.strip())
                break
        else:
            pytest.fail(f"writer exited with {proc.wait()} before printing {marker}")
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    return seen[0]


def success_records(store):
    down = airflow_task("rc_crash", "report", project="airflow")
    with store.engine.connect() as conn:
        return conn.execute(
            select(task_run.c.state, task_run.c.rows_written).where(
                task_run.c.state == "success", task_run.c.slot == day(1), task_run.c.task_pk.in_(select_task_pk(down))
            )
        ).all()


def select_task_pk(identity):
    from airflow_leastaction.catalog.schema import task

    return select(task.c.id).where(task.c.name == identity.name, task.c.project == identity.project)


def admit(store):
    up = store.record_success(UP, day(1), run_id="u1")
    store.audit.record_decisions(
        AttemptKey("rc_crash", "report__gate", "run-1", -1, 1),
        [
            Judgement(
                UP.key,
                True,
                "upstream succeeded",
                DependencyType.SUCCESS,
                final=True,
                upstream_task_pk=up.task_pk,
                upstream_run_pk=up.run_pk,
                upstream_slot=day(1),
                upstream_revision=1,
            )
        ],
        downstream_slot=day(1),
    )


class TestConsumptionAtomicity:
    def test_a_crash_before_the_success_commit_leaves_neither_success_nor_consumption(self, store, catalog_url):
        admit(store)
        # Both writes were made in the one open transaction when the process died ...
        assert kill_writer_at(catalog_url, "before-commit", "COMMITTING") == "COMMITTING consumption=1 success=1"
        # ... and neither survives it.
        store.engine.dispose()
        assert success_records(store) == []
        assert consumed(store, "rc_crash") == []

    def test_a_crash_after_the_success_commit_leaves_both(self, store, catalog_url):
        admit(store)
        kill_writer_at(catalog_url, "after-commit", "COMMITTED")
        store.engine.dispose()
        assert success_records(store) == [("success", 7)]
        [row] = consumed(store, "rc_crash")
        assert (row["task_id"], row["dependency"], row["upstream_revision"]) == ("report", UP.key, 1)
