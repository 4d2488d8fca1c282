"""What the pages show through Airflow's mounted app, on SQLite and PostgreSQL: verdicts, scope kept inside
Airflow's tabs, one time format in Airflow's default timezone, partial name filters, links into Airflow."""

from __future__ import annotations

import html
import re

import pendulum
import pytest

from airflow_leastaction.catalog.deadline_warnings import Expected, WarningKey, claim_warning, record_callback
from airflow_leastaction.catalog.store import AttemptKey
from airflow_leastaction.gating.engine import Judgement
from tests.helpers import www_scenario as scenario

P = "/leastaction"
RUN4 = "scheduled__2024-01-04T03:00:00+00:00"


@pytest.fixture
def story(store):
    built = scenario.build(store)
    scenario.build_queue(store.engine)
    return built


def hrefs(page: str) -> list[str]:
    return [html.unescape(h) for h in re.findall(r'href="([^"]+)"', page)]


class TestVerdicts:
    def test_each_attempt_has_one_verdict_over_all_its_decisions(self, client, story):
        gate = AttemptKey("sales_daily", "publish__gate", "scheduled__2024-01-02T03:00:00+00:00", -1, 1)
        story.store.audit.record_decisions(
            gate,
            [
                Judgement("task:a", True, "a (SUCCESS): upstream succeeded"),
                Judgement("task:b", True, "b (SUCCESS): upstream succeeded"),
                Judgement("task:c", False, "c (SUCCESS): upstream failed", final=True),
            ],
            downstream_slot=scenario.day(2),
            at=scenario.day(2, 6),
        )
        items = client.get(P + "/api/attempts", params={"task_id": "publish", "result": "UNSATISFIED"}).json()["items"]
        (attempt,) = items
        assert attempt["task_id"] == "publish__gate" and attempt["gated"] == ["publish"]
        assert (attempt["met"], attempt["total"], len(attempt["decisions"])) == (2, 3, 3)  # the whole attempt
        page = client.get(P + "/decisions", params={"task_id": "publish"}).text
        assert page.count('class="verdict') == 1 and "2 of 3 met" in page

    def test_an_attempts_warnings_before_its_deadline_are_in_the_json_as_on_its_card(self, client, story):
        run = "scheduled__2024-01-02T03:00:00+00:00"
        gate = AttemptKey("sales_daily", "publish__gate", run, -1, 1)
        story.store.audit.record_decisions(
            gate, [Judgement("task:a", False, "a (SUCCESS): not run yet")], downstream_slot=scenario.day(2)
        )
        deadline = scenario.day(2, 6)
        key = WarningKey("sales_daily", run, "publish__gate", -1, deadline)
        expected = Expected(scenario.day(2, 5), scenario.day(2, 7), "load_orders, which waits on orders_raw")
        assert claim_warning(story.store, key, expected, now=scenario.day(2, 4))
        record_callback(story.store, key, "called", now=scenario.day(2, 4))
        (attempt,) = client.get(P + "/api/attempts", params={"task_id": "publish"}).json()["items"]
        (warning,) = attempt["warnings"]
        assert pendulum.parse(warning["deadline"]) == deadline
        assert pendulum.parse(warning["expected_p90"]) == scenario.day(2, 7)
        assert pendulum.parse(warning["warned_at"]) == scenario.day(2, 4)
        assert (warning["state"], warning["callback_outcome"]) == ("warned", "called")
        assert warning["critical_path"] == "load_orders, which waits on orders_raw"
        # an attempt of a run with no warning lists none
        other = AttemptKey("sales_daily", "publish__gate", RUN4, -1, 1)
        story.store.audit.record_decisions(other, [Judgement("task:a", True, "ok")], downstream_slot=scenario.day(4))
        items = client.get(P + "/api/attempts", params={"task_id": "publish", "run_id": RUN4}).json()["items"]
        assert [a["warnings"] for a in items] == [[]]

    def test_the_task_instance_tab_opens_on_the_verdict_of_its_task(self, client, story):
        tab = {"tab": "task", "dag_id": "sales_daily", "task_id": "load_orders", "run_id": RUN4, "map_index": "-1"}
        page = client.get(P + "/decisions", params=tab).text
        assert "Gate verdict of load_orders" in page
        assert page.count('class="verdict') == 1
        assert "expected slot 2024-01-04 (day), completed up to 2024-01-03" in page

    def test_a_task_no_gate_admits_says_so_in_its_tab(self, client, story):
        tab = {"tab": "task", "dag_id": "sales_daily", "task_id": "no_gate_here", "run_id": RUN4, "map_index": "-1"}
        page = client.get(P + "/decisions", params=tab).text
        assert 'data-outcome="ungated"' in page and "no_gate_here has no gate" in page


class TestScope:
    def test_inside_a_dag_tab_every_page_keeps_the_dag(self, client, story):
        page = client.get(P + "/consumption", params={"tab": "dag", "dag_id": "sales_daily"}).text
        nav = re.search(r'<nav class="la-nav".*?</nav>', page, re.S).group(0)
        for href in hrefs(nav):
            assert "tab=dag" in href and "dag_id=sales_daily" in href, href
        assert "Dependency graph" not in nav and "dbt queue" not in nav  # no tab bar that drops the scope
        assert '<input type="hidden" name="dag_id" value="sales_daily">' in page
        assert '<input type="hidden" name="tab" value="dag">' in page

    def test_the_menu_pages_have_the_global_tab_bar(self, client, story):
        page = client.get(P + "/catalog").text
        nav = re.search(r'<nav class="la-nav".*?</nav>', page, re.S).group(0)
        assert [h.rsplit("/", 1)[1] for h in hrefs(nav)] == ["decisions", "consumption", "catalog", "graph", "queue"]


class TestTime:
    def test_a_date_filter_under_utc_is_shown_in_utc(self, client, story):
        page = client.get(P + "/decisions", params={"since": "2024-01-02T05:00:00+05:00"}).text
        assert "From (UTC)" in page
        assert 'name="since" type="text"' in page and 'value="2024-01-02 00:00:00"' in page

    def test_airflows_default_timezone_is_honoured_and_named(self, client, story, monkeypatch):
        import airflow.settings

        monkeypatch.setattr(airflow.settings, "TIMEZONE", pendulum.timezone("Europe/Amsterdam"))
        page = client.get(P + "/decisions", params={"dag_id": "sales_daily", "run_id": RUN4}).text
        assert "times in Europe/Amsterdam" in page and "From (Europe/Amsterdam)" in page
        assert "2024-01-04 05:00:00 CET" in page  # decided at 04:00 UTC
        # A time inside a reason takes the same format; the form reads local time back.
        items = client.get(P + "/api/decisions", params={"since": "2024-01-04 05:00:00"}).json()["items"]
        assert [i["decided_at"][:19] for i in items] == ["2024-01-04T04:00:00"]


class TestNames:
    def test_filters_take_part_of_a_dag_task_or_run_name(self, client, story):
        by_part = client.get(P + "/api/decisions", params={"dag": "SALES", "task": "load", "run": "01-04"}).json()
        assert [(i["task_id"], i["run_id"]) for i in by_part["items"]] == [("load_orders", RUN4)]
        assert client.get(P + "/api/decisions", params={"dag": "nothing"}).json()["items"] == []

    def test_consumers_are_found_by_part_of_the_upstream_name(self, client, story):
        items = client.get(P + "/api/consumption", params={"upstream": "crm_exp"}).json()["items"]
        assert items and {i["upstream_name"] for i in items} == {scenario.CRM.name}
        assert client.get(P + "/api/consumption", params={"upstream": "%"}).json()["items"] == []


class TestLinksIntoAirflow:
    def test_a_verdict_links_its_dag_run_task_instance_and_attempt_log(self, client, story):
        page = client.get(P + "/decisions", params={"dag_id": "sales_daily", "run_id": RUN4}).text
        run = "scheduled__2024-01-04T03%3A00%3A00%2B00%3A00"
        assert "/dags/sales_daily" in hrefs(page)
        assert f"/dags/sales_daily/runs/{run}" in hrefs(page)
        assert f"/dags/sales_daily/runs/{run}/tasks/load_orders" in hrefs(page)
        assert f"/dags/sales_daily/runs/{run}/tasks/load_orders?try_number=1" in hrefs(page)
        assert 'target="_top"' in page

    def test_a_dependency_links_the_upstream_run_it_selected(self, client, story):
        run2 = "scheduled__2024-01-02T03:00:00+00:00"
        page = client.get(
            P + "/decisions", params={"dag_id": "sales_daily", "task_id": "build_report", "run_id": run2}
        ).text
        quoted = "scheduled__2024-01-02T03%3A00%3A00%2B00%3A00"
        assert f"/dags/sales_daily/runs/{quoted}/tasks/load_orders" in hrefs(page)  # the load it consumed

    def test_a_dbt_request_reads_as_the_task_that_asked_and_links_to_it(self, client, store):
        scenario.build_queue(store.engine)
        from airflow_leastaction.dbt.planner import PlannedModel
        from airflow_leastaction.dbt.policy import BatchKey
        from airflow_leastaction.dbt.queue_store import QueueStore

        model = PlannedModel("model.shop.x", "x", "shop.x", "table", "standard")
        asked = "dbt_ingest|manual__2024-01-05T00:00:00+00:00|enqueue_models|-1"
        QueueStore(store.engine).enqueue(
            BatchKey("analytics"), [model], "x", requested_by=asked, now=scenario.day(5, 11)
        )
        page = client.get(P + "/queue").text
        assert "/dags/dbt_ingest/runs/manual__2024-01-05T00%3A00%3A00%2B00%3A00/tasks/enqueue_models" in hrefs(page)
        assert asked not in page
        # The chart's legend uses the tones its bars use, and it has a y-axis.
        bars = set(re.findall(r'class="bar (tone-\w+)"', page))
        legend = set(re.findall(r'class="swatch (tone-\w+)"', page))
        assert bars and bars <= legend
        assert 'class="axis"' in page and "requests per hour, hours in UTC" in page
