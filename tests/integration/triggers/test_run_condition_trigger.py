"""The run-condition triggers: serialization round trips, and a real wait on a catalog."""

from __future__ import annotations

import asyncio

from airflow_leastaction.catalog.store import TaskMeta
from airflow_leastaction.triggers.poller import CatalogPoller
from tests.helpers.run_conditions import day
from tests.helpers.triggers import OTHER, gate_trigger


async def first_event(trigger, timeout: float = 10.0):
    return await asyncio.wait_for(anext(trigger.run()), timeout)


class TestWaiting:
    async def test_the_trigger_admits_once_the_running_upstream_completes(self, store, catalog_url, use_catalog):
        use_catalog(catalog_url)
        meta = TaskMeta(cron="0 0 * * *", source="external")
        store.record_running(OTHER, day(2), meta=meta, run_id="o2")

        async def finish_later():
            # Once the gate has looked at the running upstream: every poll it reads has ticked twice (a
            # fixed delay raced the polls' first catalog connection on a busy machine).
            loop = id(asyncio.get_running_loop())
            while (
                not (polls := [p for key, p in list(CatalogPoller._shared.items()) if key[0] == loop and p.subscribers])
                or min(p.ticks for p in polls) < 2
            ):
                await asyncio.sleep(0.01)
            await asyncio.to_thread(store.record_success, OTHER, day(2), meta=meta, run_id="o2")

        finisher = asyncio.create_task(finish_later())
        event = await first_event(gate_trigger())
        await finisher
        assert event.payload["status"] == "admitted"
        assert event.payload["clock"]["looks"] >= 1

    async def test_the_trigger_skips_when_the_latest_finished_run_failed_and_no_wait_is_left(
        self, store, catalog_url, use_catalog
    ):
        use_catalog(catalog_url)
        store.record_finished(OTHER, day(2), "failed", meta=TaskMeta(cron="0 0 * * *"), run_id="o2")
        event = await first_event(gate_trigger(max_wait=0.0))
        assert event.payload["status"] == "skipped"
        assert "is failed" in event.payload["summary"]
