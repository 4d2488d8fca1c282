"""Catalog dependencies of run conditions judged on the whole interval (``coverage="interval"``)."""

from __future__ import annotations

import datetime as dt
import threading
import time

from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.triggers.poller import CatalogPoller
from tests.helpers.run_conditions import day, decisions, states

START, END = day(20), day(21)


def until(condition, deadline: float = 120.0) -> bool:
    """Wait for ``condition`` (checked every 50 ms) for at most ``deadline`` seconds; True when it held."""
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(0.05)
    return False


class TestRuns:
    def _report(self, store, hours):
        for h in hours:
            store.report_completion(
                TaskIdentity("rc_hourly", "other-team"), START + dt.timedelta(hours=h), cron="0 * * * *"
            )

    def test_a_daily_task_starts_once_every_hourly_slot_of_its_day_completed(self, rc_catalog, run_dag):
        self._report(rc_catalog, range(24))
        run = run_dag("rc_whole_day", START)
        assert states(run)["child"] == "success"
        [decision] = decisions(rc_catalog, "rc_whole_day", "child__gate")
        assert decision["result"] == "SATISFIED"
        assert "all 24 slots from 2026-11-20 00:00 up to 2026-11-21 00:00 completed" in decision["reason"]

    def test_a_daily_task_is_skipped_naming_the_missing_slot_when_its_wait_runs_out(self, rc_catalog, run_dag):
        self._report(rc_catalog, range(23))
        run = run_dag("rc_whole_day", START)
        assert states(run)["child"] == "skipped"
        [decision] = decisions(rc_catalog, "rc_whole_day", "child__gate")
        assert decision["result"] == "UNSATISFIED"
        assert decision["reason"].endswith(
            "not complete (whole interval): 2026-11-20 23:00 (has not run) "
            "(judged at 2026-11-20T00:00:00+00:00, the run's data interval start)"
        )

    def test_a_slot_that_has_not_run_spends_no_looks_and_its_late_run_is_waited_for(self, rc_catalog, run_dag):
        """Three looks at most, a look due every poll: had the gate counted its looks at a slot that has not
        run, it would have skipped the child within a few polls, long before the last hour lands."""
        self._report(rc_catalog, range(23))

        def polls_while_the_gate_waits() -> int:
            # The whole-interval reads of this test's only gate, counted while it waits on them.
            polls = [p for p in list(CatalogPoller._shared.values()) if p.read == "snapshot" and p.subscribers]
            return max((p.ticks for p in polls), default=0)

        def the_last_hour_lands_late():
            if until(lambda: polls_while_the_gate_waits() >= 20):
                self._report(rc_catalog, [23])

        helper = threading.Thread(target=the_last_hour_lands_late, daemon=True)
        helper.start()
        run = run_dag("rc_whole_day_few_looks", START)
        helper.join(timeout=5)
        assert states(run)["child"] == "success"
        [decision] = decisions(rc_catalog, "rc_whole_day_few_looks", "child__gate")
        assert decision["result"] == "SATISFIED"
        assert "all 24 slots from 2026-11-20 00:00 up to 2026-11-21 00:00 completed" in decision["reason"]
