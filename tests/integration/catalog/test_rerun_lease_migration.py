"""Migration 0016 on SQLite and PostgreSQL: a late arrival gets its claim lease and the run's queued_at
before the clear, empty on the rows already written (a ``requested`` one is then taken as abandoned);
downgrading drops both columns alone."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import insert, inspect, text

from airflow_leastaction.catalog.migrate import downgrade, upgrade
from airflow_leastaction.catalog.schema import late_arrival

BEFORE = "0015_missing_identity"
AFTER = "0016_rerun_lease"
AT = dt.datetime(2026, 12, 1, 6, tzinfo=dt.UTC)


def columns(engine) -> set[str]:
    return {c["name"] for c in inspect(engine).get_columns("la_late_arrival")}


class TestMigration0016:
    def test_upgrading_adds_the_lease_and_keeps_the_rows(self, catalog_before):
        with catalog_before.begin() as conn:
            for n, state in enumerate(("waiting", "requested")):
                row = {"dag_id": "report", "run_id": f"r{n}", "gate_task_id": "report__gate", "gate_attempt": 1}
                conn.execute(insert(late_arrival).values(**row, state=state, created_at=AT, updated_at=AT))
        upgrade(catalog_before, AFTER)
        with catalog_before.connect() as conn:
            rows = conn.execute(text("SELECT state, lease_until, queued_before FROM la_late_arrival ORDER BY id"))
            assert [tuple(r) for r in rows] == [("waiting", None, None), ("requested", None, None)]

    def test_downgrading_drops_the_two_columns_alone(self, catalog_before):
        before = columns(catalog_before)
        upgrade(catalog_before, AFTER)
        assert columns(catalog_before) - before == {"lease_until", "queued_before"}
        downgrade(catalog_before, BEFORE)
        assert columns(catalog_before) == before
