"""A re-run on late arrival (``on_late_arrival="rerun"``) happens exactly once whatever process dies where:
killed at each step boundary of the re-run (crash points, real child processes forked from one that has
imported Airflow), the next writer (the same
report retried, or the ``rerun-late`` sweep) carries it out, and any later sweep asks nothing more of
Airflow. A late input that arrives as a delivered event (the listener's, an asset event's) or as a replayed
spool file makes it due too. On SQLite and PostgreSQL, against a stand-in of Airflow's API over HTTP."""

from __future__ import annotations

import datetime as dt

import pytest
from sqlalchemy import select

from airflow_leastaction.catalog.audit import AttemptKey, RerunOnArrival
from airflow_leastaction.catalog.outcomes import SlotEvent, deliver, replay, spool
from airflow_leastaction.catalog.schema import late_arrival
from airflow_leastaction.catalog.store import TaskMeta
from airflow_leastaction.crash_points import declared
from airflow_leastaction.gating.engine import ALL, Judgement, decide_at_deadline
from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.refs import airflow_task
from tests.helpers.airflow_api_stand_in import AirflowApiStandIn
from tests.helpers.crash import run_to_end, run_until_crash

UTC = dt.UTC
DAY = dt.datetime(2024, 1, 2, tzinfo=UTC)
CRON = "0 0 * * *"
FEEDS = [TaskIdentity(f"feed_{c}", "feeds") for c in ("fr", "de", "es", "it")]
IT = FEEDS[3]
RUN_ID = "scheduled__1"
CLEARED = [("country_report", RUN_ID, ("report__gate", "report"))]
POINTS = [
    "late_arrival.before_sweep",
    "late_arrival.after_claim",
    "late_arrival.after_run_read",
    "late_arrival.after_clear",
]

REPORT = """
import datetime as dt
from airflow_leastaction.catalog.engine import get_engine
from airflow_leastaction.catalog.external import report_completion
from airflow_leastaction.catalog.store import CatalogStore

store = CatalogStore(get_engine({url!r}))
report_completion("feed_it", "feeds", dt.datetime.fromisoformat({slot!r}), cron="0 0 * * *", store=store)
"""
SWEEP = """
import sys
from airflow_leastaction.cli import main

sys.exit(main(["catalog", "rerun-late"]))
"""


@pytest.fixture
def api():
    stand_in = AirflowApiStandIn().start()
    yield stand_in
    stand_in.stop()


@pytest.fixture
def degraded(store, api, monkeypatch, use_catalog):
    """The report ran degraded without the Italian feed, to re-run once it lands; the API is the stand-in,
    and a claim lasts no time, so the writer after a kill takes over the claim it left at once."""
    url = store.engine.url.render_as_string(hide_password=False)
    use_catalog(url)
    for name, value in {**api.connection_env(), "AIRFLOW__LEASTACTION__RERUN_LEASE_SECONDS": "0"}.items():
        monkeypatch.setenv(name, value)
    for feed in FEEDS[:3]:
        store.report_completion(feed, DAY, cron=CRON)
    judged = [Judgement(f.key, f is not IT, f.name) for f in FEEDS]
    outcome = decide_at_deadline(ALL, judged, 3, "2024-01-02T06:00:00+00:00")
    gate = AttemptKey("country_report", "report__gate", RUN_ID, -1, 1)
    store.audit.record_decisions(
        gate, outcome.judgements, downstream_slot=DAY, degraded=True, rerun=RerunOnArrival(("report",))
    )
    consumer = AttemptKey("country_report", "report", RUN_ID, -1, 1)
    meta = TaskMeta(cron=CRON, dag_id="country_report", task_id="report")
    report = airflow_task("country_report", "report")
    store.record_success(report, DAY, meta=meta, run_id=RUN_ID, consumer=consumer, gate_task_ids=["report__gate"])
    return store, url


def state(store) -> str:
    with store.engine.connect() as conn:
        return conn.execute(select(late_arrival.c.state)).scalar_one()


def test_every_step_of_the_rerun_has_a_crash_point():
    import airflow_leastaction.reruns.late_arrival  # noqa: F401 (declares them)

    assert sorted(declared("late_arrival.")) == sorted(POINTS)


@pytest.mark.parametrize("restart", ["the report retried", "the rerun-late sweep"])
@pytest.mark.parametrize("point", POINTS)
@pytest.mark.crash_points
def test_killed_at_any_step_the_rerun_happens_exactly_once(degraded, api, point, restart):
    store, url = degraded
    report = REPORT.format(url=url, slot=DAY.isoformat())
    run_until_crash(report, point, warm=True)
    run_to_end(report if restart == "the report retried" else SWEEP, warm=True)
    assert api.clears == CLEARED
    assert state(store) == "rerun"
    run_to_end(SWEEP, warm=True)  # a later sweep finds nothing more to do
    run_to_end(report, warm=True)
    assert api.clears == CLEARED


def test_a_late_input_delivered_as_an_event_requests_the_rerun(degraded, api):
    store, _ = degraded
    deliver(SlotEvent("success", IT, DAY, dt.datetime.now(UTC), meta=TaskMeta(cron=CRON), run_id="asset-event"))
    assert api.clears == CLEARED
    assert state(store) == "rerun"


def test_a_late_input_replayed_from_the_spool_requests_the_rerun(degraded, api, tmp_path):
    store, _ = degraded
    spool(SlotEvent("success", IT, DAY, dt.datetime.now(UTC), meta=TaskMeta(cron=CRON), run_id="spooled"), tmp_path)
    assert replay(store, tmp_path) == 1
    assert api.clears == CLEARED
    assert state(store) == "rerun"
