"""Degraded runs on the decisions, consumption and DAG pages, and the plan page reached from a task's
catalog entry, through Airflow's mounted app on real catalogs."""

from __future__ import annotations

import datetime as dt
import html
import re

import pytest

from airflow_leastaction.catalog.audit import AttemptKey, RerunOnArrival
from airflow_leastaction.catalog.store import TaskMeta
from airflow_leastaction.gating.engine import ALL, Judgement, decide_at_deadline
from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.refs import airflow_task

P = "/leastaction"
UTC = dt.UTC
DAY = dt.datetime(2024, 1, 2, tzinfo=UTC)
FEEDS = [TaskIdentity(f"feed_{c}", "feeds") for c in ("fr", "de", "es", "it")]
REPORT = airflow_task("country_report", "report")


@pytest.fixture
def degraded(store):
    """A report admitted degraded at its deadline without the Italian feed, and its success."""
    for feed in FEEDS[:3]:
        store.report_completion(feed, DAY, cron="0 0 * * *")
    it = store.record_running(FEEDS[3], DAY, run_id="it-late")
    judged = []
    for feed in FEEDS:
        (record,) = [s for s in store.snapshot([(feed, DAY)])[1] if s.slot == DAY]
        done = record.state == "success"
        judged.append(
            Judgement(
                feed.key,
                done,
                f"{feed.name}: {record.state}",
                upstream_task_pk=record.task_pk,
                upstream_run_pk=record.pk,
                upstream_slot=DAY,
                upstream_revision=record.output_revision,
            )
        )
    outcome = decide_at_deadline(ALL, judged, 3, "2024-01-02T06:00:00+00:00")
    gate = AttemptKey("country_report", "report__gate", "scheduled__2", -1, 1)
    store.audit.record_decisions(
        gate, outcome.judgements, downstream_slot=DAY, degraded=True, rerun=RerunOnArrival(("report",))
    )
    meta = TaskMeta(cron="0 0 * * *", dag_id="country_report", task_id="report")
    consumer = AttemptKey("country_report", "report", "scheduled__2", -1, 1)
    store.record_success(
        REPORT, DAY, meta=meta, run_id="scheduled__2", consumer=consumer, gate_task_ids=["report__gate"]
    )
    return it


def text(response) -> str:
    return html.unescape(re.sub(r"<[^>]+>", " ", response.text))


class TestDegradedRuns:
    def test_the_decisions_page_marks_what_the_run_ran_without(self, client, degraded):
        page = client.get(f"{P}/decisions", params={"dag_id": "country_report", "result": "MISSING"})
        assert page.status_code == 200
        shown = " ".join(text(page).split())
        assert "admitted degraded at its deadline: 3 of 4 met" in shown
        assert shown.count("admitted degraded without it") == 1
        marked = shown[: shown.index("admitted degraded without it")]
        assert marked.rpartition("catalog:feeds/")[2].startswith("feed_it")

    def test_the_verdict_of_a_degraded_attempt_is_admitted_degraded(self, client, degraded):
        (attempt,) = client.get(f"{P}/api/attempts", params={"dag_id": "country_report"}).json()["items"]
        assert (attempt["outcome"], attempt["met"], attempt["total"]) == ("degraded", 3, 4)
        assert "feed_it" in attempt["why"] and "feed_fr" not in attempt["why"]

    def test_the_consumption_page_marks_the_slot_it_ran_without(self, client, degraded):
        items = client.get(f"{P}/api/consumption", params={"dag_id": "country_report"}).json()["items"]
        assert sorted((i["upstream_name"], i["result"], i["upstream_revision"]) for i in items) == [
            ("feed_de", "SATISFIED", 1),
            ("feed_es", "SATISFIED", 1),
            ("feed_fr", "SATISFIED", 1),
            ("feed_it", "MISSING", 0),
        ]
        page = client.get(f"{P}/consumption", params={"dag_id": "country_report"})
        assert text(page).count("ran without") == 1

    def test_the_dag_page_lists_the_degraded_run_and_its_rerun(self, client, degraded):
        page = text(client.get(f"{P}/dag", params={"dag_id": "country_report"}))
        assert "Degraded runs" in page
        row = page[page.index("scheduled__2") :]
        assert "report__gate" in row and "catalog:feeds/feed_it" in row and "waiting" in row


class TestPlanPage:
    def test_a_catalog_entry_links_to_its_plan(self, client, degraded):
        catalog = client.get(f"{P}/catalog", params={"q": "feed_fr"}).text
        (link,) = re.findall(r'href="([^"]*/plan\?[^"]+)"', catalog)
        page = client.get(html.unescape(link))
        assert page.status_code == 200
        shown = " ".join(text(page).split())
        assert "2 task runs in 2 waves" in shown
        assert "airflow/country_report.report" in shown and "DAG country_report" in shown

    def test_the_plan_as_json_is_the_commands(self, client, degraded):
        found = client.get(
            f"{P}/api/plan", params={"task": "feeds/feed_fr", "from": DAY.isoformat(), "to": DAY.isoformat()}
        ).json()
        assert (found["task_runs"], found["stale_runs"], found["withheld_runs"]) == (2, 1, 0)
        assert [[t["task"] for t in wave] for wave in found["waves"]] == [
            ["feeds/feed_fr"],
            ["airflow/country_report.report"],
        ]

    @pytest.mark.parametrize(
        "params, words",
        [
            (
                {"task": "feeds/nope", "from": "2024-01-01T00:00:00Z", "to": "2024-01-02T00:00:00Z"},
                "no task feeds/nope",
            ),
            ({"task": "feeds/feed_fr", "from": "2024-01-03T00:00:00Z", "to": "2024-01-02T00:00:00Z"}, "empty range"),
            ({"task": "feeds/feed_fr", "from": "yesterday", "to": "2024-01-02T00:00:00Z"}, "is not an ISO-8601"),
        ],
    )
    def test_bad_input_is_a_400_naming_it(self, client, degraded, params, words):
        answer = client.get(f"{P}/api/plan", params=params)
        assert answer.status_code == 400 and words in answer.json()["detail"]
        page = client.get(f"{P}/plan", params=params)
        assert page.status_code == 400 and words in text(page)

    def test_a_slot_at_the_calendars_end_is_a_400_not_a_crash(self, client, degraded, store):
        # Written as the catalog took such reports before it checked their range, with a child outside
        # Airflow whose slots the planner looks for a year on.
        end = dt.datetime(9999, 12, 31, tzinfo=UTC)
        store.report_completion(FEEDS[0], end, cron="0 0 * * *")
        child = TaskIdentity("feed_mirror", "feeds")
        store.declare_parents(child, TaskMeta(cron="0 0 * * *", source="external"), [FEEDS[0]])
        store.report_completion(child, end, cron="0 0 * * *")
        params = {"task": "feeds/feed_fr", "from": "9999-12-30T00:00:00Z", "to": "9999-12-31T00:00:00Z"}
        for path in ("/api/plan", "/plan"):
            answer = client.get(f"{P}{path}", params=params)
            assert answer.status_code == 400 and "is out of range: a slot is from 1000-01-01" in text(answer), path

    def test_a_name_that_is_markup_is_shown_as_text(self, client, degraded):
        page = client.get(f"{P}/plan", params={"task": "<script>x</script>/y", "from": "a", "to": "b"})
        assert page.status_code == 400 and "<script>x" not in page.text


@pytest.fixture
def report_dag_unreadable(airflow_api, monkeypatch):
    """The viewer may read every DAG but country_report, as an auth manager with per-DAG permissions says."""
    from airflow.api_fastapi.app import get_auth_manager

    def allowed(*, dag_ids, user, method="GET", team_name=None):
        return set(dag_ids) - {"country_report"}

    monkeypatch.setattr(get_auth_manager(), "filter_authorized_dag_ids", allowed)


class TestPlanOfAReaderOfSomeDags:
    def test_a_shown_task_does_not_name_what_it_consumes_from_a_dag_the_reader_may_not_read(
        self, client, degraded, store, report_dag_unreadable
    ):
        mirror = TaskIdentity("report_mirror", "feeds")
        store.declare_parents(mirror, TaskMeta(cron="0 0 * * *", source="external"), [REPORT])
        store.report_completion(mirror, DAY, cron="0 0 * * *")
        params = {"task": "feeds/feed_fr", "from": DAY.isoformat(), "to": DAY.isoformat()}
        found = client.get(f"{P}/api/plan", params=params)
        assert found.status_code == 200 and str(REPORT) not in found.text and "country_report" not in found.text
        data = found.json()
        assert [[(t["task"], t["consumes"]) for t in wave] for wave in data["waves"]] == [
            [("feeds/feed_fr", [])],
            [("feeds/report_mirror", [])],
        ]
        assert data["withheld_runs"] == 1
        page = client.get(f"{P}/plan", params=params)
        assert page.status_code == 200 and "country_report" not in page.text

    def test_a_task_of_a_dag_the_reader_may_not_read_is_answered_as_a_made_up_one(
        self, client, degraded, report_dag_unreadable
    ):
        def asked(name: str, path: str):
            answer = client.get(f"{P}{path}", params={"task": name, "from": DAY.isoformat(), "to": DAY.isoformat()})
            return answer.status_code, text(answer).replace(name, "NAME")

        for path in ("/api/plan", "/plan"):
            real = asked(str(REPORT), path)
            assert real == asked("airflow/country_report.made_up", path) and real[0] == 400, path
