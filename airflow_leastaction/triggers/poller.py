"""One catalog poll per tick for every waiting gate in a triggerer process.

Triggers subscribe the (parent, child interval) pairs they wait on; a single poller task per event loop,
catalog and poll interval reads one :meth:`CatalogStore.snapshot` for the union of all subscriptions
(two queries, whatever the number of triggers) in a worker thread, so the event loop never blocks, and
hands the same snapshot to every subscriber. ``read`` names the store method that reads the union
(``snapshot`` by default; run-condition gates also share ``slot_records`` and ``latest_runs``).

While the catalog cannot be reached the poller keeps polling, backing off up to
:data:`OUTAGE_BACKOFF_CAP`, and hands each subscriber the error instead of a snapshot.
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

#: Longest pause between two polls of an unreachable catalog: 12 poll intervals, at most 60 seconds
#: (never less than one interval), so a catalog that returns is seen soon after.
OUTAGE_BACKOFF_CAP = 60.0
OUTAGE_BACKOFF_INTERVALS = 12


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


class DeadlineReached(Exception):
    """Raised by :func:`next_until` when the deadline passes before the next snapshot."""


async def next_until(sub: Subscription, deadline: dt.datetime | None):
    """``sub.next()``, unless ``deadline`` passes first: a wait's deadline never depends on the catalog
    answering (during an outage polls back off and may be a minute apart)."""
    if deadline is None:
        return await sub.next()
    remaining = (deadline - dt.datetime.now(dt.UTC)).total_seconds()
    if remaining <= 0:
        raise DeadlineReached()
    try:
        return await asyncio.wait_for(sub.next(), remaining)
    except TimeoutError:
        raise DeadlineReached() from None


class CatalogPoller:
    """The shared poll loop of one (event loop, catalog URL, poll interval)."""

    _shared: dict[tuple, CatalogPoller] = {}

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
    def shared(cls, url: str, interval: float, read: str = "snapshot") -> CatalogPoller:
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

    def _delay(self, failures: int) -> float:
        """Seconds to the next poll: the interval, doubled per failed poll in a row up to a cap, so an
        outage costs a few connection attempts a minute, not one per tick per triggerer."""
        if not failures:
            return self.interval
        cap = max(self.interval, min(OUTAGE_BACKOFF_CAP, OUTAGE_BACKOFF_INTERVALS * self.interval))
        return min(self.interval * 2 ** min(failures, 16), cap)

    async def _poll(self, store: CatalogStore | None, requests: list[Request]):
        """(store, snapshot): the engine is created (and its schema checked) on the first poll that can."""
        if store is None:
            store = CatalogStore(await asyncio.to_thread(get_engine, self.url))
        return store, await asyncio.to_thread(getattr(store, self.read), requests)

    async def _run(self) -> None:
        # Never gives up while anyone waits: an unreachable catalog (engine creation, schema check or a
        # read failing) is delivered to every subscriber and polled again with back-off until it returns.
        store, failures = None, 0
        try:
            while self._subs:
                subs = list(self._subs.values())
                requests = [r for s in subs for r in s.requests]
                try:
                    store, snapshot = await self._poll(store, requests)
                    error = None
                except Exception as exc:  # catalog down: every subscriber hears about it and keeps waiting
                    snapshot, error = None, exc
                if error is not None and not failures:
                    log.warning(
                        "catalog %s unreachable (%s poll), polling again with back-off: %s",
                        self._name(),
                        self.read,
                        error,
                    )
                elif error is None and failures:
                    log.warning(
                        "catalog %s reachable again (%s poll) after %d failed polls", self._name(), self.read, failures
                    )
                failures = failures + 1 if error is not None else 0
                self.ticks += 1
                for sub in subs:
                    sub.deliver(snapshot, error)
                await asyncio.sleep(self._delay(failures))
        finally:
            if not self._subs and self._shared.get(self._key) is self:
                del self._shared[self._key]

    def _name(self) -> str:
        from sqlalchemy.engine import make_url

        return make_url(self.url).render_as_string(hide_password=True)
