"""Fallbacks on real DAG runs (``dag.test()``) against real catalogs: a report that needs four country
feeds runs at its deadline with what is there, says what it ran without, and is listed stale when the
late feed lands.

The feeds are catalog tasks the test reports (``report_completion``), as systems outside Airflow do; a
feed whose run is in progress is recorded running. A deadline in the past is met on the gate's first
look; the tests of the wait itself put it a few seconds ahead.
"""

from __future__ import annotations

import datetime as dt
import json
import threading

import pytest
from sqlalchemy import select

from airflow_leastaction.catalog.external import report_completion
from airflow_leastaction.catalog.schema import consumption, gate_decision, late_arrival
from airflow_leastaction.identity import TaskIdentity

UTC = dt.UTC
DAY = dt.datetime(2026, 11, 20, tzinfo=UTC)
DEADLINE = DAY + dt.timedelta(hours=6)
COUNTRIES = ("fr", "de", "es", "it")


def feed(country: str) -> TaskIdentity:
    return TaskIdentity(f"fb_feed_{country}", "feeds")


@pytest.fixture
def catalog(store, catalog_url, use_catalog, tmp_path, monkeypatch):
    """The run's catalog (each backend), markers and spool in the test's folder."""
    monkeypatch.setenv("AIRFLOW__LEASTACTION__SPOOL_DIR", str(tmp_path / "spool"))
    monkeypatch.setenv("RC_MARKERS", str(tmp_path / "markers"))
    use_catalog(catalog_url)
    return store


def land(store, *countries: str, slot: dt.datetime = DAY, cron: str | None = "0 0 * * *") -> None:
    for c in countries:
        report_completion(feed(c).name, "feeds", slot, cron=cron, store=store)


def states(run) -> dict[str, str]:
    return {ti.task_id: str(getattr(ti.state, "value", ti.state)) for ti in run.get_task_instances()}


def rows(store, table, **where):
    with store.engine.connect() as conn:
        query = select(table).where(*(table.c[k] == v for k, v in where.items())).order_by(table.c.id)
        return [dict(r) for r in conn.execute(query).mappings()]


def by_feed(records) -> dict[str, tuple]:
    return {
        r["dependency"].rsplit("_", 1)[-1]: (r["result"], r["upstream_slot"], r["upstream_revision"]) for r in records
    }


class TestDegradedAtTheDeadline:
    def test_all_of_four_with_require_3_runs_degraded_when_one_feed_is_late(self, catalog, run_dag):
        land(catalog, "fr", "de", "es")
        catalog.record_running(feed("it"), DAY, run_id="it-late")  # the Italian feed is still landing
        run = run_dag("fb_report", DAY)
        assert states(run)["report"] == "success"
        decisions = rows(catalog, gate_decision, dag_id="fb_report", task_id="report__gate")
        assert by_feed(decisions) == {
            "fr": ("SATISFIED", DAY, 1),
            "de": ("SATISFIED", DAY, 1),
            "es": ("SATISFIED", DAY, 1),
            "it": ("MISSING", DAY, 0),
        }
        (missing,) = [d for d in decisions if d["result"] == "MISSING"]
        assert f"missing at the fallback deadline {DEADLINE.isoformat()}" in missing["reason"]
        assert "is running since" in missing["reason"]
        assert missing["upstream_task_pk"] == catalog.get_task(feed("it"))["id"]
        # The report's success consumed what it ran with, and what it ran without (revision 0: nothing).
        consumed = rows(catalog, consumption, dag_id="fb_report", task_id="report")
        assert by_feed(consumed) == by_feed(decisions)

    def test_the_late_feed_landing_lists_the_report_stale_ran_without_it(self, catalog, run_dag):
        land(catalog, "fr", "de", "es")
        catalog.record_running(feed("it"), DAY, run_id="it-late")
        run_dag("fb_report", DAY)
        assert catalog.audit.stale_consumers("fb_report") == []
        land(catalog, "it")
        (stale,) = catalog.audit.stale_consumers("fb_report")
        assert (stale["task_id"], stale["dependency"], stale["upstream_slot"], stale["missing"]) == (
            "report",
            feed("it").key,
            DAY,
            True,
        )
        assert (stale["consumed_revision"], stale["current_revision"]) == (0, 1)

    def test_below_require_the_report_is_skipped_at_the_deadline(self, catalog, run_dag):
        land(catalog, "fr", "de")
        run = run_dag("fb_report", DAY)
        assert states(run)["report"] == "skipped"
        decisions = rows(catalog, gate_decision, dag_id="fb_report", task_id="report__gate")
        assert [d["result"] for d in decisions] == ["SATISFIED", "SATISFIED", "UNSATISFIED", "UNSATISFIED"]
        assert (
            f"at the fallback deadline {DEADLINE.isoformat()} only 2 satisfied, the fallback needs 3"
            in (decisions[2]["reason"])
        )
        assert rows(catalog, consumption, dag_id="fb_report") == []

    def test_a_time_of_day_deadline_is_read_on_the_slots_day(self, catalog, run_dag):
        land(catalog, "fr", "de", "es")
        run = run_dag("fb_report_at_six", DAY)
        assert states(run)["report"] == "success"
        (missing,) = [d for d in rows(catalog, gate_decision, dag_id="fb_report_at_six") if d["result"] == "MISSING"]
        assert f"missing at the fallback deadline {DEADLINE.isoformat()}" in missing["reason"]


class TestBeforeTheDeadline:
    def slot_with_deadline_in(self, seconds: float) -> dt.datetime:
        now = dt.datetime.now(UTC).replace(microsecond=0)
        return now - dt.timedelta(hours=6) + dt.timedelta(seconds=seconds)

    def test_a_feed_that_lands_before_the_deadline_admits_the_report_in_full(self, catalog, run_dag):
        slot = self.slot_with_deadline_in(45)
        land(catalog, "fr", "de", "es", slot=slot)
        later = threading.Timer(2, land, (catalog, "it"), {"slot": slot})
        later.start()
        run = run_dag("fb_report", slot)
        later.join()
        assert states(run)["report"] == "success"
        decisions = rows(catalog, gate_decision, dag_id="fb_report", task_id="report__gate")
        assert [d["result"] for d in decisions] == ["SATISFIED"] * 4
        assert all(d["decided_at"] < slot + dt.timedelta(hours=6) for d in decisions)

    def test_the_waiting_gate_admits_degraded_once_its_deadline_passes(self, catalog, run_dag):
        slot = self.slot_with_deadline_in(4)
        land(catalog, "fr", "de", "es", slot=slot)
        run = run_dag("fb_report", slot)
        assert states(run)["report"] == "success"
        decisions = rows(catalog, gate_decision, dag_id="fb_report", task_id="report__gate")
        assert [d["result"] for d in decisions] == ["SATISFIED"] * 3 + ["MISSING"]
        assert all(d["decided_at"] >= slot + dt.timedelta(hours=6) for d in decisions)


class TestOtherGates:
    def test_the_run_gate_admits_the_whole_run_degraded(self, catalog, run_dag):
        land(catalog, "fr", "de", "es")
        run = run_dag("fb_run_gate", DAY)
        assert states(run)["report"] == "success"
        decisions = rows(catalog, gate_decision, dag_id="fb_run_gate", task_id="leastaction_dag_gate")
        assert [d["result"] for d in decisions] == ["SATISFIED"] * 3 + ["MISSING"]

    def test_the_sensor_admits_degraded_naming_the_slot_it_awaited(self, catalog, run_dag):
        land(catalog, "fr", "de", "es")
        land(catalog, "it", slot=DAY - dt.timedelta(days=1))  # its watermark is a day behind
        run = run_dag("fb_sensor", DAY)
        assert states(run)["report"] == "success"
        decisions = rows(catalog, gate_decision, dag_id="fb_sensor", task_id="wait_for_feeds")
        assert by_feed(decisions)["it"] == ("MISSING", DAY, 0)
        land(catalog, "it")
        assert [(s["task_id"], s["missing"]) for s in catalog.audit.stale_consumers("fb_sensor")] == [("report", True)]

    def test_a_feed_of_the_same_run_that_failed_is_missing(self, catalog, run_dag):
        run = run_dag("fb_in_run", DAY)
        assert (states(run)["report"], states(run)["land_it"]) == ("success", "failed")
        decisions = rows(catalog, gate_decision, dag_id="fb_in_run", task_id="report__gate")
        assert {d["dependency"]: d["result"] for d in decisions} == {
            "task:land_fr": "SATISFIED",
            "task:land_de": "SATISFIED",
            "task:land_es": "SATISFIED",
            "task:land_it": "MISSING",
        }


class TestLateArrivalRerun:
    def test_without_airflows_api_the_rerun_is_recorded_failed_once(self, catalog, run_dag, monkeypatch):
        monkeypatch.delenv("AIRFLOW_CONN_LEASTACTION_AIRFLOW_API_DEFAULT", raising=False)
        land(catalog, "fr", "de", "es")
        catalog.record_running(feed("it"), DAY, run_id="it-late")
        run_dag("fb_report_rerun", DAY)
        (waiting,) = rows(catalog, late_arrival, dag_id="fb_report_rerun")
        assert (waiting["state"], waiting["gate_task_id"], json.loads(waiting["task_ids"])) == (
            "waiting",
            "report__gate",
            ["report"],
        )
        land(catalog, "it")
        (failed,) = rows(catalog, late_arrival, dag_id="fb_report_rerun")
        assert failed["state"] == "failed"
        assert "leastaction_airflow_api_default" in failed["detail"]
        land(catalog, "it")  # a repair later: the one re-run was spent
        assert rows(catalog, late_arrival, dag_id="fb_report_rerun")[0]["updated_at"] == failed["updated_at"]

    def test_a_feed_that_had_never_reported_is_noticed_when_it_lands(self, catalog, run_dag, monkeypatch):
        monkeypatch.delenv("AIRFLOW_CONN_LEASTACTION_AIRFLOW_API_DEFAULT", raising=False)
        land(catalog, "fr", "de", "es")  # the Italian feed has never reported: the catalog has no such task
        run_dag("fb_report_rerun", DAY)
        (missing,) = [d for d in rows(catalog, gate_decision, dag_id="fb_report_rerun") if d["result"] == "MISSING"]
        assert (missing["upstream_task_pk"], missing["upstream_identity"]) == (None, str(feed("it")))
        land(catalog, "it")
        assert [(s["task_id"], s["missing"]) for s in catalog.audit.stale_consumers("fb_report_rerun")] == [
            ("report", True)
        ]
        (asked,) = rows(catalog, late_arrival, dag_id="fb_report_rerun")
        assert asked["state"] == "failed"  # asked of Airflow's API, which this run has not


def test_a_gate_judged_again_after_a_restart_keeps_the_decisions_it_recorded(catalog):
    """A trigger that recorded its decisions and was run again (its triggerer restarted before Airflow
    heard the task end) records nothing more: the deadline is met once."""
    import asyncio

    from airflow_leastaction.catalog.audit import AttemptKey, RerunOnArrival
    from airflow_leastaction.gating.engine import ALL, Judgement, decide_at_deadline
    from airflow_leastaction.triggers.task_end import settle_from_trigger

    url = str(catalog.engine.url.render_as_string(hide_password=False))
    attempt = AttemptKey("fb_report", "report__gate", "manual__restart", -1, 1)
    judged = [Judgement(feed(c).key, c != "it", f"{c}: judged") for c in COUNTRIES]
    outcome = decide_at_deadline(ALL, judged, 3, DEADLINE.isoformat())
    for _ in range(2):
        admission = asyncio.run(
            settle_from_trigger(
                url, attempt, outcome, downstream_slot=DAY, mode="enforce", rerun=RerunOnArrival(("report",))
            )
        )
        assert (admission.admitted, admission.degraded) == (True, True)
    assert [d["result"] for d in rows(catalog, gate_decision, run_id="manual__restart")] == ["SATISFIED"] * 3 + [
        "MISSING"
    ]
    assert len(rows(catalog, late_arrival, run_id="manual__restart")) == 1
