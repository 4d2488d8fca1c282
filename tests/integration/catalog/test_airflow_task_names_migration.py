"""Migration 0004 on SQLite and PostgreSQL: Airflow tasks of dotted DAG ids get names no other task has."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from sqlalchemy import insert, select

from airflow_leastaction.catalog.engine import get_engine
from airflow_leastaction.catalog.migrate import downgrade, upgrade
from airflow_leastaction.catalog.schema import consumption, gate_decision, task, task_run
from airflow_leastaction.catalog.store import CatalogStore
from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.refs import airflow_task

UTC = dt.UTC
NOW = dt.datetime(2026, 11, 30, tzinfo=UTC)
SLOT = dt.datetime(2026, 11, 29, tzinfo=UTC)
BEFORE = "0003_ui_indexes"


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def catalog_at_0003(request):
    url = request.getfixturevalue("sqlite_url" if request.param == "sqlite" else "pg_url")
    engine = get_engine(url, migrate=False)
    upgrade(engine, BEFORE)
    return engine


def seed(engine) -> dict[str, int]:
    """Rows an earlier version wrote: a dotted DAG's task (two map indexes), a plain one, an external one."""

    def add_task(conn, name, dag_id=None, task_id=None, partition="", source="airflow", parents=None):
        return conn.execute(
            insert(task).values(
                name=name,
                project="airflow",
                account="",
                partition=partition,
                source=source,
                timezone="UTC",
                dag_id=dag_id,
                task_id=task_id,
                parents=parents,
                prev_interval_start=SLOT,
                state="success",
                updated_at=NOW,
            )
        ).inserted_primary_key[0]

    with engine.begin() as conn:
        pks = {
            "dotted": add_task(conn, "sales.daily.load", "sales.daily", "load"),
            "dotted_0": add_task(conn, "sales.daily.load", "sales.daily", "load", partition="0"),
            "plain": add_task(conn, "orders.group.load", "orders", "group.load"),
            "external": add_task(conn, "sales.daily.load", source="external", partition="x"),
        }
        parents = [
            {"name": "sales.daily.load", "project": "airflow", "account": "", "partition": ""},
            {"name": "orders.group.load", "project": "airflow", "account": "", "partition": ""},
        ]
        pks["child"] = add_task(conn, "report.build", "report", "build", parents=json.dumps(parents, sort_keys=True))
        conn.execute(
            insert(task_run).values(
                task_pk=pks["dotted"],
                slot=SLOT,
                state="success",
                attempt=1,
                run_id="r1",
                output_revision=1,
                repair_pending=False,
                updated_at=NOW,
            )
        )
        decision = conn.execute(
            insert(gate_decision).values(
                dag_id="report",
                task_id="build",
                run_id="r1",
                map_index=-1,
                attempt=1,
                dependency="catalog:airflow/sales.daily.load",
                upstream_task_pk=pks["dotted"],
                result="SATISFIED",
                reason="ok",
                decided_at=NOW,
            )
        ).inserted_primary_key[0]
        conn.execute(
            insert(consumption).values(
                decision_id=decision,
                dag_id="report",
                task_id="build",
                run_id="r1",
                map_index=-1,
                attempt=1,
                dependency="catalog:airflow/sales.daily.load",
                upstream_task_pk=pks["dotted"],
                consumed_at=NOW,
            )
        )
    return pks


def names(engine) -> dict[int, str]:
    with engine.connect() as conn:
        return dict(conn.execute(select(task.c.id, task.c.name)).all())


class TestAirflowTaskNamesMigration:
    def test_existing_rows_of_dotted_dag_ids_are_renamed_with_their_history(self, catalog_at_0003):
        engine = catalog_at_0003
        pks = seed(engine)
        upgrade(engine)
        by_pk = names(engine)
        assert by_pk[pks["dotted"]] == by_pk[pks["dotted_0"]] == "sales.daily:load"
        assert by_pk[pks["plain"]] == "orders.group.load"
        assert by_pk[pks["external"]] == "sales.daily.load"  # reported from outside: its name is its owner's
        store = CatalogStore(engine)
        row = store.get_task(airflow_task("sales.daily", "load", project="airflow"))
        assert (row["id"], row["prev_interval_start"]) == (pks["dotted"], SLOT)
        assert (
            store.get_task(airflow_task("sales.daily", "load", project="airflow", map_index=0))["id"] == pks["dotted_0"]
        )
        assert store.get_task(airflow_task("sales", "daily.load", project="airflow")) is None
        with engine.connect() as conn:
            parents = json.loads(conn.execute(select(task.c.parents).where(task.c.id == pks["child"])).scalar())
            labels = {conn.execute(select(t.c.dependency)).scalar() for t in (gate_decision, consumption)}
            run_owner = conn.execute(select(task_run.c.task_pk)).scalar()
        assert [p["name"] for p in parents] == ["sales.daily:load", "orders.group.load"]
        assert labels == {"catalog:airflow/sales.daily:load"}
        assert labels == {airflow_task("sales.daily", "load", project="airflow").key}
        assert run_owner == pks["dotted"]

    def test_downgrade_restores_the_old_names_and_upgrade_is_repeatable(self, catalog_at_0003):
        engine = catalog_at_0003
        pks = seed(engine)
        before = names(engine)
        upgrade(engine)
        downgrade(engine, BEFORE)
        assert names(engine) == before
        upgrade(engine)
        assert names(engine)[pks["dotted"]] == "sales.daily:load"

    def test_the_two_tasks_that_shared_a_name_are_now_two_catalog_tasks(self, catalog_at_0003):
        engine = catalog_at_0003
        upgrade(engine)
        store = CatalogStore(engine)
        dotted_dag = airflow_task("a.b", "c", project="airflow")
        task_group = airflow_task("a", "b.c", project="airflow")
        store.record_success(dotted_dag, SLOT, run_id="r1")
        assert store.get_task(task_group) is None
        store.record_success(task_group, SLOT + dt.timedelta(days=1), run_id="r2")
        assert store.get_task(dotted_dag)["prev_interval_start"] == SLOT
        assert store.get_task(task_group)["prev_interval_start"] == SLOT + dt.timedelta(days=1)
        assert (dotted_dag.name, task_group.name) == ("a.b:c", "a.b.c")
        assert TaskIdentity("a.b:c", "airflow") == dotted_dag
