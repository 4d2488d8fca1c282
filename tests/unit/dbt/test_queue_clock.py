"""The queue's one clock: a drain waiting for held work waits on it, so a test's clock decides when the
wait ends, never the machine's speed."""

from __future__ import annotations

import asyncio
import datetime as dt

from airflow_leastaction.dbt import queue_clock
from airflow_leastaction.triggers.held_work import HeldWorkTrigger
from tests.helpers.dbt_queue import ManualClock

T = dt.datetime(2026, 11, 29, 9, tzinfo=dt.UTC)


async def first_event(trigger: HeldWorkTrigger):
    async for event in trigger.run():
        return event


def test_the_held_work_trigger_fires_when_the_queue_clock_reaches_its_wake_time():
    clock = ManualClock(T)
    trigger = HeldWorkTrigger((T + dt.timedelta(seconds=90)).isoformat(), {"earlier": {"rounds": 1}})
    with queue_clock.using(clock):
        event = asyncio.run(first_event(trigger))
    assert event.payload == {"earlier": {"rounds": 1}}
    assert clock.now() == T + dt.timedelta(seconds=90)  # it waited the hold out, on the queue's clock


def test_the_queue_clock_is_the_systems_outside_a_test_clock():
    with queue_clock.using(ManualClock(T)):
        assert queue_clock.utcnow() == T
    before = dt.datetime.now(dt.UTC)
    assert before <= queue_clock.utcnow() <= dt.datetime.now(dt.UTC)


def test_the_held_work_trigger_round_trips_through_its_serialization():
    trigger = HeldWorkTrigger(T.isoformat(), {"earlier": {"rounds": 2}})
    path, kwargs = trigger.serialize()
    assert path == "airflow_leastaction.triggers.held_work.HeldWorkTrigger"
    assert HeldWorkTrigger(**kwargs).serialize() == (path, kwargs)
