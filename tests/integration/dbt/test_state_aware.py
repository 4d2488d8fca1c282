"""The state-aware queue on real dbt-duckdb builds: exactly the models whose code or inputs changed, and
everything downstream of them, are built; the rest stand on their last build, and each pass says why."""

from __future__ import annotations

import duckdb
import pytest
from sqlalchemy import select

from airflow_leastaction.catalog.engine import get_engine
from airflow_leastaction.catalog.store import CatalogStore
from airflow_leastaction.dbt.planner import Planner
from airflow_leastaction.dbt.queue_store import QueueStore
from airflow_leastaction.dbt.request_key import request_key
from airflow_leastaction.dbt.runner import DbtRunner
from airflow_leastaction.dbt.schema import dbt_queue
from airflow_leastaction.exceptions import DbtInvocationError
from tests.helpers.dbt_queue import KEY, LOADERS, land, make_worker, names, request

pytestmark = [pytest.mark.dbt, pytest.mark.no_airflow]
EVERY_MODEL = [
    "agg_labor_history",
    "dim_project",
    "fact_project_labor",
    "stg_field_ops__time_entries",
    "stg_field_ops__work_orders",
]
STG_WORK_ORDERS, DIM = "model.field_ops.stg_field_ops__work_orders", "model.field_ops.dim_project"
FACT, AGG = "model.field_ops.fact_project_labor", "model.field_ops.agg_labor_history"


@pytest.fixture
def sqlite_queue(sqlite_url) -> QueueStore:
    return QueueStore(get_engine(sqlite_url, migrate=True))


def built_once(queue, runner, plans, *, skip=()) -> None:
    """Every loader lands (but ``skip``), both requests arrive, one drain: every model has a build."""
    catalog = CatalogStore(queue.engine)
    for loader in LOADERS:
        if loader not in skip:
            land(catalog, loader, 0)
    request(queue, plans["A"], 0)
    request(queue, plans["B"], 0)
    report = make_worker(queue, runner).drain().as_dict()
    assert names(report["built"]) == EVERY_MODEL and report["reused"] == []


def everything_again(queue, runner, plans, at: int, **kwargs) -> dict:
    request(queue, plans["A"], at, **kwargs)
    request(queue, plans["B"], at)
    return make_worker(queue, runner).drain().as_dict()


def reasons(report: dict) -> dict[str, str]:
    return {u: why for b in report["batches"] for u, why in b["reasons"].items()}


def rows_of(project, table: str) -> int:
    with duckdb.connect(str(project / "field_ops.duckdb"), read_only=True) as con:
        return con.execute(f"select count(*) from main.{table}").fetchone()[0]


class TestOnlyWhatChangedIsBuilt:
    def test_new_data_in_one_source_builds_only_what_reads_it_and_no_change_builds_nothing(
        self, queue, runner, plans, dbt_project
    ):
        built_once(queue, runner, plans)
        unchanged = everything_again(queue, runner, plans, 1)
        assert unchanged["built"] == [] and names(unchanged["reused"]) == EVERY_MODEL
        assert [b["invocations"] for b in unchanged["batches"]] == [[]]  # not one dbt command

        orders = dbt_project / "data" / "work_orders.csv"
        before = rows_of(dbt_project, "stg_field_ops__work_orders")
        orders.write_text(orders.read_text() + "999,1,OPEN,2026-11-29 02:00:00\n")
        land(CatalogStore(queue.engine), "work_orders", 2)  # its loader reports the new interval
        moved = everything_again(queue, runner, plans, 2)
        assert names(moved["built"]) == [
            "agg_labor_history",
            "dim_project",
            "fact_project_labor",
            "stg_field_ops__work_orders",
        ]
        assert names(moved["reused"]) == ["stg_field_ops__time_entries"]
        why = reasons(moved)
        assert why[STG_WORK_ORDERS].startswith("input moved: source.field_ops.field_ops.work_orders (airflow/")
        assert why[DIM] == f"upstream rebuilt: {STG_WORK_ORDERS}"
        assert rows_of(dbt_project, "stg_field_ops__work_orders") == before + 1  # built on the new data

        history = {(r["unique_id"], r["request_slot"].hour): r for r in queue.history("field_ops", limit=100)}
        reuse, first = history[(DIM, 1)], history[(DIM, 0)]
        assert (reuse["decision"], reuse["build_ref"]) == ("reused", first["id"])
        assert reuse["reason"] == f"inputs unchanged since build {first['id']}"
        assert (first["decision"], first["build_ref"], first["reason"]) == ("built", first["id"], "never built")

    def test_a_model_whose_sql_changed_is_built_with_everything_downstream_of_it_and_force_builds(
        self, sqlite_queue, runner, plans, dbt_project
    ):
        built_once(sqlite_queue, runner, plans)
        sql = dbt_project / "models" / "marts" / "fact_project_labor.sql"
        sql.write_text(sql.read_text().replace("as labor_cost", "as labor_cost  -- in the project's currency"))
        changed = everything_again(sqlite_queue, runner, plans, 1)
        assert names(changed["built"]) == ["agg_labor_history", "fact_project_labor"]
        assert reasons(changed)[FACT] == "code changed" and reasons(changed)[AGG] == f"upstream rebuilt: {FACT}"

        forced = everything_again(sqlite_queue, runner, plans, 2, force=True)  # request A is forced
        assert names(forced["built"]) == ["agg_labor_history", "dim_project", "fact_project_labor",
                                          "stg_field_ops__work_orders"]  # fmt: skip
        assert reasons(forced)[STG_WORK_ORDERS] == "forced"

    def test_a_request_with_other_vars_builds_the_models_that_use_them(self, sqlite_queue, runner, plans, dbt_project):
        built_once(sqlite_queue, runner, plans)
        weekly = request_key("field_ops", dbt_vars={"labor_period": "week"})
        request(sqlite_queue, plans["A"], 1, key=weekly)
        by_week = make_worker(sqlite_queue, runner).drain().as_dict()
        assert names(by_week["built"]) == ["agg_labor_history"] and reasons(by_week)[AGG] == "code changed"
        with duckdb.connect(str(dbt_project / "field_ops.duckdb"), read_only=True) as con:
            query = "select distinct dayofweek(period_start) from main.agg_labor_history"
            days = {r[0] for r in con.execute(query).fetchall()}
        assert days == {1}  # weeks start on Monday

        request(sqlite_queue, plans["A"], 2)  # the project's own var (month) again: the relation is weekly now
        by_month = make_worker(sqlite_queue, runner).drain().as_dict()
        assert names(by_month["built"]) == ["agg_labor_history"] and reasons(by_month)[AGG] == "code changed"


class TestDemandKeys:
    def test_requests_that_differ_in_command_or_flags_never_share_a_batch(self, sqlite_queue, runner, plans):
        built_once(sqlite_queue, runner, plans)
        keys = {
            "plain": request_key("field_ops"),
            "full_refresh": request_key("field_ops", full_refresh=True),
            "run": request_key("field_ops", command="run"),
            "vars": request_key("field_ops", dbt_vars={"unused": 1}),
        }
        for key in keys.values():
            request(sqlite_queue, plans["A"], 1, key=key)
        report = make_worker(sqlite_queue, runner).drain().as_dict()
        assert len(report["batches"]) == len(keys)
        rows = sqlite_queue.history("field_ops", limit=100)
        with sqlite_queue.engine.connect() as conn:
            digest_of = dict(conn.execute(select(dbt_queue.c.id, dbt_queue.c.demand_key)).all())
        for batch in report["batches"]:
            in_batch = [r for r in rows if r["batch_id"] == batch["batch_id"]]
            assert len({digest_of[r["id"]] for r in in_batch}) == 1  # one key per batch
        built = {b["batch_id"]: [u for u, o in b["outcomes"].items() if o == "success"] for b in report["batches"]}
        batches = {b["id"]: b for b in sqlite_queue.batches("field_ops")}
        refreshed = [i for i, b in batches.items() if b["full_refresh"]]
        assert [names(built[i]) for i in refreshed] == [names(m.unique_id for m in plans["A"].models)]
        others = [b for b in report["batches"] if b["batch_id"] not in refreshed]
        assert all(b["outcomes"] == {} and b["invocations"] == [] for b in others)  # nothing they read changed


class TestUnknownInputs:
    def test_a_source_mapped_to_a_task_the_catalog_does_not_hold_is_built_saying_so(self, sqlite_queue, runner, plans):
        built_once(sqlite_queue, runner, plans, skip=("reference_data",))
        again = everything_again(sqlite_queue, runner, plans, 1)
        assert names(again["reused"]) == ["stg_field_ops__time_entries", "stg_field_ops__work_orders"]
        assert reasons(again)[DIM] == (
            "inputs unknown: source.field_ops.field_ops.projects (mapped task field_ops/reference_data is not "
            "in the catalog)"
        )

    def test_a_manifest_dbt_cannot_read_fails_the_drain_with_dbts_error_and_claims_nothing(
        self, sqlite_queue, runner, plans, dbt_project
    ):
        request(sqlite_queue, plans["A"], 0)
        sql = dbt_project / "models" / "marts" / "dim_project.sql"
        sql.write_text(sql.read_text() + "\n{{ unclosed(\n")
        with pytest.raises(DbtInvocationError, match="dim_project") as failed:
            make_worker(sqlite_queue, runner).drain()
        assert "parse" in " ".join(failed.value.command)
        assert sqlite_queue.batches("field_ops") == []
        assert {r["status"] for r in sqlite_queue.active_rows("field_ops")} == {"pending"}


FRESH_PROJECT = {
    "dbt_project.yml": 'name: fresh\nversion: "1.0.0"\nconfig-version: 2\nprofile: fresh\nmodel-paths: ["models"]\n',
    "profiles.yml": "fresh:\n  target: dev\n  outputs:\n    dev: {type: duckdb, path: fresh.duckdb, threads: 1}\n",
    "models/sources.yml": """version: 2
sources:
  - name: feed
    tables:
      - name: events
        meta:
          external_location: "read_csv_auto('data/events.csv', header=true)"
        loaded_at_field: "cast(loaded_at as timestamp)"
        freshness:
          warn_after: {count: 100, period: day}
""",
    "models/stg_events.sql": "{{ config(materialized='table') }}\nselect * from {{ source('feed', 'events') }}\n",
    "data/events.csv": "id,loaded_at\n1,2026-11-29 00:00:00\n",
}


class TestSourceFreshness:
    def test_a_source_without_a_catalog_task_is_followed_by_dbt_source_freshness_where_configured(
        self, sqlite_queue, tmp_path
    ):
        project = tmp_path / "fresh"
        for name, text in FRESH_PROJECT.items():
            (project / name).parent.mkdir(parents=True, exist_ok=True)
            (project / name).write_text(text)
        runner = DbtRunner(project)
        plan = Planner(runner).plan("source:feed.events+")
        events = "model.fresh.stg_events"

        def drain_once() -> dict:
            sqlite_queue.enqueue(KEY, plan.models, plan.selector)
            return make_worker(sqlite_queue, runner).drain().as_dict()

        assert drain_once()["built"] == [events]
        unchanged = drain_once()
        assert unchanged["reused"] == [events]
        assert [b["invocations"] for b in unchanged["batches"]] == [["source freshness"]]  # and no build
        (project / "data" / "events.csv").write_text(FRESH_PROJECT["data/events.csv"] + "2,2026-11-29 05:00:00\n")
        moved = drain_once()
        assert moved["built"] == [events]
        assert reasons(moved)[events] == (
            "input moved: source.fresh.feed.events (loaded 2026-11-29T00:00:00+00:00 -> loaded "
            "2026-11-29T05:00:00+00:00)"
        )
