"""Migration 0013 on SQLite and PostgreSQL: the decisions of one run get their (DAG, run, time, id) index,
the decisions already recorded stay as they were, and downgrading drops the index alone."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import func, insert, inspect, select

from airflow_leastaction.catalog.migrate import downgrade, upgrade
from airflow_leastaction.catalog.schema import gate_decision

BEFORE = "0010_degraded_runs"
INDEX = "ix_la_gate_decision_run_time"
AT = dt.datetime(2026, 12, 1, 3, tzinfo=dt.UTC)


def indexes(engine) -> dict[str, list[str]]:
    return {i["name"]: i["column_names"] for i in inspect(engine).get_indexes("la_gate_decision")}


class TestMigration0013:
    def test_upgrading_adds_the_run_index_and_keeps_the_decisions(self, catalog_before):
        with catalog_before.begin() as conn:
            for n in range(3):
                conn.execute(
                    insert(gate_decision).values(
                        dag_id="orders",
                        task_id="report__gate",
                        run_id=f"r{n}",
                        map_index=-1,
                        attempt=1,
                        dependency="task:up",
                        result="SATISFIED",
                        reason="seeded",
                        decided_at=AT,
                    )  # fmt: skip
                )
        assert INDEX not in indexes(catalog_before)
        upgrade(catalog_before, "0013_run_decisions")
        assert indexes(catalog_before)[INDEX] == ["dag_id", "run_id", "decided_at", "id"]
        with catalog_before.connect() as conn:
            assert conn.execute(select(func.count()).select_from(gate_decision)).scalar() == 3

    def test_downgrading_drops_the_run_index_alone(self, catalog_before):
        before = indexes(catalog_before)
        upgrade(catalog_before, "0013_run_decisions")
        downgrade(catalog_before, BEFORE)
        assert indexes(catalog_before) == before
