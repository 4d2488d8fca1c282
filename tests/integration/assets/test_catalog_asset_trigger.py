"""The asset watcher's trigger on real catalogs (SQLite and PostgreSQL), run in this process as the
triggerer runs it: every slot record carries the change number of its last write, and the watcher yields
one event per completed slot past its cursor, in the order the catalog committed them, with the slot as a
partition key in the task's timezone and the output revision."""

from __future__ import annotations

import asyncio
import datetime as dt

import pytest
from sqlalchemy import select

from airflow_leastaction.catalog.bridges import AssetBridges
from airflow_leastaction.catalog.schema import identity_clause, task, task_run
from airflow_leastaction.catalog.store import TaskMeta
from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.triggers.catalog_asset import CatalogAssetTrigger
from airflow_leastaction.triggers.poll_group import PollGroup
from airflow_leastaction.triggers.poller import CatalogPoller
from airflow_leastaction.triggers.wire import Cursor

PARIS = TaskMeta(cron="0 0 * * *", timezone="Europe/Paris", source="external")
FEED = TaskIdentity("feed", "partners")
ASSET = "catalog:partners/feed"
#: How long a test waits for an event it expects: a guard against a hang, not a measure of speed.
WAIT = 120.0


def midnight(day: int) -> dt.datetime:
    """Midnight in Paris on 2026-11-``day``: the slot of a daily task there."""
    return dt.datetime(2026, 11, day, tzinfo=dt.timezone(dt.timedelta(hours=1))).astimezone(dt.UTC)


def seq_of(store, slot: dt.datetime) -> int:
    with store.engine.connect() as conn:
        return conn.execute(
            select(task_run.c.change_seq)
            .join(task, task.c.id == task_run.c.task_pk)
            .where(*identity_clause(FEED), task_run.c.slot == slot)
        ).scalar_one()


def watcher(**kwargs) -> CatalogAssetTrigger:
    return CatalogAssetTrigger(
        identity=FEED.as_dict(),
        asset_name=ASSET,
        asset_uri="leastaction://catalog/partners/feed",
        poll_interval=0.05,
        **kwargs,
    )


class Events:
    """A watcher's run, read as the triggerer reads it, one event at a time."""

    def __init__(self, trigger: CatalogAssetTrigger):
        self.run = trigger.run()
        self.pending: asyncio.Future | None = None

    def _next(self) -> asyncio.Future:
        if self.pending is None:
            self.pending = asyncio.ensure_future(self.run.__anext__())
        return self.pending

    async def next(self) -> dict:
        event = await asyncio.wait_for(asyncio.shield(self._next()), WAIT)
        self.pending = None
        return event.payload

    async def none_within(self, seconds: float) -> bool:
        """No event for ``seconds`` (one that comes later is the next :meth:`next`)."""
        done, _ = await asyncio.wait([self._next()], timeout=seconds)
        return not done

    async def close(self) -> None:
        if self.pending is not None:
            self.pending.cancel()
            await asyncio.gather(self.pending, return_exceptions=True)
        else:
            await self.run.aclose()


async def registered(store) -> None:
    """Wait until the watcher registered its bridge (its starting cursor is then fixed)."""
    bridges = AssetBridges(store.engine)
    while not await asyncio.to_thread(bridges.bridges, [FEED]):
        await asyncio.sleep(0.02)


def test_every_write_of_a_slot_record_gives_it_the_next_change_number(catalog):
    catalog.record_running(FEED, midnight(16), meta=PARIS, run_id="r1")
    started = seq_of(catalog, midnight(16))
    catalog.record_success(TaskIdentity("other", "partners"), midnight(16), meta=PARIS, run_id="o1")
    assert seq_of(catalog, midnight(16)) == started  # another task's write leaves it alone
    catalog.record_success(FEED, midnight(16), meta=PARIS, run_id="r1")
    done = seq_of(catalog, midnight(16))
    catalog.record_success(FEED, midnight(16), meta=PARIS, run_id="r1")  # a replay changes nothing
    assert started < done == seq_of(catalog, midnight(16))


async def test_a_new_watcher_publishes_what_completes_after_it_starts_in_commit_order(catalog):
    await asyncio.to_thread(catalog.record_success, FEED, midnight(10), meta=PARIS, run_id="before")
    events = Events(watcher())
    first = asyncio.ensure_future(events.next())
    await registered(catalog)
    for day in (17, 16):  # completed out of order: published in the order the catalog committed them
        await asyncio.to_thread(catalog.record_success, FEED, midnight(day), meta=PARIS, run_id=f"r{day}")
    got = [await first, await events.next()]
    await events.close()
    assert [(e["slot"], e["partition_key"], e["revision"], e["repair"]) for e in got] == [
        (midnight(17).isoformat(), "2026-11-17T00:00:00", 1, False),
        (midnight(16).isoformat(), "2026-11-16T00:00:00", 1, False),
    ]
    assert [Cursor.decode(e["cursor"]).seq for e in got] == [
        seq_of(catalog, midnight(17)),
        seq_of(catalog, midnight(16)),
    ]


async def test_only_completions_are_published_and_a_completed_slot_run_again_is_a_repair(catalog):
    events = Events(watcher())
    first = asyncio.ensure_future(events.next())
    await registered(catalog)
    slot = midnight(18)
    await asyncio.to_thread(catalog.record_running, FEED, slot, meta=PARIS, run_id="r1")
    await asyncio.to_thread(catalog.record_finished, FEED, slot, "failed", meta=PARIS, run_id="r1")
    await asyncio.to_thread(catalog.record_success, FEED, slot, meta=PARIS, run_id="r2")
    completed = await first
    assert (completed["revision"], completed["run_id"]) == (1, "r2")
    await asyncio.to_thread(catalog.record_running, FEED, slot, meta=PARIS, run_id="r3")
    assert await events.none_within(0.5)  # a slot being re-run is not a completion
    await asyncio.to_thread(catalog.record_success, FEED, slot, meta=PARIS, run_id="r3")
    repair = await events.next()
    await events.close()
    assert (repair["slot"], repair["revision"], repair["repair"], repair["run_id"]) == (slot.isoformat(), 2, True, "r3")


async def test_a_watcher_resumed_after_its_poll_loop_ended_still_publishes(catalog):
    events = Events(watcher())
    first = asyncio.ensure_future(events.next())
    await registered(catalog)
    await asyncio.to_thread(catalog.record_success, FEED, midnight(18), meta=PARIS, run_id="r18")
    assert (await first)["slot"] == midnight(18).isoformat()
    # The triggerer holds the watcher at its event until Airflow takes it: nothing waits on the poll loop
    # meanwhile, and the loop ends. The watcher then subscribes again on its next step.
    loop = id(asyncio.get_running_loop())
    while any(key[0] == loop and key[-1] == "completions" for key in CatalogPoller._shared):
        await asyncio.sleep(0.01)
    await asyncio.to_thread(catalog.record_success, FEED, midnight(19), meta=PARIS, run_id="r19")
    assert (await events.next())["slot"] == midnight(19).isoformat()
    await events.close()


async def test_from_slot_also_publishes_the_completed_history_from_that_slot_on(catalog):
    for day in (12, 13, 14):
        await asyncio.to_thread(catalog.record_success, FEED, midnight(day), meta=PARIS, run_id=f"r{day}")
    events = Events(watcher(from_slot=midnight(13).isoformat()))
    got = [await events.next(), await events.next()]
    assert await events.none_within(0.5)
    await events.close()
    assert [e["partition_key"] for e in got] == ["2026-11-13T00:00:00", "2026-11-14T00:00:00"]


async def test_a_restarted_watcher_resumes_after_the_cursor_the_catalog_holds(catalog):
    events = Events(watcher())
    first = asyncio.ensure_future(events.next())
    await registered(catalog)
    for day in (20, 21):
        await asyncio.to_thread(catalog.record_success, FEED, midnight(day), meta=PARIS, run_id=f"r{day}")
    published = await first
    await events.close()
    # Airflow committed the first event only: its cursor is what the listener moved the catalog's to.
    bridges = AssetBridges(catalog.engine)
    await asyncio.to_thread(bridges.advance, "airflow", ASSET, Cursor.decode(published["cursor"]), 1)
    again = Events(watcher())
    resumed = await again.next()
    assert await again.none_within(0.5)
    await again.close()
    assert (published["slot"], resumed["slot"]) == (midnight(20).isoformat(), midnight(21).isoformat())


async def test_a_watcher_whose_poll_hits_a_bug_fails_with_the_error_instead_of_waiting(catalog, monkeypatch):
    events = Events(watcher())
    first = asyncio.ensure_future(events.next())
    await registered(catalog)

    def broken(self, store, since, names):
        raise KeyError("slot_key")

    monkeypatch.setattr(PollGroup, "_changes", broken)
    await asyncio.to_thread(catalog.record_success, FEED, midnight(17), meta=PARIS, run_id="r17")
    with pytest.raises(KeyError, match="slot_key"):
        await first
