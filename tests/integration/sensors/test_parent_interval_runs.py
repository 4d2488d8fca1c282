"""ParentIntervalSensor in real Airflow DAG runs (``dag.test()``), on a SQLite and a PostgreSQL catalog."""

from __future__ import annotations

import datetime as dt
import threading
import time

import pytest
from sqlalchemy import select

from airflow_leastaction import report_completion
from airflow_leastaction.catalog.schema import consumption, gate_decision, task, task_run
from airflow_leastaction.catalog.store import TaskMeta
from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.refs import airflow_task
from tests.helpers.run_conditions import attempt_summaries

UTC = dt.UTC
RAW = TaskIdentity("orders_raw", "sales-platform")


def day(n: int) -> dt.datetime:
    return dt.datetime(2026, 11, n, tzinfo=UTC)


def later(seconds: float, fn, *args, **kwargs) -> threading.Thread:
    """Run ``fn`` in a thread after ``seconds``: an upstream finishing while the child waits."""

    def run():
        time.sleep(seconds)
        fn(*args, **kwargs)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def decisions(store, dag_id: str, task_id: str):
    with store.engine.connect() as conn:
        return (
            conn.execute(
                select(gate_decision)
                .where(gate_decision.c.dag_id == dag_id, gate_decision.c.task_id == task_id)
                .order_by(gate_decision.c.id)
            )
            .mappings()
            .all()
        )


def slot_finished_at(store, identity: TaskIdentity, slot: dt.datetime) -> dt.datetime:
    with store.engine.connect() as conn:
        return conn.execute(
            select(task_run.c.finished_at)
            .join(task, task.c.id == task_run.c.task_pk)
            .where(task.c.name == identity.name, task.c.project == identity.project, task_run.c.slot == slot)
        ).scalar_one()


def ti_state(run, task_id: str) -> str:
    return next(ti.state for ti in run.get_task_instances() if ti.task_id == task_id)


@pytest.fixture
def catalog(store, catalog_url, use_catalog, tmp_path, monkeypatch):
    monkeypatch.setenv("AIRFLOW__LEASTACTION__SPOOL_DIR", str(tmp_path / "spool"))
    use_catalog(catalog_url)
    return store


def report_raw(store, n: int, run_id: str | None = None):
    report_completion(
        "orders_raw", "sales-platform", day(n), cron="0 0 * * *", rows_written=10, run_id=run_id, store=store
    )


class TestParentIntervalSensorRuns:
    def test_the_child_waits_while_the_parent_slot_is_incomplete_and_is_released_when_it_completes(
        self, catalog, run_dag
    ):
        report_raw(catalog, 4)
        later(2.0, report_raw, catalog, 5)
        run = run_dag("orders_enriched", day(5))
        assert run.state == "success"
        admitted = decisions(catalog, "orders_enriched", "wait_for_orders_raw")
        assert [d["result"] for d in admitted] == ["SATISFIED"]
        assert admitted[0]["upstream_slot"] == day(5)
        assert admitted[0]["decided_at"] >= slot_finished_at(catalog, RAW, day(5))

    def test_the_weekly_parent_satisfies_the_daily_child(self, catalog, run_dag):
        assert run_dag("fx_rates_weekly", day(23)).state == "success"  # Monday 23 November
        for child_day in (23, 25, 29):
            assert run_dag("pricing_daily", day(child_day)).state == "success"
        slots = {d["upstream_slot"] for d in decisions(catalog, "pricing_daily", "wait_for_weekly_rates")}
        assert slots == {day(23)}

    def test_the_sensors_attempt_is_summarised_with_its_decision(self, catalog, run_dag):
        report_raw(catalog, 7)
        assert run_dag("orders_enriched", day(7)).state == "success"
        written, counted = attempt_summaries(catalog)
        assert [key[1] for key in written] == ["wait_for_orders_raw"]
        assert written == counted

    def test_consumption_is_recorded_when_the_gated_task_succeeds(self, catalog, run_dag):
        report_raw(catalog, 6)
        assert run_dag("orders_enriched", day(6)).state == "success"
        with catalog.engine.connect() as conn:
            rows = conn.execute(select(consumption)).mappings().all()
        assert [(r["task_id"], r["dependency"], r["upstream_revision"]) for r in rows] == [("enrich", RAW.key, 1)]

    def test_a_backfill_releases_each_child_day_only_after_its_parent_day(self, catalog, run_dag):
        days = range(10, 15)

        def parent_backfill(run_prefix: str):
            for n in days:  # upstream first for each day, one day at a time
                time.sleep(0.6)
                report_raw(catalog, n, run_id=f"{run_prefix}-{n}")

        threading.Thread(target=parent_backfill, args=("backfill",), daemon=True).start()
        for n in days:
            assert run_dag("orders_enriched", day(n)).state == "success"
            assert run_dag("orders_daily_report", day(n)).state == "success"
        first = decisions(catalog, "orders_enriched", "wait_for_orders_raw")
        assert [d["upstream_slot"] for d in first] == [day(n) for n in days]
        for d in first:
            assert d["decided_at"] >= slot_finished_at(catalog, RAW, d["upstream_slot"])
        report = decisions(catalog, "orders_daily_report", "wait_for_orders_enriched")
        assert [d["upstream_slot"] for d in report] == [day(n) for n in days]

        # The parent's slots are re-run after the children consumed them: each re-run child day waits
        # for the re-run parent day (revision 2) instead of consuming revision 1 again.
        threading.Thread(target=parent_backfill, args=("repair",), daemon=True).start()
        for n in days:
            assert run_dag("orders_enriched", day(n)).state == "success"
        second = decisions(catalog, "orders_enriched", "wait_for_orders_raw")[len(first) :]
        assert [(d["upstream_slot"], d["upstream_revision"]) for d in second] == [(day(n), 2) for n in days]
        for d in second:
            assert d["decided_at"] >= slot_finished_at(catalog, RAW, d["upstream_slot"])

    def test_a_failed_parent_fails_the_sensor_when_on_parent_failure_is_fail(self, catalog, run_dag):
        parent = TaskIdentity("pis_raw", "other-team")
        catalog.record_running(parent, day(7), meta=TaskMeta(cron="0 0 * * *"), run_id="r")
        catalog.record_finished(parent, day(7), "failed", run_id="r")
        run = run_dag("pis_fail_fast", day(7))
        assert ti_state(run, "wait") == "failed"
        assert ti_state(run, "work") == "upstream_failed"

    def test_timeout_fails_the_sensor(self, catalog, run_dag):
        run = run_dag("pis_timeout", day(8))
        assert ti_state(run, "wait") == "failed"
        assert decisions(catalog, "pis_timeout", "wait") == []  # waiting writes nothing

    def test_poke_mode_admits_without_deferring(self, catalog, run_dag):
        later(1.0, report_completion, "pis_raw", "other-team", day(9), cron="0 0 * * *", store=catalog)
        assert run_dag("pis_poke", day(9)).state == "success"
        assert [d["result"] for d in decisions(catalog, "pis_poke", "wait")] == ["SATISFIED"]

    def test_an_empty_parents_list_passes_at_once(self, catalog, run_dag):
        assert run_dag("pis_no_parents", day(9)).state == "success"

    def test_an_unknown_catalog_connection_fails_the_task(self, catalog, run_dag):
        run = run_dag("pis_unknown_conn", day(9))
        assert ti_state(run, "wait") == "failed"


def recorded_slots(store, dag_id: str, task_id: str) -> list[dt.datetime]:
    identity = airflow_task(dag_id, task_id)
    with store.engine.connect() as conn:
        return list(
            conn.execute(
                select(task_run.c.slot)
                .join(task, task.c.id == task_run.c.task_pk)
                .where(task.c.name == identity.name, task.c.project == identity.project)
            ).scalars()
        )


class TestRunsWithoutALogicalDate:
    """Manual and asset-triggered runs in Airflow 3 may have no logical date and no data interval: the
    sensor judges them at their run_after, the instant the listener records them at."""

    AFTER = dt.datetime(2026, 11, 20, 9, 15, tzinfo=UTC)

    def test_a_manual_run_without_a_logical_date_is_judged_at_its_run_after(self, catalog, run_dag):
        report_completion("pis_raw", "other-team", day(20), cron="0 0 * * *", store=catalog)
        run = run_dag("pis_no_interval", None, run_after=self.AFTER)
        assert run.logical_date is None and run.data_interval_start is None
        assert run.state == "success"
        [decision] = decisions(catalog, "pis_no_interval", "wait")
        assert decision["result"] == "SATISFIED" and decision["upstream_slot"] == day(20)
        assert decision["reason"].endswith(
            "(judged at 2026-11-20T09:15:00+00:00, the run's run_after (it has no logical date))"
        )
        assert recorded_slots(catalog, "pis_no_interval", "work") == [self.AFTER]

    def test_an_asset_triggered_run_waits_for_the_daily_parent_slot_covering_its_run_after(self, catalog, run_dag):
        report_completion("pis_raw", "other-team", day(19), cron="0 0 * * *", store=catalog)
        later(2.0, report_completion, "pis_raw", "other-team", day(20), cron="0 0 * * *", store=catalog)
        run = run_dag("pis_on_asset", None, run_after=self.AFTER)
        assert run.logical_date is None and run.data_interval_start is None
        assert run.state == "success"
        [decision] = decisions(catalog, "pis_on_asset", "wait")
        assert decision["upstream_slot"] == day(20)  # the day before did not admit it
        assert decision["decided_at"] >= slot_finished_at(catalog, TaskIdentity("pis_raw", "other-team"), day(20))
        assert "the run's run_after" in decision["reason"]
        assert recorded_slots(catalog, "pis_on_asset", "work") == [self.AFTER]


class TestWholeIntervalCoverage:
    def test_a_daily_child_waits_for_all_24_hourly_parent_slots_of_its_day(self, catalog, run_dag, capfd):
        def report_hour(h: int):
            report_completion(
                "pis_hourly", "other-team", day(20) + dt.timedelta(hours=h), cron="0 * * * *", store=catalog
            )

        for h in range(23):
            report_hour(h)
        run = run_dag("pis_whole_day", day(20))
        assert ti_state(run, "wait") == "failed"  # timed out: 23:00 is missing
        log = capfd.readouterr().out
        assert (
            "pis_hourly: 1 of 24 slots from 2026-11-20 00:00 up to 2026-11-21 00:00 not complete (whole "
            "interval): 2026-11-20 23:00 (has not run)" in log
        )
        assert "parents not satisfied in time" in log
        assert decisions(catalog, "pis_whole_day", "wait") == []
        report_hour(23)
        assert run_dag("pis_whole_day", day(20)).state == "success"
        admitted = decisions(catalog, "pis_whole_day", "wait")
        assert [(d["result"], d["upstream_slot"]) for d in admitted] == [
            ("SATISFIED", day(20) + dt.timedelta(hours=23))
        ]
        assert "all 24 slots from 2026-11-20 00:00 up to 2026-11-21 00:00 completed" in admitted[0]["reason"]


class TestConsumptionThroughGates:
    def test_a_task_behind_a_run_condition_gate_consumes_the_sensors_decisions_too(self, catalog, run_dag):
        report_completion("pis_raw", "other-team", day(16), cron="0 0 * * *", store=catalog)
        assert run_dag("pis_sensor_then_gate", day(16)).state == "success"
        with catalog.engine.connect() as conn:
            rows = conn.execute(select(consumption.c.task_id, consumption.c.dependency)).all()
        assert {task_id for task_id, _ in rows} == {"load"}  # gates consume nothing themselves
        assert {dependency for _, dependency in rows} == {"catalog:other-team/pis_raw", "task:wait", "task:extract"}


def declared_parents(store, identity: TaskIdentity) -> set[str]:
    from airflow_leastaction.catalog.declared_parents import parse_parents

    with store.engine.connect() as conn:
        text = conn.execute(select(task.c.parents).where(task.c.name == identity.name)).scalar_one()
    return {p.name for p in parse_parents(text)}


class TestOneTaskGatedTwice:
    """A task behind two sensors has every parent they wait on
    declared in the catalog, whichever gate declared last: what the dependency graph, the re-run planner
    and expected times read."""

    def test_every_gate_of_a_task_declares_the_union_of_its_gates_parents(self, catalog, run_dag):
        for parent in ("pis_raw", "pis_rates"):
            report_completion(parent, "other-team", day(11), cron="0 0 * * *", store=catalog)
        run = run_dag("pis_two_sensors", day(11))
        assert run.state == "success"
        union = {"pis_raw", "pis_rates"}
        assert declared_parents(catalog, airflow_task("pis_two_sensors", "report")) == union
