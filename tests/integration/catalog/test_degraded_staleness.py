"""A run admitted degraded is stale once what it ran without lands, whether the slot it awaited had a
record at the deadline (a run in flight) or none at all, and no longer once it consumed the slot; the
consumption page, ``stale`` and retention agree, on SQLite and PostgreSQL."""

from __future__ import annotations

import datetime as dt

import pytest

from airflow_leastaction.catalog.audit import AttemptKey, RerunOnArrival
from airflow_leastaction.catalog.retention import prune
from airflow_leastaction.catalog.store import TaskMeta
from airflow_leastaction.gating.engine import ALL, Judgement, decide_at_deadline
from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.refs import airflow_task, deployment_project
from airflow_leastaction.www.queries import ConsumptionFilter
from airflow_leastaction.www.reads import CatalogReads

UTC = dt.UTC
DAY = dt.datetime(2024, 1, 2, tzinfo=UTC)
CRON = "0 0 * * *"
FEEDS = [TaskIdentity(f"feed_{c}", "feeds") for c in ("fr", "de", "es", "it")]
IT = FEEDS[3]
REPORT = airflow_task("country_report", "report")
META = TaskMeta(cron=CRON, dag_id="country_report", task_id="report")


def judge(store, feed: TaskIdentity) -> Judgement:
    """What a gate judges of ``feed`` at ``DAY``: its slot record if it has one, else its task alone."""
    records = [s for s in store.snapshot([(feed, DAY)])[1] if s.slot == DAY]
    if not records and store.get_task(feed) is None:
        return Judgement(feed.key, False, f"{feed.name}: not in the catalog (unknown parent)")
    if not records:
        pk = store.get_task(feed)["id"]
        return Judgement(feed.key, False, f"{feed.name}: no run", upstream_task_pk=pk, upstream_slot=DAY)
    (record,) = records
    return Judgement(
        feed.key,
        record.state == "success",
        f"{feed.name}: {record.state}",
        upstream_task_pk=record.task_pk,
        upstream_run_pk=record.pk,
        upstream_slot=DAY,
        upstream_revision=record.output_revision,
    )


def report_runs(store, run: int) -> None:
    """The report's gate judges the four feeds at its deadline (degraded when one has not landed) and the
    report succeeds, consuming what it was admitted on."""
    judged = [judge(store, feed) for feed in FEEDS]
    outcome = decide_at_deadline(ALL, judged, 3, "2024-01-02T06:00:00+00:00")
    run_id = f"scheduled__{run}"
    gate = AttemptKey("country_report", "report__gate", run_id, -1, 1)
    store.audit.record_decisions(gate, outcome.judgements, downstream_slot=DAY, degraded=outcome.degraded)
    consumer = AttemptKey("country_report", "report", run_id, -1, 1)
    store.record_success(REPORT, DAY, meta=META, run_id=run_id, consumer=consumer, gate_task_ids=["report__gate"])


def stale_pages(store) -> tuple[list, list]:
    """What the consumption page says is stale: its stale-only list, and the flag of each record shown."""
    reads = CatalogReads(store.engine)
    only = reads.consumption(ConsumptionFilter(stale_only=True), None, 50).rows
    flagged = [r for r in reads.consumption(ConsumptionFilter(), None, 50).rows if r["stale"]]
    return [(r["dependency"], r["result"]) for r in only], [(r["dependency"], r["result"]) for r in flagged]


@pytest.fixture(params=["running", "no record", "never reported"])
def degraded(request, store):
    """The report admitted degraded without the Italian feed, which at the deadline was running, had
    never started its slot, or had never reported anything (the catalog had no task of that name)."""
    for feed in FEEDS[:3]:
        store.report_completion(feed, DAY, cron=CRON)
    if request.param == "running":
        store.record_running(IT, DAY, run_id="it-late")
    elif request.param == "no record":
        store.register_task(IT, TaskMeta(cron=CRON))
    report_runs(store, 1)
    return store


class TestDegradedStaleness:
    def test_a_degraded_run_is_not_stale_while_what_it_ran_without_has_not_landed(self, degraded):
        assert degraded.audit.stale_consumers("country_report") == []
        assert stale_pages(degraded) == ([], [])

    def test_the_arrival_of_what_it_ran_without_lists_it_stale_ran_without_it(self, degraded):
        degraded.report_completion(IT, DAY, cron=CRON)
        (stale,) = degraded.audit.stale_consumers("country_report")
        assert (stale["dependency"], stale["missing"], stale["consumed_revision"], stale["current_revision"]) == (
            IT.key,
            True,
            0,
            1,
        )
        assert stale_pages(degraded) == ([(IT.key, "MISSING")], [(IT.key, "MISSING")])

    def test_a_stale_degraded_run_keeps_its_record_through_retention(self, degraded):
        degraded.report_completion(IT, DAY, cron=CRON)
        prune(degraded.engine, dt.datetime.now(UTC))  # everything recorded so far is older
        assert [s["dependency"] for s in degraded.audit.stale_consumers("country_report")] == [IT.key]

    def test_the_run_that_consumed_the_arrived_slot_is_no_longer_stale(self, degraded):
        degraded.report_completion(IT, DAY, cron=CRON)
        report_runs(degraded, 2)
        assert degraded.audit.stale_consumers("country_report") == []
        assert stale_pages(degraded) == ([], [])


class TestArrivalOfWhatHadNoTask:
    """What a degraded run ran without is found by its catalog identity and slot when the decision named
    no upstream task: a feed that had never reported, a task of the same run not recorded yet."""

    def test_a_never_reported_feed_landing_makes_the_rerun_due(self, store):
        for feed in FEEDS[:3]:
            store.report_completion(feed, DAY, cron=CRON)
        admit_degraded(store, [judge(store, feed) for feed in FEEDS])
        assert store.late_arrivals.due(consumer=REPORT_ATTEMPT) == []
        landed = store.report_completion(IT, DAY, cron=CRON)
        (due,) = store.late_arrivals.due(landed.task_pk, DAY)
        assert (due.dag_id, due.run_id, due.to_clear) == ("country_report", "scheduled__1", ["report__gate", "report"])

    def test_a_task_of_the_same_run_finishing_after_the_judgement_lists_it_stale_and_due(self, store):
        for feed in FEEDS[:3]:
            store.report_completion(feed, DAY, cron=CRON)
        # At the deadline the run's own land_it had not finished: no record was selected.
        running = Judgement("task:land_it", False, "land_it (SUCCESS): upstream is running; waiting")
        admit_degraded(store, [judge(store, feed) for feed in FEEDS[:3]] + [running])
        land_it = airflow_task("country_report", "land_it")
        landed = store.record_success(land_it, DAY, run_id="scheduled__1", meta=TaskMeta(cron=CRON))
        (stale,) = store.audit.stale_consumers("country_report")
        assert (stale["task_id"], stale["dependency"], stale["missing"]) == ("report", "task:land_it", True)
        (due,) = store.late_arrivals.due(landed.task_pk, DAY)
        assert due.run_id == "scheduled__1"
        assert [d.id for d in store.late_arrivals.due(consumer=REPORT_ATTEMPT)] == [due.id]

    def test_another_slot_or_another_task_of_the_same_name_elsewhere_is_not_the_arrival(self, store):
        for feed in FEEDS[:3]:
            store.report_completion(feed, DAY, cron=CRON)
        admit_degraded(store, [judge(store, feed) for feed in FEEDS])
        store.report_completion(TaskIdentity(IT.name, "other_project"), DAY, cron=CRON)
        store.report_completion(TaskIdentity(IT.name, IT.project, partition="p1"), DAY, cron=CRON)
        store.report_completion(IT, DAY + dt.timedelta(days=1), cron=CRON)
        assert store.audit.stale_consumers("country_report") == []
        assert store.late_arrivals.due(consumer=REPORT_ATTEMPT) == []


REPORT_ATTEMPT = AttemptKey("country_report", "report", "scheduled__1", -1, 1)


def admit_degraded(store, judged: list[Judgement]) -> None:
    """The report's gate admits it degraded at its deadline, to re-run on late arrival, and it succeeds."""
    outcome = decide_at_deadline(ALL, judged, 3, "2024-01-02T06:00:00+00:00")
    assert outcome.degraded
    gate = AttemptKey("country_report", "report__gate", "scheduled__1", -1, 1)
    rerun = RerunOnArrival(("report",))
    store.audit.record_decisions(
        gate, outcome.judgements, downstream_slot=DAY, degraded=True, rerun=rerun, project=deployment_project()
    )
    store.record_success(
        REPORT, DAY, meta=META, run_id="scheduled__1", consumer=REPORT_ATTEMPT, gate_task_ids=["report__gate"]
    )
