"""The dbt queue page: active rows with batch, owner and heartbeat; request outcomes over time."""

from __future__ import annotations

import datetime as dt
import html

import pytest

from airflow_leastaction.catalog.engine import get_engine
from tests.helpers.www_scenario import build_queue

P = "/leastaction"


@pytest.fixture
def batch_id(catalog_url):
    return build_queue(get_engine(catalog_url))


class TestQueue:
    def test_active_rows_show_state_batch_owner_and_heartbeat(self, client, batch_id):
        body = client.get(P + "/api/queue").json()
        assert body["environment"] == "analytics"
        rows = {r["unique_id"]: r for r in body["active"]}
        assert {u: r["status"] for u, r in rows.items()} == {
            "model.shop.orders": "running",
            "model.shop.customers": "running",
            "model.shop.revenue": "running",
            "model.shop.<b>margins</b>": "pending",
        }
        running = rows["model.shop.orders"]
        assert (running["batch_id"], running["owner"]) == (batch_id, "worker-1")
        assert running["heartbeat_at"].startswith("2024-01-05T08:00:00")
        assert running["requested_while_running"] is True
        assert rows["model.shop.revenue"]["requested_while_running"] is False

    def test_request_outcomes_are_counted_per_hour(self, client, batch_id):
        hours = {h["hour"][:13]: h for h in client.get(P + "/api/queue").json()["outcomes"]}
        assert (hours["2024-01-05T06"]["new_pending"], hours["2024-01-05T06"]["already_running"]) == (3, 0)
        assert (hours["2024-01-05T09"]["already_running"], hours["2024-01-05T09"]["new_pending"]) == (2, 1)
        assert hours["2024-01-05T10"]["already_pending"] == 1
        assert sum(h["new_pending"] + h["already_pending"] + h["already_running"] for h in hours.values()) == 7

    def test_the_page_shows_outcomes_and_escapes_model_names(self, client, batch_id):
        page = client.get(P + "/queue").text
        assert "already_running" in page and "worker-1" in page and batch_id in page
        assert "<b>margins</b>" not in page and html.escape("<b>margins</b>") in page

    def test_an_unknown_environment_shows_nothing_active(self, client, batch_id):
        body = client.get(P + "/api/queue", params={"environment": "x' OR 1=1 --"}).json()
        assert body["active"] == [] and body["events"] == [] and body["environments"] == ["analytics"]

    def test_an_empty_queue_says_so(self, client):
        assert "No dbt environment has queued anything yet" in client.get(P + "/queue").text


def passes_today(engine) -> str:
    """A batch that reused one model and built another today; the built one's reason carries markup."""
    from airflow_leastaction.catalog.store import utcnow
    from airflow_leastaction.dbt.planner import PlannedModel
    from airflow_leastaction.dbt.policy import BatchKey, ModelOutcome, TierPolicy
    from airflow_leastaction.dbt.queue_settle import PassRecord
    from airflow_leastaction.dbt.queue_store import QueueStore

    queue = QueueStore(engine)
    models = [PlannedModel(f"model.shop.{n}", n, f"shop.{n}", "table", "standard") for n in ("orders", "revenue")]
    queue.enqueue(BatchKey("analytics"), models, "tag:daily")
    queue.acquire_lease("analytics", "worker-1", dt.timedelta(minutes=5))
    batch = queue.claim("analytics", "worker-1", TierPolicy())
    orders, revenue = (r.id for r in batch.rows)
    queue.settle_reused(
        batch, {"model.shop.orders": PassRecord("reused", "inputs unchanged since build 7", "c", {}, 7)}
    )
    moved = PassRecord("built", "input moved: source.shop.raw.<i>orders</i> (r1 -> r2)", "c", {}, revenue)
    queue.finish(
        batch, {"model.shop.revenue": ModelOutcome.SUCCESS}, status="success", invocations=1, exit_code=0,
        message=None, passes={"model.shop.revenue": moved}, reused=1, now=utcnow(),
    )  # fmt: skip
    return batch.id


class TestBuiltAndReused:
    def test_each_pass_says_whether_it_was_built_or_reused_and_why_and_the_builds_saved_today(
        self, client, catalog_url
    ):
        batch_id = passes_today(get_engine(catalog_url))
        body = client.get(P + "/api/queue").json()
        assert body["today"] == {"built": 1, "reused": 1}
        passes = {p["unique_id"]: p for p in body["passes"]}
        assert (passes["model.shop.orders"]["decision"], passes["model.shop.orders"]["build_ref"]) == ("reused", 7)
        assert passes["model.shop.revenue"]["reason"].startswith("input moved: source.shop.raw.")
        (batch,) = body["batches"]
        assert (batch["id"], batch["built_count"], batch["reused_count"]) == (batch_id, 1, 1)
        page = client.get(P + "/queue").text
        assert "1 build(s) saved" in page and "inputs unchanged since build 7" in page
        assert "<i>orders</i>" not in page and html.escape("<i>orders</i>") in page


class TestDbtModelsInTheLineage:
    def test_the_graph_draws_a_dbt_model_among_the_catalogs_tasks_with_the_inputs_it_declares(
        self, client, catalog_url
    ):
        from airflow_leastaction.catalog.store import CatalogStore, TaskMeta
        from airflow_leastaction.identity import TaskIdentity

        store = CatalogStore(get_engine(catalog_url))
        loader, staging = TaskIdentity("load_orders", "ingest"), TaskIdentity("stg_orders", "shop")
        store.report_completion(loader, dt.datetime(2024, 1, 5, tzinfo=dt.UTC))
        dbt = TaskMeta(source="dbt")
        store.declare_parents(staging, dbt, [loader])
        pk = store.declare_parents(TaskIdentity("revenue", "shop"), dbt, [staging])
        body = client.get(P + "/api/graph", params={"task_pk": pk}).json()
        nodes = {n["label"]: (n["depth"], n["source"]) for n in body["nodes"]}
        assert nodes == {
            "shop/revenue": (0, "dbt"),
            "shop/stg_orders": (-1, "dbt"),
            "ingest/load_orders": (-2, "external"),
        }
        assert "dbt model" in client.get(P + "/graph", params={"task_pk": pk}).text
