"""``airflow-leastaction db prune`` and the example maintenance DAG, against real catalogs."""

from __future__ import annotations

import datetime as dt
import json

from sqlalchemy import insert, select

from airflow_leastaction.catalog.schema import gate_decision
from airflow_leastaction.cli import main as cli

UTC = dt.UTC
OLD = dt.datetime(2025, 1, 1, tzinfo=UTC)


def seed_decisions(store, *times) -> list[int]:
    with store.write() as conn:
        return [
            conn.execute(
                insert(gate_decision).values(
                    dag_id="d",
                    task_id="t",
                    run_id=f"r{i}",
                    attempt=1,
                    dependency="catalog:p/x",
                    result="UNSATISFIED",
                    reason="seeded",
                    decided_at=at,
                )
            ).inserted_primary_key[0]
            for i, at in enumerate(times)
        ]


def decision_ids(store) -> set[int]:
    with store.engine.connect() as conn:
        return set(conn.execute(select(gate_decision.c.id)).scalars())


class TestDbPrune:
    def test_db_prune_prints_the_rows_deleted_per_table(self, store, catalog_url, use_catalog, capsys):
        use_catalog(catalog_url)
        old, new = seed_decisions(store, OLD, OLD + dt.timedelta(days=400))
        assert cli(["db", "prune", "--before", "2025-06-01"]) == 0
        out = capsys.readouterr().out
        assert "la_gate_decision: deleted 1" in out and "la_consumption: deleted 0" in out
        assert decision_ids(store) == {new} and old not in decision_ids(store)

    def test_db_prune_dry_run_counts_and_deletes_nothing(self, store, catalog_url, use_catalog, capsys):
        use_catalog(catalog_url)
        seeded = set(seed_decisions(store, OLD, OLD, OLD + dt.timedelta(days=400)))
        assert cli(["db", "prune", "--before", "2025-06-01T00:00:00+00:00", "--dry-run", "--json"]) == 0
        shown = json.loads(capsys.readouterr().out)
        assert (shown["dry_run"], shown["rows"]["la_gate_decision"]) == (True, 2)
        assert decision_ids(store) == seeded

    def test_db_prune_refuses_a_cutoff_in_the_future(self, catalog_url, use_catalog, capsys):
        use_catalog(catalog_url)
        assert cli(["db", "prune", "--before", "2999-01-01"]) == 2
        assert "after the current time" in capsys.readouterr().err

    def test_db_prune_refuses_a_cutoff_that_is_not_a_date(self, catalog_url, use_catalog, capsys):
        use_catalog(catalog_url)
        assert cli(["db", "prune", "--before", "last-week"]) == 2
        assert "'last-week'" in capsys.readouterr().err

    def test_db_prune_refuses_a_batch_size_that_is_not_positive(self, store, catalog_url, use_catalog, capsys):
        use_catalog(catalog_url)
        seeded = set(seed_decisions(store, OLD))
        assert cli(["db", "prune", "--before", "2025-06-01", "--batch-size", "0"]) == 2
        assert "argument --batch-size: '0'" in capsys.readouterr().err and decision_ids(store) == seeded


def test_the_maintenance_dag_prunes_history_older_than_90_days(store, catalog_url, use_catalog, run_dag):
    use_catalog(catalog_url)
    logical = dt.datetime(2026, 11, 1, tzinfo=UTC)  # the cutoff is 90 days before its interval's end: August
    gone, kept = seed_decisions(store, dt.datetime(2026, 7, 1, tzinfo=UTC), dt.datetime(2026, 10, 1, tzinfo=UTC))
    run = run_dag("catalog_retention", logical)
    assert run.state == "success"
    assert decision_ids(store) == {kept} and gone not in decision_ids(store)
