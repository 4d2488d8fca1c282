"""One catalog poll per tick for every waiting gate in a triggerer process.

Triggers subscribe the (parent, child interval) pairs they wait on; a single poller task per event loop,
catalog and poll interval reads one :meth:`CatalogStore.snapshot` for the union of all subscriptions
(two queries, whatever the number of triggers) in a worker thread, so the event loop never blocks, and
hands the same snapshot to every subscriber. ``read`` names the store method that reads the union
(``snapshot`` by default; run-condition gates also share ``slot_records`` and ``latest_runs``).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from contextlib import asynccontextmanager

from airflow_leastaction.catalog.engine import get_engine
from airflow_leastaction.catalog.store import CatalogStore
from airflow_leastaction.identity import TaskIdentity

log = logging.getLogger(__name__)

Request = tuple[TaskIdentity, dt.datetime]


class Subscription:
    """A trigger's view of the poller: await :meth:`next` for each new snapshot."""

    def __init__(self, requests: list[Request]):
        self.requests = requests
        self._ready = asyncio.Event()
        self._latest = None
        self._error: BaseException | None = None

    def deliver(self, snapshot, error: BaseException | None) -> None:
        self._latest, self._error = snapshot, error
        self._ready.set()

    async def next(self):
        """The next snapshot taken after the previous call; raises the poll's error if it failed."""
        await self._ready.wait()
        self._ready.clear()
        if self._error is not None:
            raise self._error
        return self._latest


class CatalogPoller:
    """The shared poll loop of one (event loop, catalog URL, poll interval)."""

    _shared: dict[tuple, "CatalogPoller"] = {}

    def __init__(self, url: str, interval: float, read: str = "snapshot"):
        self.url = url
        self.interval = interval
        # The CatalogStore method that reads the union of all subscriptions' requests in one go.
        self.read = read
        self.ticks = 0
        self._subs: dict[int, Subscription] = {}
        self._task: asyncio.Task | None = None
        self._key: tuple | None = None

    @classmethod
    def shared(cls, url: str, interval: float, read: str = "snapshot") -> "CatalogPoller":
        key = (id(asyncio.get_running_loop()), url, float(interval))
        if read != "snapshot":
            key += (read,)
        poller = cls._shared.get(key)
        if poller is None:
            poller = cls._shared[key] = cls(url, float(interval), read)
            poller._key = key
        return poller

    @property
    def subscribers(self) -> int:
        return len(self._subs)

    @asynccontextmanager
    async def subscribe(self, requests: list[Request]):
        sub = Subscription(list(requests))
        self._subs[id(sub)] = sub
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run(), name=f"leastaction-poller {self.url}")
        try:
            yield sub
        finally:
            self._subs.pop(id(sub), None)

    async def _run(self) -> None:
        try:
            store = CatalogStore(await asyncio.to_thread(get_engine, self.url))
            while self._subs:
                subs = list(self._subs.values())
                requests = [r for s in subs for r in s.requests]
                try:
                    snapshot, error = await asyncio.to_thread(getattr(store, self.read), requests), None
                except Exception as exc:  # catalog down: every subscriber hears about it and keeps waiting
                    snapshot, error = None, exc
                    log.warning("catalog poll failed: %s", exc)
                self.ticks += 1
                for sub in subs:
                    sub.deliver(snapshot, error)
                await asyncio.sleep(self.interval)
        except Exception as exc:  # engine creation failed: tell everyone, then let them resubscribe
            for sub in list(self._subs.values()):
                sub.deliver(None, exc)
        finally:
            if not self._subs and self._shared.get(self._key) is self:
                del self._shared[self._key]
