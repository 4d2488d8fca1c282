"""The trigger behind a :class:`~airflow_leastaction.operators.dbt_queue.DbtDrainOperator` waiting for held work."""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator
from typing import Any

from airflow.triggers.base import BaseTrigger, TriggerEvent

from airflow_leastaction.dbt import queue_clock
from airflow_leastaction.triggers.trigger_log import ClassLog


class HeldWorkTrigger(ClassLog, BaseTrigger):
    """Fire at ``wake_at`` (when work a tier held back becomes eligible), handing ``carry`` back.

    The drain's state travels in the event rather than in the deferral's kwargs: the event is what every
    runner of triggers hands back to the task, ``dag.test()`` included.

    :param wake_at: ISO-8601 instant at which to fire.
    :param carry: what the drain needs to go on (the report of its rounds so far).
    """

    def __init__(self, wake_at: str, carry: dict[str, Any]):
        super().__init__()
        self.wake_at, self.carry = wake_at, carry

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return f"{type(self).__module__}.{type(self).__qualname__}", {
            "wake_at": self.wake_at,
            "carry": self.carry,
        }

    async def run(self) -> AsyncIterator[TriggerEvent]:
        wake = dt.datetime.fromisoformat(self.wake_at)
        # Short sleeps, re-reading the clock: a clock that jumps does not make the drain oversleep.
        while (left := (wake - queue_clock.utcnow()).total_seconds()) > 0:
            await queue_clock.sleep(min(left, 30.0))
        yield TriggerEvent(self.carry)
