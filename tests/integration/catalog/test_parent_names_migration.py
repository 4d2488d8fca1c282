"""Migration 0014 on SQLite and PostgreSQL: every declaration already recorded is indexed by its parent
names (a declaration no reader parses indexes none), and downgrading drops the index table alone."""

from __future__ import annotations

import datetime as dt
import json

from sqlalchemy import insert, inspect, select

from airflow_leastaction.catalog.migrate import downgrade, upgrade
from airflow_leastaction.catalog.schema import task, task_parent

BEFORE = "0013_run_decisions"
AT = dt.datetime(2026, 12, 1, 3, tzinfo=dt.UTC)


def declared(name: str, parents) -> dict:
    return {"name": name, "project": "p", "account": "", "partition": "", "source": "airflow",
            "timezone": "UTC", "parents": parents, "updated_at": AT}  # fmt: skip


def parent(name: str, project: str = "p") -> dict:
    return {"name": name, "project": project, "account": "", "partition": ""}


class TestMigration0014:
    def test_upgrading_indexes_every_declaration_by_its_parent_names(self, catalog_before):
        with catalog_before.begin() as conn:
            conn.execute(
                insert(task),
                [
                    declared("report", json.dumps([parent("load"), parent("crm", "sales"), parent("crm")])),
                    declared("load", json.dumps([parent("crm")])),
                    declared("crm", None),  # declares nothing
                    declared("broken", "{not json"),  # a reader parses no parent out of it, nor does this
                ],
            )
        upgrade(catalog_before, "0014_parent_names")
        with catalog_before.connect() as conn:
            pks = dict(conn.execute(select(task.c.name, task.c.id)).all())
            rows = set(conn.execute(select(task_parent.c.parent_name, task_parent.c.task_pk)).all())
        # One row per (name, declaring task): "crm" of two projects is one name for report.
        assert rows == {("load", pks["report"]), ("crm", pks["report"]), ("crm", pks["load"])}

    def test_downgrading_drops_the_index_table_alone(self, catalog_before):
        before = set(inspect(catalog_before).get_table_names())
        upgrade(catalog_before, "0014_parent_names")
        assert "la_task_parent" in inspect(catalog_before).get_table_names()
        downgrade(catalog_before, BEFORE)
        assert set(inspect(catalog_before).get_table_names()) == before
