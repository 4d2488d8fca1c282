"""Early warnings in the triggerer's wait loop, on a real catalog: a run-condition gate's trigger warns
about a late feed, then clears the warning when the feed lands (a change of what it reads wakes it); a
sensor's trigger calls a sync callback in a thread, the event loop running meanwhile.

Each trigger runs as the triggerer runs it (its ``run()`` on an event loop); the test waits on what the
catalog shows, then stops it: these tests are about the warning, not the admission."""

from __future__ import annotations

import asyncio
import datetime as dt

import pytest
from sqlalchemy import select
from sqlalchemy.exc import OperationalError

from airflow_leastaction.airflow_seam.deadline_watch import DeadlineWatch
from airflow_leastaction.catalog.deadline_warnings import WarningKey
from airflow_leastaction.catalog.schema import deadline_warning
from airflow_leastaction.gating.deadline_warning import DeadlineWarning
from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.run_conditions.model import Dependency
from airflow_leastaction.triggers.parent_interval import ParentIntervalTrigger
from tests.helpers import deadline_warnings as dw
from tests.helpers.triggers import gate_trigger

UTC = dt.UTC
H = dt.timedelta(hours=1)
MIN = dt.timedelta(minutes=1)
FEED = TaskIdentity("dwt_feed", "feeds")
REPORT = TaskIdentity("dwt_report", "marts")


@pytest.fixture
def markers(tmp_path, monkeypatch):
    """Where the callbacks say they were called."""
    monkeypatch.setenv("RC_MARKERS", str(tmp_path))
    return tmp_path


def late_feed(store, at: dt.timedelta) -> tuple[dt.datetime, dt.datetime]:
    """The usual history (the feed takes 3 h, the report 2 h), today's slot ``at`` before now, and the feed
    running since five minutes ago: its report is expected about 5 h from now."""
    now = dw.whole_minute(dt.datetime.now(UTC))
    slot = now - at
    dw.history(store, FEED, REPORT, slot, feed_done=H, feed_takes=3 * H, report_takes=2 * H)
    store.record_running(FEED, slot, meta=dw.FEED_META, at=now - 5 * MIN)
    return slot, now


def watch(slot: dt.datetime, callback: str, kind: str, **declared) -> dict:
    key = WarningKey("dwt", "manual__1", "report__gate", -1, slot + 6 * H)
    spec = {"kind": kind, "path": f"tests.helpers.deadline_warnings.{callback}", "kwargs": {}}
    return DeadlineWatch(
        DeadlineWarning("06:00", callback=spec), key, REPORT, slot, task="report", **declared
    ).as_dict()


async def until(condition) -> None:
    while not await asyncio.to_thread(condition):
        await asyncio.sleep(0.05)  # polling what the catalog shows


def state(store):
    with store.engine.connect() as conn:
        return conn.execute(select(deadline_warning.c.state)).scalar()


async def running(trigger, *steps) -> None:
    """Run ``trigger`` while ``steps`` (coroutine functions) run one after the other; then stop it. A
    trigger that ends meanwhile fails the test with what it fired or raised."""
    task = asyncio.create_task(anext(trigger.run()))
    try:
        for step in steps:
            current = asyncio.create_task(step())
            await asyncio.wait({task, current}, return_when=asyncio.FIRST_COMPLETED)
            if task.done():
                current.cancel()
                pytest.fail(f"the trigger ended while it waited: {task.exception() or task.result()!r}")
            await current
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


class TestARunConditionGatesTrigger:
    async def test_it_warns_about_a_late_feed_and_clears_once_the_feed_lands(
        self, store, catalog_url, use_catalog, markers
    ):
        use_catalog(catalog_url)
        slot, _ = late_feed(store, 3 * H)  # the feed is expected ~06:00, the report ~08:00
        declare = {
            "parents": [FEED.as_dict()],
            "meta": {"cron": None, "timezone": "UTC", "dag_id": None, "task_id": None},
        }
        trigger = gate_trigger(
            dependencies=[Dependency(FEED).as_dict()],
            slot=slot.isoformat(),
            max_wait=8 * 3600.0,
            warning=watch(slot, "tell", "async", declare=declare),
        )

        async def land():
            await asyncio.to_thread(store.record_success, FEED, slot, meta=dw.FEED_META)

        await running(
            trigger,
            lambda: until(lambda: state(store) == "warned"),
            land,
            lambda: until(lambda: state(store) == "cleared"),
        )
        (told,) = dw.calls()
        assert (told["kind"], told["warning"]["gate"], told["warning"]["critical_path"]) == (
            "async",
            "report__gate",
            [str(FEED)],
        )
        assert [p.name for p in store_parents(store)] == [FEED.name]  # declared by the first look


def store_parents(store):
    from airflow_leastaction.catalog.declared_parents import parse_parents

    return parse_parents(store.get_task(REPORT)["parents"])


class TestASensorsTrigger:
    async def test_a_sync_callback_runs_in_a_thread_while_the_event_loop_goes_on(
        self, store, catalog_url, use_catalog, markers
    ):
        use_catalog(catalog_url)
        store.declare_parents(REPORT, dw.ADHOC, [FEED])
        slot, _ = late_feed(store, 3 * H)
        dw.CALLBACK_STARTED.clear()
        dw.LOOP_RAN.clear()
        trigger = ParentIntervalTrigger(
            parents=[FEED.as_dict()], child_interval=slot.isoformat(), poll_interval=0.05,
            warning=watch(slot, "hold_the_thread", "sync"),
        )  # fmt: skip

        async def meanwhile():
            while not dw.CALLBACK_STARTED.is_set():
                await asyncio.sleep(0.01)
            dw.LOOP_RAN.set()  # only a loop the callback does not block gets here

        async def told():
            await until(lambda: bool(dw.calls()))

        await running(trigger, meanwhile, told, lambda: until(lambda: state(store) == "warned"))
        (call,) = dw.calls()
        assert call["kwargs"] == {"loop_ran_meanwhile": True}


def unreachable_catalog():
    """A catalog whose server is down: nothing listens on its port."""
    from airflow_leastaction.catalog.engine import get_engine
    from airflow_leastaction.catalog.store import CatalogStore

    return CatalogStore(get_engine("postgresql+psycopg2://postgres@127.0.0.1:9/down?connect_timeout=5"))


def test_a_last_call_whose_look_could_not_read_the_catalog_is_made_at_the_next_look(store, catalog_url, use_catalog):
    """The last call is the 5 minutes before the 30-minute lead. A look then that failed (the catalog down)
    has not judged: the next look, inside the lead, makes the last call, and the likely miss is warned."""
    use_catalog(catalog_url)
    store.declare_parents(REPORT, dw.ADHOC, [FEED])
    slot, _ = late_feed(store, 3 * H)
    deadline = slot + 6 * H
    gate = DeadlineWatch.from_dict(watch(slot, "tell", "async", declare={
        "parents": [FEED.as_dict()], "meta": {"cron": None, "timezone": "UTC", "dag_id": None, "task_id": None},
    }))  # fmt: skip
    in_last_call, inside_lead = deadline - 33 * MIN, deadline - 20 * MIN
    assert gate.take_turn(in_last_call)
    with pytest.raises(OperationalError):
        gate.look(unreachable_catalog(), in_last_call)
    assert gate.take_turn(inside_lead)
    notice = gate.look(store, inside_lead)
    assert notice is not None and notice.step == "warn" and state(store) == "warned"
