"""The dbt queue's clock: the instants a tier's hold is measured with (requests, claims, settles, the drain's
wake-up and the trigger that waits for it) and the waiting itself. One clock for all of them, so that a hold
is decided by one time line; a test can run the queue on a clock it controls (:func:`using`), and a drain
then waits on that clock, never on how fast the machine is."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol


class Clock(Protocol):
    def now(self) -> dt.datetime: ...

    async def sleep(self, seconds: float) -> None: ...


class SystemClock:
    def now(self) -> dt.datetime:
        return dt.datetime.now(dt.UTC)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


_clock: Clock = SystemClock()


def utcnow() -> dt.datetime:
    return _clock.now()


async def sleep(seconds: float) -> None:
    await _clock.sleep(seconds)


@contextmanager
def using(clock: Clock) -> Iterator[Clock]:
    """Run the queue on ``clock`` inside the block (process-wide: the drain, its heartbeat and its trigger)."""
    global _clock
    previous, _clock = _clock, clock
    try:
        yield clock
    finally:
        _clock = previous
