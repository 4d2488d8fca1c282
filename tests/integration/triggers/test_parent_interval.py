"""ParentIntervalTrigger against real catalogs: serialization, shared polling, release, failure, timeout."""

from __future__ import annotations

import asyncio
import datetime as dt

import pytest
from sqlalchemy import event

from airflow_leastaction.catalog.engine import get_engine
from airflow_leastaction.catalog.store import TaskMeta
from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.triggers.parent_interval import ParentIntervalTrigger
from airflow_leastaction.triggers.poller import CatalogPoller

UTC = dt.UTC
DAY = dt.datetime(2026, 11, 28, tzinfo=UTC)
DAILY = TaskMeta(cron="0 0 * * *")


def make_trigger(parents, **kwargs) -> ParentIntervalTrigger:
    return ParentIntervalTrigger(
        parents=[p.as_dict() for p in parents], child_interval=DAY.isoformat(), poll_interval=0.05, **kwargs
    )


class QueryCounter:
    def __init__(self, engine):
        self.engine, self.selects = engine, 0

    def __call__(self, conn, cursor, statement, *args):
        # Catalog reads only: connection set-up and pool pings are not per-tick work.
        if statement.lstrip().upper().startswith("SELECT") and "la_task" in statement:
            self.selects += 1

    def __enter__(self):
        event.listen(self.engine, "before_cursor_execute", self)
        return self

    def __exit__(self, *exc):
        event.remove(self.engine, "before_cursor_execute", self)


async def first_event(trigger):
    async for ev in trigger.run():
        return ev.payload


class TestSharedPolling:
    async def test_k_waiting_triggers_cause_at_most_two_queries_per_tick(self, store, catalog_url, use_catalog):
        use_catalog(catalog_url)
        parents = [TaskIdentity(f"parent_{i}", "other-team") for i in range(3)]
        for p in parents:
            store.register_task(p, DAILY)
        engine = get_engine(catalog_url)
        with QueryCounter(engine) as counter:
            tasks = [asyncio.create_task(first_event(make_trigger(parents))) for _ in range(40)]
            key = (id(asyncio.get_running_loop()), catalog_url, 0.05)
            # Several ticks with every trigger waiting; counted in ticks, not seconds, so a loaded machine
            # only makes the test slower.
            deadline = asyncio.get_running_loop().time() + 30
            while (
                key not in CatalogPoller._shared
                or CatalogPoller._shared[key].subscribers < 40
                or CatalogPoller._shared[key].ticks < 4
            ):
                assert asyncio.get_running_loop().time() < deadline, "the shared poller never ticked 4 times"
                await asyncio.sleep(0.01)
            poller = CatalogPoller._shared[key]
            assert poller.subscribers == 40
            # Read both counters between ticks: right after a tick completes the poller sleeps, so no
            # query of the next tick is in flight.
            ticks = poller.ticks
            while poller.ticks == ticks:
                await asyncio.sleep(0.001)
            waiting_ticks, waiting_selects = poller.ticks, counter.selects
            for p in parents:
                await asyncio.to_thread(store.record_success, p, DAY, run_id="r")
            events = await asyncio.wait_for(asyncio.gather(*tasks), timeout=10)
        assert waiting_ticks >= 3
        assert waiting_selects <= 2 * waiting_ticks
        assert {e["status"] for e in events} == {"admitted"}
        assert all(j["upstream_revision"] == 1 for e in events for j in e["judgements"])

    async def test_the_child_waits_while_a_parent_slot_is_incomplete_and_is_released_when_it_completes(
        self, store, catalog_url, use_catalog
    ):
        use_catalog(catalog_url)
        raw = TaskIdentity("orders_raw", "sales-platform")
        store.record_success(raw, DAY - dt.timedelta(days=1), meta=DAILY, run_id="yesterday")
        waiter = asyncio.create_task(first_event(make_trigger([raw])))
        await asyncio.sleep(0.3)
        assert not waiter.done()
        await asyncio.to_thread(store.record_success, raw, DAY, run_id="today")
        payload = await asyncio.wait_for(waiter, timeout=10)
        assert payload["status"] == "admitted"
        assert payload["judgements"][0]["upstream_slot"] == DAY.isoformat()


class TestOutcomes:
    async def test_a_failed_parent_fails_the_trigger_when_told_to(self, store, catalog_url, use_catalog):
        use_catalog(catalog_url)
        raw = TaskIdentity("orders_raw", "sales-platform")
        store.record_running(raw, DAY, meta=DAILY, run_id="r")
        store.record_finished(raw, DAY, "failed", run_id="r")
        payload = await asyncio.wait_for(first_event(make_trigger([raw], on_parent_failure="fail")), timeout=10)
        assert payload["status"] == "failed"
        assert "orders_raw: slot 2026-11-28 (day) is failed" in payload["reasons"][0]

    async def test_timeout_fires_with_the_last_reasons(self, store, catalog_url, use_catalog):
        use_catalog(catalog_url)
        raw = TaskIdentity("orders_raw", "sales-platform")
        store.record_success(raw, DAY - dt.timedelta(days=1), meta=DAILY, run_id="r")
        # Far enough off for the first catalog read to answer on a loaded machine: the reasons are the read's.
        deadline = (dt.datetime.now(UTC) + dt.timedelta(seconds=3)).isoformat()
        payload = await asyncio.wait_for(first_event(make_trigger([raw], deadline=deadline)), timeout=30)
        assert payload["status"] == "timeout"
        assert payload["reasons"] == [
            "orders_raw: expected slot 2026-11-28 (day), completed up to 2026-11-27; judged by its slot records"
        ]

    async def test_an_unknown_parent_keeps_waiting_and_says_so(self, store, catalog_url, use_catalog):
        use_catalog(catalog_url)
        deadline = (dt.datetime.now(UTC) + dt.timedelta(seconds=3)).isoformat()  # after the first read
        payload = await asyncio.wait_for(
            first_event(make_trigger([TaskIdentity("renamed", "x")], deadline=deadline)), 30
        )
        assert payload["status"] == "timeout"
        assert "not in the catalog" in payload["reasons"][0]


@pytest.mark.parametrize("interval", [0.05])
async def test_the_poller_stops_when_its_last_subscriber_leaves(sqlite_url, interval):
    get_engine(sqlite_url, migrate=True)
    poller = CatalogPoller.shared(sqlite_url, interval)
    async with poller.subscribe([(TaskIdentity("a", "b"), DAY)]) as sub:
        await sub.next()
    await asyncio.sleep(interval * 3)
    assert poller._task.done()
    assert (id(asyncio.get_running_loop()), sqlite_url, interval) not in CatalogPoller._shared


async def test_a_parent_reporting_only_its_latest_completion_releases_an_earlier_child(store, catalog_url, use_catalog):
    use_catalog(catalog_url)
    raw = TaskIdentity("orders_raw", "sales-platform")
    store.report_completion(raw, DAY + dt.timedelta(days=2), cron="0 0 * * *")
    payload = await asyncio.wait_for(first_event(make_trigger([raw])), timeout=10)
    assert payload["status"] == "admitted"
    assert "judged by its watermark, as its slot records start at 2026-11-30" in payload["judgements"][0]["reason"]


async def test_a_whole_interval_parent_releases_the_child_when_its_last_slot_of_the_interval_completes(
    store, catalog_url, use_catalog
):
    use_catalog(catalog_url)
    hourly = TaskIdentity("orders_hourly", "sales-platform")
    hours = [DAY + dt.timedelta(hours=h) for h in range(24)]
    for h in hours[:-1]:
        store.report_completion(hourly, h, cron="0 * * * *")
    parent = {**hourly.as_dict(), "coverage": "interval"}
    trigger = ParentIntervalTrigger(
        parents=[parent],
        child_interval=DAY.isoformat(),
        poll_interval=0.05,
        interval_end=(DAY + dt.timedelta(days=1)).isoformat(),
    )
    waiter = asyncio.create_task(first_event(trigger))
    poller = CatalogPoller.shared(catalog_url, 0.05)
    while poller.ticks < 3:  # judged on several snapshots while 23:00 is missing
        await asyncio.sleep(0.01)
    assert not waiter.done()
    await asyncio.to_thread(store.report_completion, hourly, hours[-1], cron="0 * * * *")
    payload = await asyncio.wait_for(waiter, timeout=10)
    assert payload["status"] == "admitted"
    assert payload["judgements"][0]["upstream_slot"] == hours[-1].isoformat()
