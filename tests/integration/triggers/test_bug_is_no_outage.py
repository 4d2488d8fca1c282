"""A bug is not an outage: a waiting gate whose catalog poll fails with an error that waiting cannot cure
(a table the poll reads is gone, a plain ``KeyError``) ends with that error, which fails its task with
the message; only the errors :func:`~airflow_leastaction.catalog.engine.is_outage` names keep it waiting."""

from __future__ import annotations

import asyncio
import datetime as dt

import pytest
import sqlalchemy as sa

from airflow_leastaction.catalog.engine import dispose_all, get_engine
from airflow_leastaction.catalog.store import CatalogStore, TaskMeta
from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.triggers.parent_interval import ParentIntervalTrigger
from airflow_leastaction.triggers.poll_group import PollGroup
from tests.helpers.triggers import OTHER, gate_trigger

DAY = dt.datetime(2026, 11, 28, tzinfo=dt.UTC)
RAW = TaskIdentity("orders_raw", "sales-platform")


def sensor_trigger() -> ParentIntervalTrigger:
    return ParentIntervalTrigger(parents=[RAW.as_dict()], child_interval=DAY.isoformat(), poll_interval=0.05)


async def first_event(trigger):
    async for event in trigger.run():
        return event.payload


def drop_the_change_sequence(url: str) -> None:
    with get_engine(url).begin() as conn:
        conn.execute(sa.text("DROP TABLE la_change_counter"))


def a_bug_in_the_poll(monkeypatch) -> None:
    def broken(self, store, since, names):
        raise KeyError("slot_key")

    monkeypatch.setattr(PollGroup, "_changes", broken)


@pytest.fixture
def waiting_catalog(catalog_url, use_catalog):
    """A catalog where the sensor's parent and the gate's upstream have not finished: both would wait."""
    store = CatalogStore(get_engine(catalog_url, migrate=True))
    store.record_success(RAW, DAY - dt.timedelta(days=1), meta=TaskMeta(cron="0 0 * * *"), run_id="yesterday")
    store.record_running(OTHER, DAY, meta=TaskMeta(cron="0 0 * * *", source="external"), run_id="o")
    use_catalog(catalog_url)
    yield catalog_url
    dispose_all()


@pytest.mark.parametrize("make_trigger", [sensor_trigger, gate_trigger], ids=["sensor", "run_condition"])
async def test_a_gate_whose_poll_hits_a_bug_fails_with_the_error_instead_of_waiting(
    waiting_catalog, monkeypatch, make_trigger
):
    a_bug_in_the_poll(monkeypatch)
    with pytest.raises(KeyError, match="slot_key"):
        await asyncio.wait_for(first_event(make_trigger()), timeout=60)


@pytest.mark.parametrize("make_trigger", [sensor_trigger, gate_trigger], ids=["sensor", "run_condition"])
async def test_a_gate_whose_catalog_lost_a_table_fails_naming_it_instead_of_waiting(waiting_catalog, make_trigger):
    drop_the_change_sequence(waiting_catalog)
    with pytest.raises(sa.exc.DBAPIError, match="la_change_counter"):
        await asyncio.wait_for(first_event(make_trigger()), timeout=60)
