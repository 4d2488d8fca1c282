"""The early warnings' catalog table on SQLite and PostgreSQL: a warning claimed once per run, gate and
deadline, whoever claims it; cleared once; its callback's outcome kept; migration 0017 adds the table alone.

The race is real: two processes warn the same run through the whole path a gate takes
(:func:`~airflow_leastaction.airflow_seam.deadline_watch.warn_sync`: the expectation, the claim, the
callback). The first is held inside its claim's transaction, after its insert and before its commit; the
second is let go once PostgreSQL shows its insert waiting on the first's lock, then the first commits.
Exactly one is told to call the callback."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
import textwrap
import time

import pytest
from sqlalchemy import inspect, select, text

from airflow_leastaction.catalog.deadline_warnings import (
    Expected,
    WarningKey,
    claim_warning,
    clear_warning,
    record_callback,
    warning_state,
    warnings_of,
)
from airflow_leastaction.catalog.engine import get_engine
from airflow_leastaction.catalog.migrate import downgrade, upgrade
from airflow_leastaction.catalog.schema import deadline_warning
from tests.helpers import deadline_warnings as dw

BEFORE = "0016_rerun_lease"
AFTER = "0017_deadline_warnings"
UTC = dt.UTC
SLOT = dt.datetime(2026, 11, 20, tzinfo=UTC)
KEY = WarningKey("sales", "scheduled__2026-11-20", "report__gate", -1, SLOT + dt.timedelta(hours=6))
LATE = Expected(SLOT + dt.timedelta(hours=6, minutes=20), SLOT + dt.timedelta(hours=6, minutes=40), "feed")
BACK = Expected(SLOT + dt.timedelta(hours=5), SLOT + dt.timedelta(hours=5, minutes=30), "")


class TestOnce:
    def test_a_warning_is_claimed_once_and_kept_with_what_it_was_made_on(self, store):
        assert warning_state(store, KEY) is None
        assert claim_warning(store, KEY, LATE, SLOT + dt.timedelta(hours=4)) is True
        assert claim_warning(store, KEY, LATE, SLOT + dt.timedelta(hours=4, minutes=1)) is False
        (row,) = warnings_of(store.engine.connect(), [(KEY.dag_id, KEY.run_id, KEY.task_id, -1)])[
            (KEY.dag_id, KEY.run_id, KEY.task_id, -1)
        ]
        assert (row["state"], row["expected_p90"], row["critical_path"], row["created_at"]) == (
            "warned",
            LATE.p90,
            "feed",
            SLOT + dt.timedelta(hours=4),
        )

    def test_another_deadline_or_map_index_is_another_warning(self, store):
        assert claim_warning(store, KEY, LATE)
        other_deadline = WarningKey(**{**KEY.__dict__, "deadline": KEY.deadline + dt.timedelta(hours=1)})
        other_index = WarningKey(**{**KEY.__dict__, "map_index": 3})
        assert claim_warning(store, other_deadline, LATE) and claim_warning(store, other_index, LATE)

    def test_a_standing_warning_is_cleared_once_and_a_cleared_one_stays_cleared(self, store):
        assert clear_warning(store, KEY, BACK) is False  # nothing to clear
        claim_warning(store, KEY, LATE)
        assert clear_warning(store, KEY, BACK, SLOT + dt.timedelta(hours=5)) is True
        assert clear_warning(store, KEY, BACK) is False
        assert claim_warning(store, KEY, LATE) is False  # late again: the run was warned already
        assert warning_state(store, KEY) == "cleared"
        with store.engine.connect() as conn:
            row = conn.execute(select(deadline_warning)).mappings().one()
        assert (row["expected_p90"], row["updated_at"]) == (BACK.p90, SLOT + dt.timedelta(hours=5))

    def test_the_callbacks_outcome_is_kept_on_the_row(self, store):
        claim_warning(store, KEY, LATE)
        record_callback(store, KEY, "failed: ConnectionError: " + "x" * 5000)
        with store.engine.connect() as conn:
            outcome = conn.execute(select(deadline_warning.c.callback_outcome)).scalar()
        assert outcome.startswith("failed: ConnectionError: xxx") and len(outcome) == 2000


class TestMigration0017:
    def test_upgrading_adds_the_table_and_downgrading_drops_it_alone(self, catalog_before):
        before = set(inspect(catalog_before).get_table_names())
        upgrade(catalog_before, AFTER)
        assert set(inspect(get_engine(str(catalog_before.url))).get_table_names()) - before == {"la_deadline_warning"}
        downgrade(catalog_before, BEFORE)
        assert set(inspect(catalog_before).get_table_names()) == before


WARNER = textwrap.dedent("""
    import datetime as dt, sys
    from sqlalchemy import event
    from airflow_leastaction.airflow_seam.deadline_watch import DeadlineWatch, warn_sync
    from airflow_leastaction.catalog.engine import get_engine
    from airflow_leastaction.catalog.store import CatalogStore

    url, spec, hold = sys.argv[1], sys.argv[2], sys.argv[3] == "hold"
    engine = get_engine(url)
    with engine.connect() as conn:  # the pool's one connection: every statement below goes through it
        print("BACKEND", conn.exec_driver_sql("SELECT pg_backend_pid()").scalar(), flush=True)
    held = []
    if hold:
        @event.listens_for(engine, "commit")
        def stall(conn):  # inside the claim's transaction, after its insert, before COMMIT: once
            if not held:
                held.append(True)
                print("HOLDING", flush=True)
                sys.stdin.readline()
    sys.stdin.readline()  # go
    watch = DeadlineWatch.from_dict(__import__("json").loads(spec))
    warn_sync(watch, CatalogStore(engine), dt.datetime.now(dt.timezone.utc))
    print("STATE", watch.state, flush=True)
""")


@pytest.mark.postgres
def test_two_processes_warning_the_same_run_at_once_call_the_callback_once(pg_url, tmp_path, monkeypatch):
    import json

    from airflow_leastaction.airflow_seam.deadline_watch import DeadlineWatch
    from airflow_leastaction.catalog.store import CatalogStore
    from airflow_leastaction.gating.deadline_warning import DeadlineWarning
    from airflow_leastaction.identity import TaskIdentity

    monkeypatch.setenv("RC_MARKERS", str(tmp_path))
    store = CatalogStore(get_engine(pg_url, migrate=True))
    feed, report = TaskIdentity("feed", "feeds"), TaskIdentity("report", "marts")
    now = dw.whole_minute(dt.datetime.now(UTC))
    today = now - dt.timedelta(hours=3)
    store.declare_parents(report, dw.ADHOC, [feed])
    dw.history(store, feed, report, today, feed_done=dt.timedelta(hours=1), feed_takes=dt.timedelta(hours=3),
               report_takes=dt.timedelta(hours=2))  # fmt: skip
    store.record_running(feed, today, meta=dw.FEED_META, at=now - dt.timedelta(minutes=5))  # late: done in ~3 h
    callback = {"kind": "sync", "path": "tests.helpers.deadline_warnings.tell_now", "kwargs": {}}
    key = WarningKey("sales", "manual__1", "report__gate", -1, today + dt.timedelta(hours=6))
    spec = json.dumps(
        DeadlineWatch(DeadlineWarning("06:00", callback=callback), key, report, today, task="report").as_dict()
    )

    env = dict(os.environ, PYTHONPATH=os.getcwd())
    first, second = (
        subprocess.Popen(
            [sys.executable, "-c", WARNER, pg_url, spec, how],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )  # fmt: skip
        for how in ("hold", "plain")
    )
    try:
        backends = [int(p.stdout.readline().split()[1]) for p in (first, second)]
        first.stdin.write("go\n")
        first.stdin.flush()
        assert first.stdout.readline().strip() == "HOLDING"
        second.stdin.write("go\n")
        second.stdin.flush()
        waiting_on_a_lock(store, backends[1])
        first.stdin.write("commit\n")
        first.stdin.flush()
        states = [p.communicate(timeout=120)[0].strip().splitlines()[-1] for p in (first, second)]
    finally:
        for p in (first, second):
            p.kill()
    assert states == ["STATE warned", "STATE warned"]
    told = dw.calls()
    assert len(told) == 1 and told[0]["kind"] == "sync"
    with store.engine.connect() as conn:
        (row,) = conn.execute(select(deadline_warning)).mappings().all()
    assert (row["state"], row["callback_outcome"]) == ("warned", "called")


def waiting_on_a_lock(store, backend: int) -> None:
    """Until PostgreSQL shows ``backend`` waiting for a lock (the second claim, behind the first's insert)."""
    query = text("SELECT wait_event_type FROM pg_stat_activity WHERE pid = :pid")
    while True:
        with store.engine.connect() as conn:
            if conn.execute(query, {"pid": backend}).scalar() == "Lock":
                return
        time.sleep(0.05)  # polling a condition, not a timing: the loop ends on what PostgreSQL shows
