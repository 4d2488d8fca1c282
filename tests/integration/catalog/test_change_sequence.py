"""The catalog change sequence on SQLite and PostgreSQL: every write that changes what a gate judges of a
task gives the task a new, higher change number; writes that change nothing a gate reads give none."""

from __future__ import annotations

import datetime as dt

import pytest
from sqlalchemy import select, text
from sqlalchemy.exc import OperationalError

from airflow_leastaction.catalog.changes import changed_tasks
from airflow_leastaction.catalog.engine import get_engine, is_outage
from airflow_leastaction.catalog.retention import prune
from airflow_leastaction.catalog.schema import change_counter, task
from airflow_leastaction.catalog.store import AttemptKey, CatalogStore, TaskMeta
from airflow_leastaction.gating.engine import Judgement
from airflow_leastaction.identity import TaskIdentity

UTC = dt.UTC
DAY = dt.datetime(2026, 1, 1, tzinfo=UTC)
DAILY = TaskMeta(cron="0 0 * * *")
RAW = TaskIdentity("orders_raw", "sales-platform")


def day(n: int) -> dt.datetime:
    return DAY + dt.timedelta(days=n)


def seq_of(store, identity: TaskIdentity) -> int:
    row = store.get_task(identity)
    return row["change_seq"]


def counter(store) -> int:
    with store.engine.connect() as conn:
        return conn.execute(select(change_counter.c.seq)).scalar_one()


def test_each_write_a_gate_judges_gives_the_task_a_higher_change_number(store):
    store.register_task(RAW, DAILY)
    seen = [seq_of(store, RAW)]
    writes = [
        lambda: store.record_running(RAW, day(1), run_id="r1"),
        lambda: store.record_success(RAW, day(1), run_id="r1"),
        lambda: store.record_running(RAW, day(1), run_id="r2"),  # a re-run: the slot stops satisfying
        lambda: store.record_finished(RAW, day(1), "failed", run_id="r2"),
        lambda: store.report_completion(RAW, day(2), cron="0 0 * * *"),
        lambda: store.register_task(RAW, TaskMeta(cron="0 * * * *")),  # a new schedule moves the windows
    ]
    for write in writes:
        write()
        seen.append(seq_of(store, RAW))
    assert seen == sorted(set(seen)), seen  # strictly increasing
    assert seen[-1] == counter(store)


def test_writes_that_change_nothing_a_gate_reads_take_no_change_number(store):
    store.record_success(RAW, day(1), meta=DAILY, run_id="r1")
    before = (seq_of(store, RAW), counter(store))
    store.record_success(RAW, day(1), run_id="r1")  # a replay of the same completion
    store.register_task(RAW, DAILY)  # the same schedule again
    store.declare_parents(RAW, DAILY, [])  # declared parents: the graph, not what gates judge
    store.audit.record_decisions(
        AttemptKey("d", "t", "run"), [Judgement("catalog:x", True, "ok")], downstream_slot=day(1)
    )
    assert (seq_of(store, RAW), counter(store)) == before


def test_pruning_a_tasks_slot_records_gives_it_a_new_change_number(store):
    long_ago = dt.datetime.now(UTC) - dt.timedelta(days=400)
    for n in (1, 2):
        store.record_success(RAW, day(n), meta=DAILY, run_id=f"r{n}", at=long_ago)
    other = TaskIdentity("untouched", "sales-platform")
    store.record_success(other, day(1), meta=DAILY, run_id="o", at=long_ago)
    before = {t: seq_of(store, t) for t in (RAW, other)}
    report = prune(store.engine, dt.datetime.now(UTC) - dt.timedelta(days=1))
    assert report.tables["la_task_run"].rows == 1  # RAW's day 1: neither its latest slot nor its watermark
    assert seq_of(store, RAW) > before[RAW]
    assert seq_of(store, other) == before[other]


def test_the_change_query_returns_only_the_counter_when_nothing_changed(store):
    store.record_success(RAW, day(1), meta=DAILY, run_id="r1")
    with store.poll_read() as conn:
        rows, high = changed_tasks(conn, [task.c.id, task.c.name], None, [])
        assert (rows, high) == ([], counter(store))
        again, still = changed_tasks(conn, [task.c.id, task.c.name], high, [])
        named, _ = changed_tasks(conn, [task.c.id, task.c.name], high, [RAW.name])
    assert (again, still) == ([], high)
    assert [r.name for r in named] == [RAW.name]


@pytest.mark.postgres
def test_a_poll_whose_connection_is_lost_mid_read_raises_the_outage_not_a_pending_rollback(pg_url):
    store = CatalogStore(get_engine(pg_url, migrate=True))  # the server ends the read's connection
    with pytest.raises(OperationalError) as raised, store.poll_read() as conn:  # the context's exit runs too
        conn.execute(text("SELECT pg_terminate_backend(pg_backend_pid())"))
    assert is_outage(raised.value)
    with store.poll_read() as conn:  # the pool hands out a working connection next
        assert conn.execute(text("SELECT 1")).scalar() == 1
