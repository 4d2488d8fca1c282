"""An asset event is keyed by the try that produced it: a task cleared and run again (or its run made
again) records a repair of the asset's slot, revision + 1, and the consumers of the first revision are
stale; the same event delivered again changes nothing. On real ``dag.test()`` runs and both catalogs."""

from __future__ import annotations

import datetime as dt

import pytest
from sqlalchemy import select

from airflow_leastaction.assets.recording import record
from airflow_leastaction.catalog.schema import identity_clause, task, task_run
from airflow_leastaction.refs import airflow_asset
from airflow_leastaction.version_compat import ASSET_EVENT_LISTENER
from tests.helpers.airflow_minors import needs
from tests.helpers.airflow_tries import clear_and_rerun
from tests.helpers.run_conditions import states

# The asset-event listener and its event type: Airflow 3.2 on.
AssetEvent = pytest.importorskip(
    "airflow.listeners.types", reason="no asset-event listener before Airflow 3.2"
).AssetEvent

pytestmark = needs(ASSET_EVENT_LISTENER, "the on_asset_event_emitted listener hook (Airflow 3.2)")

DAY = dt.datetime(2026, 11, 16, tzinfo=dt.UTC)
PRICES = "asc_daily_prices"


def prices(store) -> list[tuple]:
    with store.engine.connect() as conn:
        rows = conn.execute(
            select(task_run.c.slot, task_run.c.output_revision, task_run.c.attempt)
            .join(task, task.c.id == task_run.c.task_pk)
            .where(*identity_clause(airflow_asset(PRICES)))
        )
        return [tuple(r) for r in rows]


def test_a_cleared_and_rerun_producer_records_a_repair_and_its_consumers_are_stale(catalog, run_dag, dagbag):
    first = run_dag("asc_prices_producer", DAY)
    assert first.state == "success"
    assert states(run_dag("asc_on_prices", DAY))["price_report"] == "success"
    assert prices(catalog) == [(DAY, 1, 1)]
    assert catalog.audit.stale_consumers("asc_on_prices") == []

    ti = clear_and_rerun(dagbag.get_dag("asc_prices_producer"), first.run_id, "publish")

    assert (ti.state, ti.try_number) == ("success", 2)
    assert prices(catalog) == [(DAY, 2, 2)]
    stale = catalog.audit.stale_consumers("asc_on_prices")
    assert {(s["task_id"], s["consumed_revision"], s["current_revision"]) for s in stale} >= {("price_report", 1, 2)}


def test_a_run_made_again_with_the_same_run_id_records_a_repair(catalog, run_dag):
    """``dag.test()`` deletes the run of its logical date and makes it again: same run id, try 1 again."""
    again = DAY + dt.timedelta(hours=1)
    for _ in range(2):
        assert run_dag("asc_prices_producer", DAY, run_after=again).state == "success"
    assert prices(catalog) == [(DAY, 2, 1)]


def test_the_same_event_delivered_again_changes_nothing(catalog, run_dag, dagbag):
    run = run_dag("asc_prices_producer", DAY)
    asset = dagbag.get_dag("asc_prices_producer").task_dict["publish"].outlets[0]
    event = AssetEvent(
        asset=asset,
        extra={},
        source_dag_id="asc_prices_producer",
        source_task_id="publish",
        source_run_id=run.run_id,
        source_map_index=-1,
        source_aliases=[],
        partition_key=None,
    )
    record(event)
    record(event)
    assert prices(catalog) == [(DAY, 1, 1)]
