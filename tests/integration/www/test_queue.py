"""The dbt queue page: active rows with batch, owner and heartbeat; request outcomes over time."""

from __future__ import annotations

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
