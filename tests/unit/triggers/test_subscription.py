"""What a waiting trigger sees of its subscription to the shared poll: each delivery once, in order, an
error raised where it waits, and nothing lost to a wait that ended early."""

from __future__ import annotations

import asyncio

import pytest

from airflow_leastaction.triggers.poller import Subscription


async def test_a_delivery_made_while_nobody_waits_is_handed_to_the_next_wait():
    sub = Subscription(())
    sub.deliver("first", None)
    assert await sub.next_change() == "first"
    waiting = asyncio.ensure_future(sub.next_change())
    await asyncio.sleep(0)
    assert not waiting.done()  # taken once: the next wait waits for the next delivery
    sub.deliver("second", None)
    assert await waiting == "second"


async def test_a_wait_ended_by_its_deadline_leaves_the_next_delivery_for_the_next_wait():
    sub = Subscription(())
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(sub.next_change(), 0.01)
    sub.deliver("late", None)
    assert await sub.next_change() == "late"


async def test_a_failed_poll_is_raised_where_the_trigger_waits():
    sub = Subscription(())
    waiting = asyncio.ensure_future(sub.next())
    await asyncio.sleep(0)
    sub.deliver(None, ConnectionError("catalog down"))
    with pytest.raises(ConnectionError, match="catalog down"):
        await waiting
    sub.deliver(None, ConnectionError("still down"))  # nobody waiting: the next wait raises it
    with pytest.raises(ConnectionError, match="still down"):
        await sub.next()
