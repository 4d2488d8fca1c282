"""What an operator sees: decisions, consumption, catalog and graph, through Airflow's mounted app."""

from __future__ import annotations

import html
import json
import re
from urllib.parse import parse_qsl, urlsplit

import pytest

from airflow_leastaction.catalog.store import AttemptKey, TaskMeta
from airflow_leastaction.cli import main
from airflow_leastaction.gating.engine import Judgement
from airflow_leastaction.identity import TaskIdentity
from tests.helpers import www_scenario as scenario
from tests.helpers.www_scenario import CRM, HOSTILE, LOAD, REPORT, ROLLUP

P = "/leastaction"


def decision_links(page: str) -> list[dict]:
    """The query of every link of ``page`` to the decisions page, as a dict."""
    hrefs = (html.unescape(h) for h in re.findall(r'href="([^"]+)"', page))
    return [dict(parse_qsl(urlsplit(h).query)) for h in hrefs if urlsplit(h).path.endswith("/decisions")]


@pytest.fixture
def story(store):
    return scenario.build(store)


class TestDecisions:
    def test_decisions_are_listed_newest_first_with_their_reason(self, client, story):
        items = client.get(P + "/api/decisions").json()["items"]
        times = [i["decided_at"] for i in items]
        assert times == sorted(times, reverse=True)
        assert items[0]["result"] == "UNSATISFIED"
        assert items[0]["reason"] == (
            "crm_export: expected slot 2024-01-04 (day), completed up to 2024-01-03; judged by its slot records"
        )

    def test_why_is_this_task_not_running_is_answered_on_the_page(self, client, story):
        page = client.get(P + "/decisions", params={"task_id": "load_orders", "result": "UNSATISFIED"}).text
        assert "expected slot 2024-01-04 (day), completed up to 2024-01-03" in page
        assert "SATISFIED</span>" not in page.replace("UNSATISFIED</span>", "")

    def test_filters_by_dag_task_run_and_time(self, client, story):
        run = "scheduled__2024-01-02T03:00:00+00:00"
        items = client.get(
            P + "/api/decisions", params={"dag_id": "sales_daily", "task_id": "build_report", "run_id": run}
        ).json()["items"]
        assert [(i["task_id"], i["run_id"]) for i in items] == [("build_report", run)]
        window = client.get(P + "/api/decisions", params={"since": "2024-01-02T00:00", "until": "2024-01-03"}).json()
        assert {i["run_id"][:21] for i in window["items"]} == {"scheduled__2024-01-02"}

    def test_pages_follow_the_cursor_without_repeating_or_skipping(self, client, story):
        seen, cursor = [], None
        while True:
            body = client.get(
                P + "/api/decisions", params={"limit": 2, **({"cursor": cursor} if cursor else {})}
            ).json()
            seen += [i["id"] for i in body["items"]]
            cursor = body["next_cursor"]
            if cursor is None:
                break
        everything = [i["id"] for i in client.get(P + "/api/decisions", params={"limit": 500}).json()["items"]]
        assert seen == everything and len(seen) == 7

    def test_a_task_instance_view_shows_that_attempts_decisions(self, client, story):
        run = "scheduled__2024-01-04T03:00:00+00:00"
        page = client.get(
            P + "/decisions",
            params={"dag_id": "sales_daily", "task_id": "load_orders", "run_id": run, "map_index": "-1"},
        )
        assert page.status_code == 200
        assert page.text.count("<tr>") == 2  # header + the one decision of that attempt
        assert "completed up to 2024-01-03" in page.text

    def test_a_gated_tasks_own_tab_shows_its_gate_decisions_and_links_gate_and_task(self, client, story):
        run = "scheduled__2024-01-02T03:00:00+00:00"
        gate = AttemptKey("sales_daily", "publish__gate", run, -1, 1)
        story.store.audit.record_decisions(
            gate,
            [
                Judgement("task:build_report", True, "build_report (SUCCESS): upstream succeeded"),
                Judgement(
                    "task:<b>load</b>", False, "<b>load</b> (FAILURE): upstream succeeded; never met", final=True
                ),
            ],
            downstream_slot=scenario.day(2),
            at=scenario.day(2, 6),
        )
        # The task-instance tab of the gated task, as Airflow fills in its link.
        tab = {"dag_id": "sales_daily", "task_id": "publish", "run_id": run, "map_index": "{MAP_INDEX}"}
        items = client.get(P + "/api/decisions", params=tab).json()["items"]
        assert sorted((i["task_id"], i["dependency"], i["result"]) for i in items) == [
            ("publish__gate", "task:<b>load</b>", "UNSATISFIED"),
            ("publish__gate", "task:build_report", "SATISFIED"),
        ]
        page = client.get(P + "/decisions", params=tab).text
        assert page.count("<tr>") == 3  # header + the gate's two decisions
        assert "&lt;b&gt;load&lt;/b&gt; (FAILURE): upstream succeeded; never met" in page and "<b>load</b>" not in page
        assert "only the gate publish__gate" in page
        expected = {"dag_id": "sales_daily", "run_id": run, "map_index": "{MAP_INDEX}"}
        assert {**expected, "task_id": "publish__gate"} in decision_links(page)
        assert 'class="gated-task"' in page  # each gate row links to the task it gates
        # The gate's own view links back to the task it admits, within the same DAG and run.
        back = client.get(P + "/decisions", params={**tab, "task_id": "publish__gate"}).text
        assert "is the run-condition gate of" in back
        assert {**expected, "task_id": "publish"} in decision_links(back)
        # Another task's filter does not pick up this gate, and its page does not speak of one.
        other = client.get(P + "/api/decisions", params={**tab, "task_id": "build_report"}).json()["items"]
        assert all(i["task_id"] == "build_report" for i in other) and other
        assert "only the gate" not in client.get(P + "/decisions", params={**tab, "task_id": "build_report"}).text

    def test_a_cursor_this_ui_did_not_produce_is_a_clear_400(self, client, story):
        response = client.get(P + "/api/decisions", params={"cursor": "yesterday"})
        assert response.status_code == 400
        assert "cursor" in response.json()["detail"]

    def test_an_unknown_result_is_rejected_naming_the_filter(self, client):
        response = client.get(P + "/api/decisions", params={"result": "MAYBE"})
        assert response.status_code == 422
        assert "result" in response.text


class TestConsumption:
    def test_consumers_of_a_repaired_upstream_are_stale(self, client, story):
        items = client.get(P + "/api/consumption", params={"upstream_task_pk": story.pks[CRM]}).json()["items"]
        stale = {(i["run_id"][:21], i["stale"]) for i in items}
        assert stale == {
            ("scheduled__2024-01-01", False),
            ("scheduled__2024-01-02", True),
            ("scheduled__2024-01-03", False),
        }
        repaired = next(i for i in items if i["stale"])
        assert (repaired["upstream_revision"], repaired["current_revision"]) == (1, 2)

    def test_stale_only_lists_just_the_stale_consumers(self, client, story):
        items = client.get(P + "/api/consumption", params={"stale": "true"}).json()["items"]
        assert [(i["task_id"], i["upstream_name"]) for i in items] == [("load_orders", "crm_export")]

    def test_cli_and_ui_list_the_same_stale_consumers_after_re_runs(self, client, story, capsys):
        # load_orders of the 2nd re-runs after the repair of crm_export: it consumes revision 2 and is no
        # longer stale, but publishes revision 2 of its own slot, so build_report of the 2nd now is.
        # load_orders of the 1st re-runs without a repair upstream: it consumes revision 1 again (fresh)
        # and publishes revision 2 of its slot, so build_report of the 1st is stale as well.
        # crm_export of the 3rd is repaired too, and nobody re-ran: load_orders of the 3rd is stale.
        story.store.report_completion(CRM, scenario.day(3, 2), cron="0 2 * * *", rows_written=9, run_id="crm-3-repair")
        scenario.rerun(story.store, LOAD, [CRM], 2, attempt=2)
        scenario.rerun(story.store, LOAD, [CRM], 1, attempt=2)
        assert main(["stale", "--json"]) == 0
        cli = {
            (r["dag_id"], r["task_id"], r["downstream_slot"][:10], r["dependency"])
            for r in map(json.loads, capsys.readouterr().out.splitlines())
        }
        ui = {
            (i["dag_id"], i["task_id"], i["downstream_slot"][:10], i["dependency"])
            for i in client.get(P + "/api/consumption", params={"stale": "true"}).json()["items"]
        }
        assert (
            cli
            == ui
            == {
                ("sales_daily", "load_orders", "2024-01-03", CRM.key),
                ("sales_daily", "build_report", "2024-01-01", LOAD.key),
                ("sales_daily", "build_report", "2024-01-02", LOAD.key),
            }
        )
        flagged = {
            (i["task_id"], i["downstream_slot"][:10], i["upstream_revision"], i["stale"])
            for i in client.get(
                P + "/api/consumption", params={"dag_id": "sales_daily", "task_id": "load_orders"}
            ).json()["items"]
        }
        assert ("load_orders", "2024-01-02", 1, False) in flagged  # the row of the first run, re-run since
        assert ("load_orders", "2024-01-02", 2, False) in flagged

    def test_by_downstream_shows_revisions_and_highlights_stale_rows(self, client, story):
        page = client.get(P + "/consumption", params={"dag_id": "sales_daily", "task_id": "load_orders"}).text
        assert page.count('class="stale-row"') == 1
        assert "crm_export" in page


class TestCatalog:
    def test_tasks_show_cron_granularity_watermark_state_and_recent_slots(self, client, story):
        items = {i["name"]: i for i in client.get(P + "/api/catalog").json()["items"]}
        load = items[LOAD.name]
        assert (load["cron"], load["granularity"], load["state"]) == ("0 3 * * *", "day", "running")
        assert load["watermark"].startswith("2024-01-03T03:00:00")
        slots = [(s["slot"][:10], s["state"], s["output_revision"]) for s in load["recent_slots"]]
        assert slots == [("2024-01-03", "running", 1), ("2024-01-02", "success", 1), ("2024-01-01", "success", 1)]
        assert items[CRM.name]["source"] == "external"
        assert items[ROLLUP.name]["granularity"] == "week"

    def test_search_and_source_filters(self, client, story):
        names = [i["name"] for i in client.get(P + "/api/catalog", params={"source": "external"}).json()["items"]]
        assert names == [CRM.name]
        found = client.get(P + "/api/catalog", params={"q": "ROLLUP"}).json()["items"]
        assert [i["name"] for i in found] == [ROLLUP.name]

    def test_the_source_filter_selects_dbt_models(self, client, story, store):
        model = TaskMeta(cron=None, source="dbt")
        store.record_success(TaskIdentity("stg_orders", "shop"), scenario.day(1), meta=model, run_id="dbt-build:1")
        found = client.get(P + "/api/catalog", params={"source": "dbt"})
        assert found.status_code == 200 and [i["name"] for i in found.json()["items"]] == ["stg_orders"]
        page = client.get(P + "/catalog", params={"source": "dbt"})
        assert page.status_code == 200 and '<option value="dbt" selected>' in page.text

    def test_a_task_named_like_a_script_renders_as_text(self, client, story):
        page = client.get(P + "/catalog").text
        assert "<script>alert(1)</script>" not in page
        assert html.escape(HOSTILE.name) in page

    @pytest.mark.parametrize("attempt", ["x' OR '1'='1", "%", "%_%", "'; DROP TABLE la_task; --"])
    def test_an_injection_attempt_in_a_filter_is_harmless(self, client, story, attempt):
        assert client.get(P + "/api/catalog", params={"q": attempt}).json()["items"] == []
        assert client.get(P + "/api/decisions", params={"dag_id": attempt}).json()["items"] == []
        assert len(client.get(P + "/api/catalog").json()["items"]) == 5


class TestGraph:
    def test_ancestors_and_descendants_with_edges_judged_for_the_interval(self, client, story):
        body = client.get(
            P + "/api/graph", params={"task_pk": story.pks[REPORT], "interval": "2024-01-02T03:00"}
        ).json()
        depth = {n["label"]: n["depth"] for n in body["nodes"]}
        assert depth == {
            "sales/sales_daily.build_report": 0,
            "sales/sales_daily.load_orders": -1,
            "sales/crm_export": -2,
            "finance/finance_weekly.rollup": 1,
        }
        edges = {(e["parent"], e["child"]): e["satisfied"] for e in body["edges"]}
        assert edges == {
            ("sales/crm_export", "sales/sales_daily.load_orders"): True,
            ("sales/sales_daily.load_orders", "sales/sales_daily.build_report"): True,
            ("sales/sales_daily.build_report", "finance/finance_weekly.rollup"): True,
        }

    def test_an_edge_whose_parent_is_being_rerun_is_not_satisfied(self, client, story):
        body = client.get(
            P + "/api/graph", params={"task_pk": story.pks[REPORT], "interval": "2024-01-03T03:00"}
        ).json()
        edge = next(e for e in body["edges"] if e["child"] == "sales/sales_daily.build_report")
        assert not edge["satisfied"] and "being re-run" in edge["reason"]

    def test_a_parent_missing_from_the_catalog_is_drawn_and_unsatisfied(self, client, story):
        body = client.get(P + "/api/graph", params={"task_pk": story.pks[ROLLUP]}).json()
        missing = next(n for n in body["nodes"] if n["identity"]["name"] == "ledger_close")
        assert missing["in_catalog"] is False and missing["state"] == "unknown"
        page = client.get(P + "/graph", params={"task_pk": story.pks[ROLLUP]}).text
        assert "not in the catalog" in page and "<svg" in page

    def test_the_graph_page_finds_tasks_by_name_and_escapes_them(self, client, story):
        page = client.get(P + "/graph", params={"q": "script"}).text
        assert html.escape(HOSTILE.name) in page and "<script>alert" not in page

    def test_an_unknown_task_is_a_404(self, client, story):
        assert client.get(P + "/api/graph", params={"task_pk": 999999}).status_code == 404


class TestDagView:
    def test_a_dag_view_shows_its_catalog_parents_and_children(self, client, story):
        page = client.get(P + "/dag", params={"dag_id": "sales_daily", "interval": "2024-01-02T03:00"}).text
        assert "sales/crm_export" in page  # parent of load_orders, outside the DAG
        assert "finance/finance_weekly.rollup" in page  # child of build_report, in another DAG
        assert html.escape("sales/" + HOSTILE.name) in page

    def test_a_dag_without_catalog_tasks_says_so(self, client, story):
        page = client.get(P + "/dag", params={"dag_id": "nothing_here"}).text
        assert "Neither Airflow nor the catalog knows a task of this DAG yet" in page
