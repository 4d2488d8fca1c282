"""A re-run plan over tasks that are not in an Airflow DAG: dbt models (built from a source's loader) are
reached through the parents they declared and re-run through the model queue, assets are listed, and
nothing but an Airflow DAG is sent to Airflow's backfill API. Real catalogs on both backends, written as
the model queue and the asset bridge write them."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from airflow_leastaction.catalog.store import TaskMeta
from airflow_leastaction.cli import main as cli
from airflow_leastaction.dbt.model_tasks import DBT_SOURCE, build_run_id
from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.refs import airflow_task
from airflow_leastaction.reruns.apply import apply_plan
from airflow_leastaction.reruns.plan_reads import make_plan, published_revisions
from tests.helpers.backfill_api import BackfillApiStandIn
from tests.helpers.consuming_runs import DAILY, run

UTC = dt.UTC
DAYS = [dt.datetime(2026, 11, d, tzinfo=UTC) for d in (16, 17)]
LOAD, REPORT = airflow_task("orders_load", "load"), airflow_task("orders_report", "build")
STAGED, MART = TaskIdentity("stg_orders", "shop"), TaskIdentity("orders_mart", "shop")
ASSET = TaskIdentity("s3://lake/orders", "assets")
MODEL = TaskMeta(cron=DAILY, source=DBT_SOURCE)


def build(store, model: TaskIdentity, parents: list[TaskIdentity], slot: dt.datetime, ref: int) -> None:
    """A model built by the queue's drain, as ``dbt/model_tasks.py`` records it."""
    store.declare_parents(model, MODEL, parents)
    store.record_success(model, slot, meta=MODEL, run_id=build_run_id(ref))


@pytest.fixture
def shop(store, catalog_url, use_catalog):
    """orders_load (a DAG, loading the dbt source) -> stg_orders -> orders_mart (dbt models) -> the report
    (a DAG consuming the mart); the lake's orders asset declares the loader its parent."""
    use_catalog(catalog_url)
    asset = TaskMeta(cron=DAILY, source="asset")
    store.declare_parents(ASSET, asset, [LOAD])
    for n, slot in enumerate(DAYS):
        run(store, LOAD, slot)
        build(store, STAGED, [LOAD], slot, 10 + n)
        build(store, MART, [STAGED], slot, 20 + n)
        store.record_success(ASSET, slot, meta=asset, run_id=f"asset-{n}")
        run(store, REPORT, slot, [MART])
    return store


def test_a_sources_plan_reaches_the_dbt_models_built_from_it(shop, capsys):
    args = ["plan", "--task", str(LOAD), "--from", DAYS[0].isoformat(), "--to", DAYS[1].isoformat(), "--json"]
    assert cli(args) == 0
    found = json.loads(capsys.readouterr().out)
    tasks = {t["task"]: t for wave in found["waves"] for t in wave}
    assert [[t["task"] for t in wave] for wave in found["waves"]] == [
        [str(LOAD)],
        sorted([str(ASSET), str(STAGED)]),
        [str(MART)],
        [str(REPORT)],
    ]
    assert found["stale_runs"] == 8
    for model in (STAGED, MART):
        shown = tasks[str(model)]
        assert (shown["kind"], shown["dag_id"], shown["external"]) == ("dbt", None, True)
        assert shown["queue_runs"] == [
            f"airflow-leastaction queue enqueue {model.name} --force --slot {d.isoformat()} --project-dir ."
            for d in DAYS
        ]
    assert (tasks[str(ASSET)]["kind"], tasks[str(ASSET)]["dag_id"]) == ("asset", None)
    assert "owner_runs" not in tasks[str(ASSET)] and "queue_runs" not in tasks[str(ASSET)]


def test_apply_backfills_only_airflow_dags_and_waits_for_the_models_forced_builds(shop):
    plan = make_plan(shop, LOAD, DAYS[0], DAYS[1])
    events: list[str] = []
    api = BackfillApiStandIn(on_backfill=lambda dag_id: events.append(f"backfill {dag_id}"))
    refs = iter(range(100, 200))

    def say(line: str) -> None:
        if " queue enqueue " in line:  # the queue's drain builds the model again, as a forced request asks
            name, slot = line.split(" enqueue ")[1].split()[0], line.split("--slot ")[1].split()[0]
            model = {STAGED.name: STAGED, MART.name: MART}[name]
            build(shop, model, [LOAD] if model == STAGED else [STAGED], dt.datetime.fromisoformat(slot), next(refs))
            events.append(f"build {name}")

    apply_plan(plan, api, say, lambda t: published_revisions(shop, t.pk, plan.runs[t.pk]), poll=0)
    assert [dag_id for dag_id, _, _ in api.started] == ["orders_load", "orders_report"]
    assert events == [
        "backfill orders_load",
        "build stg_orders",
        "build stg_orders",
        "build orders_mart",
        "build orders_mart",
        "backfill orders_report",
    ]


def test_a_plan_of_a_dbt_model_sends_no_backfill_named_after_it(shop):
    plan = make_plan(shop, STAGED, DAYS[0], DAYS[0])
    api = BackfillApiStandIn()

    def say(line: str) -> None:
        if " queue enqueue orders_mart " in line:
            build(shop, MART, [STAGED], DAYS[0], 300)

    apply_plan(plan, api, say, lambda t: published_revisions(shop, t.pk, plan.runs[t.pk]), poll=0)
    assert [dag_id for dag_id, _, _ in api.started] == ["orders_report"]
