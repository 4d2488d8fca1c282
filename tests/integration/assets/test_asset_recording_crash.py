"""The recording of an asset event killed at each of its step boundaries, in a real process: a
``dag.test()`` run of the producer whose listener dies there (SIGKILL). Airflow has committed the event
before its listener runs, so what the catalog holds afterwards is what the killed process wrote; the
restart delivers the same event again, rebuilt from Airflow's database. Whatever the point, the slot is
recorded once (revision 1), however often the event is delivered again."""

from __future__ import annotations

import datetime as dt

import pytest
from sqlalchemy import select

from airflow_leastaction.catalog.schema import identity_clause, task, task_run
from airflow_leastaction.refs import airflow_asset
from airflow_leastaction.version_compat import ASSET_EVENT_LISTENER
from tests.helpers.airflow_minors import needs
from tests.helpers.crash import run_to_end, run_until_crash

pytestmark = [
    needs(ASSET_EVENT_LISTENER, "the on_asset_event_emitted listener hook (Airflow 3.2)"),
    pytest.mark.crash_points,
]

DAY = dt.datetime(2026, 11, 16, tzinfo=dt.UTC)
PRICES = "asc_daily_prices"

PRODUCE = f"""
import datetime as dt, os
from airflow_leastaction.version_compat import dag_bag_class

dag_bag_class()(os.environ["AIRFLOW__CORE__DAGS_FOLDER"]).get_dag("asc_prices_producer").test(logical_date=dt.datetime.fromisoformat({DAY.isoformat()!r}))
"""

#: The restart: the events of the asset the killed run produced, from Airflow's database, delivered to the
#: listener again.
DELIVER_AGAIN = f"""
import datetime as dt
from airflow import settings
from airflow.listeners.types import AssetEvent
from airflow.models.asset import AssetEvent as AssetEventRow, AssetModel
from airflow.models.dagrun import DagRun
from sqlalchemy import select

from airflow_leastaction.listeners.assets import on_asset_event_emitted

with settings.Session() as session:
    killed_run = select(DagRun.run_id).where(
        DagRun.dag_id == "asc_prices_producer", DagRun.logical_date == dt.datetime.fromisoformat({DAY.isoformat()!r})
    )
    rows = session.execute(
        select(AssetEventRow, AssetModel).join(AssetModel, AssetModel.id == AssetEventRow.asset_id)
        .where(AssetModel.name == {PRICES!r}, AssetEventRow.source_run_id.in_(killed_run))
    ).all()
    assert rows, "Airflow has no event of the asset"
    for row, asset in rows:
        on_asset_event_emitted(asset_event=AssetEvent(
            asset=asset.to_serialized(), extra=row.extra, source_dag_id=row.source_dag_id,
            source_task_id=row.source_task_id, source_run_id=row.source_run_id,
            source_map_index=row.source_map_index, source_aliases=[], partition_key=row.partition_key,
        ))
"""


def prices(store) -> list[tuple]:
    with store.engine.connect() as conn:
        rows = conn.execute(
            select(task_run.c.slot, task_run.c.output_revision)
            .join(task, task.c.id == task_run.c.task_pk)
            .where(*identity_clause(airflow_asset(PRICES)))
        )
        return [tuple(r) for r in rows]


@pytest.mark.parametrize("point", ["asset_recording.outcome_built", "asset_recording.recorded"])
def test_an_event_whose_recording_was_killed_is_recorded_once_when_delivered_again(point, catalog, airflow_db):
    run_until_crash(PRODUCE, point)
    held = prices(catalog)
    assert held == ([] if point == "asset_recording.outcome_built" else [(DAY, 1)])
    run_to_end(DELIVER_AGAIN)
    run_to_end(DELIVER_AGAIN)
    assert prices(catalog) == [(DAY, 1)]
