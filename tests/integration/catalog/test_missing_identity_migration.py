"""Migration 0015 on SQLite and PostgreSQL: decisions and consumption records get ``upstream_identity``;
a MISSING record of a dependency named by its catalog identity and with no upstream task gets that
identity, every other record none; downgrading drops the column and its index alone."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import insert, inspect, text

from airflow_leastaction.catalog.migrate import downgrade, upgrade
from airflow_leastaction.catalog.schema import consumption, gate_decision

BEFORE = "0014_parent_names"
AFTER = "0015_missing_identity"
AT = dt.datetime(2026, 12, 1, 6, tzinfo=dt.UTC)
#: (dependency, upstream task, result) -> the identity the migration gives it.
SEEDED = {
    ("catalog:feeds/feed_it", None, "MISSING"): "feeds/feed_it",
    ("catalog:feeds/feed_pt@eu[p1]", None, "MISSING"): "feeds/feed_pt@eu[p1]",
    ("catalog:feeds/feed_fr", 7, "MISSING"): None,  # it named its task: matched on it
    ("catalog:feeds/feed_de", None, "SATISFIED"): None,
    ("task:land_es", None, "MISSING"): None,  # the deployment's project is not the migration's to know
}


def seed(engine) -> None:
    with engine.begin() as conn:
        for n, (dependency, task_pk, result) in enumerate(SEEDED):
            attempt = {"dag_id": "report", "task_id": "report__gate", "run_id": f"r{n}", "map_index": -1, "attempt": 1}
            judged = {"dependency": dependency, "upstream_task_pk": task_pk, "upstream_slot": AT, "result": result}
            made = insert(gate_decision).values(**attempt, **judged, reason="seeded", decided_at=AT)
            decision = conn.execute(made).inserted_primary_key[0]
            consumed = {**attempt, **judged, "task_id": "report", "upstream_revision": 0, "consumed_at": AT}
            conn.execute(insert(consumption).values(**consumed, decision_id=decision))


def identities(engine, table: str) -> dict[tuple, str | None]:
    query = f"SELECT dependency, upstream_task_pk, result, upstream_identity FROM {table}"
    with engine.connect() as conn:
        return {(d, pk, r): identity for d, pk, r, identity in conn.execute(text(query))}


def columns(engine, table: str) -> set[str]:
    return {c["name"] for c in inspect(engine).get_columns(table)}


def indexes(engine) -> set[str]:
    return {i["name"] for i in inspect(engine).get_indexes("la_consumption")}


class TestMigration0015:
    def test_upgrading_names_the_identity_of_what_was_missing_with_no_task(self, catalog_before):
        seed(catalog_before)
        upgrade(catalog_before, AFTER)
        assert identities(catalog_before, "la_gate_decision") == SEEDED
        assert identities(catalog_before, "la_consumption") == SEEDED
        assert "ix_la_consumption_awaited" in indexes(catalog_before)

    def test_downgrading_drops_the_column_and_its_index_alone(self, catalog_before):
        seed(catalog_before)
        before = {t: columns(catalog_before, t) for t in ("la_gate_decision", "la_consumption")}
        before_indexes = indexes(catalog_before)
        upgrade(catalog_before, AFTER)
        downgrade(catalog_before, BEFORE)
        assert {t: columns(catalog_before, t) for t in before} == before
        assert indexes(catalog_before) == before_indexes
