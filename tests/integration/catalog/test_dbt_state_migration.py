"""Migration 0008 on SQLite and PostgreSQL: queue rows written before demand keys keep merging and claiming,
and every pass keeps its history; downgrading keeps one active row per model."""

from __future__ import annotations

import datetime as dt

import sqlalchemy as sa

from airflow_leastaction.catalog.migrate import downgrade, upgrade
from airflow_leastaction.dbt.planner import PlannedModel
from airflow_leastaction.dbt.queue_store import QueueStore
from airflow_leastaction.dbt.request_key import BatchKey, request_key
from tests.helpers.dbt_queue import NO_WAIT

BEFORE = "0012_ui_reads"
NOW = dt.datetime(2026, 11, 30, tzinfo=dt.UTC)
OLD_QUEUE = sa.table(
    "la_dbt_queue",
    *(sa.column(c) for c in ("environment", "unique_id", "fqn", "materialized", "action", "mode", "exclusions")),
    *(sa.column(c) for c in ("tier", "status", "selectors", "request_count", "requested_while_running")),
    *(sa.column(c) for c in ("first_requested_at", "last_requested_at", "attempts", "outcome", "finished_at")),
)


def old_row(name: str, status: str, action: str = "build", exclusions: str = "view") -> dict:
    return {
        "environment": "prod", "unique_id": f"model.shop.{name}", "fqn": f"shop.{name}", "materialized": "table",
        "action": action, "mode": "default", "exclusions": exclusions, "tier": "standard", "status": status,
        "selectors": "a", "request_count": 1, "requested_while_running": False, "first_requested_at": NOW,
        "last_requested_at": NOW, "attempts": 0, "outcome": "success" if status == "done" else None,
        "finished_at": NOW if status == "done" else None,
    }  # fmt: skip


def model(name: str) -> PlannedModel:
    return PlannedModel(f"model.shop.{name}", name, f"shop.{name}", "table", "standard")


class TestDbtStateMigration:
    def test_rows_of_an_earlier_release_get_the_key_they_were_requested_under(self, catalog_before):
        engine = catalog_before
        with engine.begin() as conn:
            conn.execute(sa.insert(OLD_QUEUE), [old_row("orders", "pending"), old_row("orders", "done"),
                                                old_row("refunds", "pending", "run", "")])  # fmt: skip
        upgrade(engine)
        queue = QueueStore(engine)
        # A new request under the same key merges into the pending row written before the upgrade.
        assert queue.enqueue(BatchKey("prod"), [model("orders")], "a").by_outcome()["already_pending"] == [
            "model.shop.orders"
        ]
        merged = queue.enqueue(request_key("prod", command="run", exclusions=""), [model("refunds")], "b")
        assert merged.by_outcome()["already_pending"] == ["model.shop.refunds"]
        assert queue.acquire_lease("prod", "w1", dt.timedelta(minutes=5))
        batch = queue.claim("prod", "w1", NO_WAIT)
        assert batch is not None and len(batch.rows) == 1
        history = queue.history("prod")
        assert [(r["unique_id"], r["decision"], r["build_ref"]) for r in history] == [("model.shop.orders", None, None)]

    def test_downgrade_keeps_one_active_row_per_model_and_upgrade_again_works(self, catalog_before):
        engine = catalog_before
        upgrade(engine)
        queue = QueueStore(engine)
        queue.enqueue(BatchKey("prod"), [model("orders")], "a")
        queue.enqueue(request_key("prod", full_refresh=True), [model("orders")], "a")
        assert len(queue.active_rows("prod")) == 2
        downgrade(engine, BEFORE)
        with engine.connect() as conn:
            active = conn.execute(sa.select(sa.func.count()).select_from(OLD_QUEUE)).scalar()
        assert active == 1
        upgrade(engine)
        assert len(QueueStore(engine).active_rows("prod")) == 1
