"""Dependencies on tasks in other DAGs, in the same gate: the wait rule, the last run decides,
freshness and repairs. Real DAG runs (``dag.test()``); the other DAG's runs are catalog records, as the
listener of that DAG (or an external system) writes them."""

from __future__ import annotations

import datetime as dt
import threading
import time

import pytest

from airflow_leastaction.catalog.store import TaskMeta
from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.triggers.poller import CatalogPoller
from tests.helpers.run_conditions import consumed, day, decisions, later, states, tis

OTHER = TaskIdentity("rc_other_pipeline", "other-team")
META = TaskMeta(cron="0 0 * * *", source="external")


def other_run(
    store, n: int, state: str = "success", rows: int | None = 5, run_id: str | None = None, length: float = 0.0
):
    """One finished run of the other DAG's task for day ``n``."""
    run_id = run_id or f"other-{n}"
    start = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=length)
    store.record_running(OTHER, day(n), meta=META, run_id=run_id, at=start)
    if state == "success":
        return store.record_success(OTHER, day(n), meta=META, run_id=run_id, rows_written=rows)
    return store.record_finished(OTHER, day(n), state, meta=META, run_id=run_id)


class TestWaitForARunningUpstream:
    def test_the_check_waits_while_the_upstreams_latest_run_is_in_progress(self, rc_catalog, run_dag):
        other_run(rc_catalog, 1, length=1.0)  # history: an average run length of about a second
        rc_catalog.record_running(OTHER, day(2), meta=META, run_id="other-2")
        later(2.0, rc_catalog.record_success, OTHER, day(2), meta=META, run_id="other-2", rows_written=1)
        run = run_dag("rc_cross_dag", day(2))
        assert states(run)["child"] == "success"
        [decision] = decisions(rc_catalog, "rc_cross_dag", "child__gate")
        assert decision["result"] == "SATISFIED"
        assert decision["upstream_slot"] == day(2)  # the run it waited for, not yesterday's
        assert decision["upstream_revision"] == 1

    def test_one_check_waits_at_most_the_maximum_wait_then_the_latest_finished_run_decides(self, rc_catalog, run_dag):
        rc_catalog.record_running(OTHER, day(3), meta=META, run_id="other-3")  # never finishes
        run = run_dag("rc_cross_dag_short_wait", day(3))
        ti = tis(run)
        assert ti["child"].state == "skipped"
        assert ti["child__gate"].end_date - ti["child__gate"].start_date >= dt.timedelta(seconds=1.5)
        [decision] = decisions(rc_catalog, "rc_cross_dag_short_wait", "child__gate")
        assert "no finished run" in decision["reason"]

    def test_a_maximum_wait_of_zero_judges_at_once(self, rc_catalog, run_dag):
        other_run(rc_catalog, 3, rows=2)
        rc_catalog.record_running(OTHER, day(4), meta=META, run_id="other-4")
        run = run_dag("rc_cross_dag_has_data", day(4))
        assert states(run)["child"] == "success"  # yesterday's finished run decides at once
        assert decisions(rc_catalog, "rc_cross_dag_has_data", "child__gate")[0]["upstream_slot"] == day(3)


class TestTheCheckStartsWithTheTask:
    def test_a_long_same_run_upstream_spends_none_of_the_budget_and_a_late_run_elsewhere_is_waited_for(
        self, rc_catalog, run_dag, markers
    ):
        """Ten looks at most; the same-run upstream runs for twice as many gate ticks, the other DAG's
        run starts meanwhile and is still running when the upstream finishes: the gate waits for it."""
        other_run(rc_catalog, 15, length=10.0)  # history: looks at 7 s, 8 s, 9 s ... into a run
        other_run(rc_catalog, 16, "failed")  # the latest finished run would reject the child

        def pokes() -> int:
            path = markers / "slow.pokes"
            return int(path.read_text() or 0) if path.exists() else 0

        def gate_waits_in_its_trigger() -> bool:
            return any(p.read == "latest_runs" and p.subscribers for p in list(CatalogPoller._shared.values()))

        def upstreams():
            if not until(lambda: pokes() >= 6):
                return
            rc_catalog.record_running(OTHER, day(17), meta=META, run_id="other-17")  # starts late
            if not until(lambda: pokes() >= 20):
                return
            (markers / "release").write_text("go")
            if until(gate_waits_in_its_trigger):  # the check started and is waiting for the run elsewhere
                rc_catalog.record_success(OTHER, day(17), meta=META, run_id="other-17", rows_written=1)

        helper = threading.Thread(target=upstreams, daemon=True)
        helper.start()
        run = run_dag("rc_cross_dag_after_long_upstream", day(17))
        helper.join(timeout=5)
        assert pokes() >= 20
        assert states(run)["child"] == "success"
        rows = {d["dependency"]: d for d in decisions(rc_catalog, "rc_cross_dag_after_long_upstream", "child__gate")}
        assert rows[OTHER.key]["result"] == "SATISFIED" and rows[OTHER.key]["upstream_slot"] == day(17)
        assert rows["task:slow"]["result"] == "SATISFIED"

    def test_a_gate_that_does_not_defer_keeps_its_check_in_the_worker_until_the_budget_is_spent(
        self, rc_catalog, run_dag
    ):
        rc_catalog.record_running(OTHER, day(18), meta=META, run_id="other-18")  # never finishes
        run = run_dag("rc_cross_dag_in_worker", day(18))
        ti = tis(run)
        assert ti["child"].state == "skipped"
        assert ti["child__gate"].end_date - ti["child__gate"].start_date >= dt.timedelta(seconds=1.5)
        [decision] = decisions(rc_catalog, "rc_cross_dag_in_worker", "child__gate")
        assert "no finished run" in decision["reason"]


def until(condition, deadline: float = 120.0) -> bool:
    """Wait for ``condition`` (checked every 50 ms) for at most ``deadline`` seconds; True when it held."""
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(0.05)
    return False


class TestTheLastRunDecides:
    def test_an_older_run_that_would_have_satisfied_it_does_not_count(self, rc_catalog, run_dag):
        other_run(rc_catalog, 4, "success")
        other_run(rc_catalog, 5, "failed")
        run = run_dag("rc_cross_dag_short_wait", day(5))
        assert states(run)["child"] == "skipped"
        [decision] = decisions(rc_catalog, "rc_cross_dag_short_wait", "child__gate")
        assert decision["result"] == "UNSATISFIED" and decision["upstream_slot"] == day(5)

    @pytest.mark.parametrize("rows,expected", [(4, "success"), (0, "skipped"), (None, "skipped")])
    def test_has_data_on_another_dag_needs_rows_written_by_its_latest_run(self, rc_catalog, run_dag, rows, expected):
        other_run(rc_catalog, 6, rows=rows)
        assert states(run_dag("rc_cross_dag_has_data", day(6)))["child"] == expected

    def test_dependencies_on_other_dags_never_skip_a_task_before_its_own_upstreams_finish(
        self, rc_catalog, run_dag, markers
    ):
        later(2.0, (markers / "release").write_text, "go")
        run = run_dag("rc_cross_dag_waits_for_own_run", day(7))  # OTHER never ran: it cannot be satisfied
        ti = tis(run)
        assert ti["child"].state == "skipped"
        assert ti["child__gate"].end_date >= ti["release"].end_date


class TestFreshOutput:
    def test_consumption_uses_the_admission_decision(self, rc_catalog, run_dag):
        other_run(rc_catalog, 8)
        assert states(run_dag("rc_cross_dag_has_data", day(8)))["child"] == "success"
        other_run(rc_catalog, 9)  # a newer run completes after the admission: it is not what was consumed
        [row] = consumed(rc_catalog, "rc_cross_dag_has_data")
        assert (row["task_id"], row["upstream_slot"], row["upstream_revision"]) == ("child", day(8), 1)
        [decision] = decisions(rc_catalog, "rc_cross_dag_has_data", "child__gate")
        assert row["decision_id"] == decision["id"]

    def test_output_already_consumed_does_not_satisfy_again_until_a_newer_run_or_a_repair(self, rc_catalog, run_dag):
        other_run(rc_catalog, 10)
        assert states(run_dag("rc_cross_dag_has_data", day(10)))["child"] == "success"
        assert states(run_dag("rc_cross_dag_has_data", day(11)))["child"] == "skipped"
        assert "already consumed" in decisions(rc_catalog, "rc_cross_dag_has_data", "child__gate")[-1]["reason"]
        other_run(rc_catalog, 10, run_id="other-10")  # a repair of the same run: revision 2
        assert states(run_dag("rc_cross_dag_has_data", day(12)))["child"] == "success"
        assert [r["upstream_revision"] for r in consumed(rc_catalog, "rc_cross_dag_has_data")] == [1, 2]

    def test_without_consume_repairs_only_a_new_run_identity_is_new(self, rc_catalog, run_dag):
        other_run(rc_catalog, 13)
        assert states(run_dag("rc_cross_dag_no_repairs", day(13)))["child"] == "success"
        other_run(rc_catalog, 13, run_id="other-13")  # repaired: revision 2, same run
        assert states(run_dag("rc_cross_dag_no_repairs", day(14)))["child"] == "skipped"
        other_run(rc_catalog, 14)
        assert states(run_dag("rc_cross_dag_no_repairs", day(15)))["child"] == "success"
