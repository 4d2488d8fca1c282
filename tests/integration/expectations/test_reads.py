"""Expected times read from real catalogs (SQLite and PostgreSQL), whose histories are written through the
store's own operations at chosen instants: what a task usually takes, who it waits on, and what is left out.

Every expected number is worked out here from the runs written, by nearest rank on the sorted values.
"""

from __future__ import annotations

import datetime as dt
import math
import random

import pytest
from sqlalchemy import event

from airflow_leastaction.catalog.store import TaskMeta
from airflow_leastaction.expectations.history import HISTORIES
from airflow_leastaction.expectations.reads import (
    expectation_of,
    expectations_for,
    next_open_slot,
    node_key,
    read_tasks,
)
from airflow_leastaction.identity import TaskIdentity

UTC = dt.UTC
TODAY = dt.datetime(2024, 3, 11, tzinfo=UTC)  # a Monday
DAY = dt.timedelta(days=1)
MIN = dt.timedelta(minutes=1)
DAILY = TaskMeta(cron="0 0 * * *")
ORDERS = TaskIdentity("orders", "ingest")
REPORT = TaskIdentity("report", "mart")


def run(store, identity, slot, started, finished, meta=DAILY, **success):
    """One run of ``identity``'s ``slot``: started, then succeeded, at those instants."""
    run_id = f"scheduled__{slot.isoformat()}"
    store.record_running(identity, slot, meta=meta, run_id=run_id, at=started)
    store.record_success(identity, slot, meta=meta, run_id=run_id, at=finished, **success)


def rank(values, p: float):
    ordered = sorted(values)
    return ordered[math.ceil(p * len(ordered)) - 1]


#: Eight days of the chain: orders finishes at 04:50 + jitter; report starts 2 minutes later, takes 15-17.
JITTER = [0, 5, 3, 8, 2, 10, 4, 6]


@pytest.fixture
def chain(store):
    store.declare_parents(REPORT, DAILY, [ORDERS])
    for d, jitter in enumerate(JITTER):
        slot = TODAY - (len(JITTER) - d) * DAY
        done = slot + (290 + jitter) * MIN
        run(store, ORDERS, slot, slot + 280 * MIN, done)
        run(store, REPORT, slot, done + 2 * MIN, done + (17 + d % 3) * MIN)
    return store


class TestChain:
    def test_a_late_parent_decides_its_child_through_its_usual_duration(self, chain):
        chain.record_running(ORDERS, TODAY, meta=DAILY, run_id="today", at=TODAY + 330 * MIN)  # 05:30, late
        got = expectation_of(chain, REPORT, TODAY, TODAY + 335 * MIN)
        orders_took = [10 + j for j in JITTER]  # started 04:40, done 04:50 + jitter
        report_took = [15 + d % 3 for d in range(len(JITTER))]
        median = TODAY + 330 * MIN + (rank(orders_took, 0.5) + rank(report_took, 0.5)) * MIN
        p90 = TODAY + 330 * MIN + (rank(orders_took, 0.9) + rank(report_took, 0.9)) * MIN
        assert (got.status, got.median, got.p90) == ("waiting", median, p90)
        assert got.critical_path == (node_key(ORDERS, TODAY),)
        assert got.reason == "waiting on ingest/orders (usually done 04:54, running since 05:30)"
        assert (got.runs, got.skewed) == (8, 0)

    def test_a_parent_on_time_leaves_the_child_its_own_usual_time(self, chain):
        got = expectation_of(chain, REPORT, TODAY, TODAY + 60 * MIN)
        own = [290 + j + 2 + 15 + d % 3 for d, j in enumerate(JITTER)]
        assert (got.median, got.p90) == (TODAY + rank(own, 0.5) * MIN, TODAY + rank(own, 0.9) * MIN)
        assert got.critical_path == ()

    def test_an_overdue_parent_is_expected_now_and_its_child_after_it(self, chain):
        now = TODAY + 6 * 60 * MIN
        got = expectation_of(chain, REPORT, TODAY, now)
        report_took = [15 + d % 3 for d in range(len(JITTER))]
        assert got.median == now + rank(report_took, 0.5) * MIN
        assert got.reason == "waiting on ingest/orders (usually done 04:54, not started)"

    def test_the_slots_own_records_make_it_running_or_complete(self, chain):
        chain.record_running(REPORT, TODAY, meta=DAILY, run_id="r", at=TODAY + 300 * MIN)
        assert expectation_of(chain, REPORT, TODAY, TODAY + 301 * MIN).status == "running"
        chain.record_success(REPORT, TODAY, meta=DAILY, run_id="r", at=TODAY + 316 * MIN)
        done = expectation_of(chain, REPORT, TODAY, TODAY + 400 * MIN)
        assert (done.status, done.median, done.p90) == ("complete", TODAY + 316 * MIN, TODAY + 316 * MIN)

    def test_any_of_two_parents_takes_the_earlier(self, chain):
        early = TaskIdentity("customers", "ingest")
        chain.declare_parents(REPORT, DAILY, [ORDERS, early])
        for d in range(6):
            slot = TODAY - (d + 1) * DAY
            run(chain, early, slot, slot + 60 * MIN, slot + 70 * MIN)
        got = expectation_of(chain, REPORT, TODAY, TODAY + 10 * MIN, mode="ANY")
        assert got.critical_path == ()  # customers at 01:10 + 16 min is earlier than report's own 05:12
        every = expectation_of(chain, REPORT, TODAY, TODAY + 10 * MIN, mode="ALL")
        assert every.median >= got.median

    def test_a_parent_missing_from_the_catalog_leaves_its_child_without_an_estimate(self, chain):
        chain.declare_parents(REPORT, DAILY, [ORDERS, TaskIdentity("gone", "ingest")])
        got = expectation_of(chain, REPORT, TODAY, TODAY + 10 * MIN)
        assert (got.status, got.reason) == ("no_estimate", "no estimate: waiting on ingest/gone (not in the catalog)")

    def test_a_task_not_in_the_catalog_has_no_estimate(self, store):
        got = expectation_of(store, TaskIdentity("nobody", "x"), TODAY, TODAY)
        assert (got.status, got.reason) == ("no_estimate", "no estimate: not in the catalog")

    def test_the_next_open_slot_follows_the_watermark(self, chain):
        with chain.engine.connect() as conn:
            rows = read_tasks(conn, [REPORT])
        assert next_open_slot(rows[REPORT], TODAY) == TODAY  # the watermark is yesterday's slot


class TestHistory:
    def test_a_weekday_history_with_jitter_uses_the_latest_window_of_runs(self, store):
        rng = random.Random(7)
        offsets = {}
        for d in range(40, 0, -1):
            slot = TODAY - d * DAY
            minutes = (480 if slot.weekday() >= 5 else 290) + rng.randint(0, 15)
            if d > 30:
                minutes = 1200  # outside the window of 30: would move the p90 if read
            offsets[slot] = minutes
            run(store, ORDERS, slot, slot + (minutes - 12) * MIN, slot + minutes * MIN)
        got = expectation_of(store, ORDERS, TODAY, TODAY)
        window = [offsets[s] for s in sorted(offsets)[-30:]]
        assert got.runs == 30
        assert (got.median, got.p90) == (TODAY + rank(window, 0.5) * MIN, TODAY + rank(window, 0.9) * MIN)

    def test_runs_finished_before_their_slot_are_left_out_as_clock_skew(self, store):
        for d in range(1, 7):
            slot = TODAY - d * DAY
            finished = slot - 30 * MIN if d % 2 else slot + 300 * MIN  # three workers' clocks behind
            run(store, ORDERS, slot, finished - 10 * MIN, finished)
        got = expectation_of(store, ORDERS, TODAY, TODAY)
        assert (got.status, got.runs, got.skewed) == ("no_estimate", 3, 3)
        assert got.reason == "no estimate: 3 runs (3 left out for clock skew)"

    def test_backfills_and_repairs_are_left_out_of_the_history(self, store):
        for d in range(1, 7):
            slot = TODAY - d * DAY
            run(store, ORDERS, slot, slot + 280 * MIN, slot + 300 * MIN)
        old = TODAY - 20 * DAY
        run(store, ORDERS, old, TODAY - 10 * MIN, TODAY - 5 * MIN, run_type="backfill")
        store.record_success(ORDERS, TODAY - DAY, meta=DAILY, run_id="repair", at=TODAY - 60 * MIN)
        got = expectation_of(store, ORDERS, TODAY, TODAY)
        assert got.runs == 5  # six days, one of them repaired since; the backfill not at all
        assert got.median == TODAY + 300 * MIN


class TestParentSlots:
    def test_a_daily_child_on_monday_waits_on_the_fridays_slot_of_a_weekday_parent(self, store):
        weekdays = TaskMeta(cron="0 5 * * 1-5")
        store.declare_parents(REPORT, DAILY, [ORDERS])
        store.register_task(ORDERS, weekdays)
        got = expectation_of(store, REPORT, TODAY, TODAY)
        friday = dt.datetime(2024, 3, 8, 5, tzinfo=UTC)
        assert got.reason == "no estimate: 0 runs"
        store.record_running(ORDERS, friday, meta=weekdays, run_id="fri", at=friday + MIN)
        for d in range(1, 6):
            slot = TODAY - d * DAY
            run(store, REPORT, slot, slot + 10 * MIN, slot + 20 * MIN)
        waiting = expectation_of(store, REPORT, TODAY, TODAY)
        assert waiting.reason == "no estimate: waiting on ingest/orders (no estimate: 0 runs)"
        found = expectations_for(store, [(ORDERS, friday)], TODAY)[(str(ORDERS), friday)]
        assert found.status == "no_estimate" and found.key == node_key(ORDERS, friday)

    @pytest.mark.parametrize("coverage", ["slot", "interval"])
    def test_a_parent_judged_on_the_whole_interval_makes_its_child_wait_on_every_slot_in_it(self, store, coverage):
        six_hourly = TaskMeta(cron="0 */6 * * *")
        store.declare_parents(REPORT, DAILY, [TaskIdentity("orders", "ingest", coverage=coverage)])
        for d in range(5, -1, -1):
            slot = TODAY - d * DAY
            for hour in (0, 6, 12, 18) if d else (0, 6, 12):  # today's 18:00 slot has not run
                part = slot + dt.timedelta(hours=hour)
                run(store, ORDERS, part, part + 5 * MIN, part + 10 * MIN, meta=six_hourly)
            if d:
                run(store, REPORT, slot, slot + (18 * 60 + 15) * MIN, slot + (18 * 60 + 20) * MIN)
        now = TODAY + 19 * 60 * MIN  # the 18:00 slot, usually done 18:10, is late
        got = expectation_of(store, REPORT, TODAY, now)
        if coverage == "interval":
            evening = TODAY + dt.timedelta(hours=18)
            assert (got.median, got.critical_path) == (now + 5 * MIN, (node_key(ORDERS, evening),))
            assert got.reason == "waiting on ingest/orders (usually done 18:10, not started)"
        else:  # the slot covering the child's start (00:00) is done: the child's own time, overdue, is now
            assert (got.median, got.critical_path) == (now, ())

    def test_the_declaration_keeps_a_whole_interval_coverage_and_leaves_the_default_unsaid(self, store):
        store.declare_parents(REPORT, DAILY, [TaskIdentity("a", "p", coverage="interval"), TaskIdentity("b", "p")])
        with store.engine.connect() as conn:
            parents = read_tasks(conn, [REPORT])[REPORT].parents
        assert [(p.name, p.coverage) for p in parents] == [("a", "interval"), ("b", None)]


class TestReads:
    def test_one_statement_per_kind_and_the_history_kept_while_nothing_is_written(self, chain):
        statements = []
        # Reads only: SQLite's engine also sends its own BEGIN.
        event.listen(
            chain.engine,
            "before_cursor_execute",
            lambda *args: statements.append(args[2]) if args[2].lstrip().startswith(("SELECT", "WITH")) else None,
        )
        targets = [(REPORT, TODAY - d * DAY) for d in range(5)] + [(ORDERS, TODAY)]
        HISTORIES.clear()
        expectations_for(chain, targets, TODAY)
        first = len(statements)
        expectations_for(chain, targets, TODAY)
        again = len(statements) - first
        chain.record_running(ORDERS, TODAY, meta=DAILY, run_id="x", at=TODAY + MIN)
        statements.clear()
        expectations_for(chain, targets, TODAY)
        assert (first, again, len(statements)) == (4, 3, 4)  # change number, tasks, records (+ history)
