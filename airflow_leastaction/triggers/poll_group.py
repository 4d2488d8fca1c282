"""One tick for every read kind of a triggerer's catalog poll: the interval gates' snapshots, the
run-condition gates' slot records and latest runs, the asset watchers' completions; and, on the same tick,
the run-condition gates' questions to Airflow about their runs' task states
(:mod:`~airflow_leastaction.triggers.run_states`: no catalog read, one question per DAG).

A :class:`PollGroup` per (event loop, catalog URL, poll interval) runs the poll loop. Each tick it asks the
catalog once which tasks changed since its last tick (and reads the tasks of new subscriptions), however
many read kinds (channels, :class:`~airflow_leastaction.triggers.poller.CatalogPoller`) have subscribers;
then each channel whose watched tasks changed reads their data (one more statement per such channel) and
wakes its subscribers. An idle triggerer sends one statement per tick, whatever waits in it.

A group without a catalog URL runs the channels that read no catalog alone (the run-outcome triggers'
questions to Airflow): its tick sends no statement.

The group knows its channels only by what they do (it imports no poller): a channel is taken off the
books, and names what it reads, through the methods :meth:`PollGroup._tick` and :meth:`PollGroup._run`
call on it.
"""

from __future__ import annotations

import asyncio
import logging

from airflow_leastaction.catalog.changes import changed_tasks
from airflow_leastaction.catalog.engine import aresolve_url, is_outage, shown_url
from airflow_leastaction.catalog.snapshots import task_columns
from airflow_leastaction.catalog.store import CatalogStore
from airflow_leastaction.hooks.catalog import store_at

log = logging.getLogger(__name__)

#: Longest pause between two polls of an unreachable catalog: 12 poll intervals, at most 60 seconds
#: (never less than one interval), so a catalog that returns is seen soon after.
OUTAGE_BACKOFF_CAP = 60.0
OUTAGE_BACKOFF_INTERVALS = 12


def backoff(interval: float, failures: int) -> float:
    """Seconds to the next poll: the interval, doubled per failed poll in a row up to a cap, so an outage
    costs a few connection attempts a minute, not one per tick per triggerer."""
    if not failures:
        return interval
    cap = max(interval, min(OUTAGE_BACKOFF_CAP, OUTAGE_BACKOFF_INTERVALS * interval))
    return min(interval * 2 ** min(failures, 16), cap)


class PollGroup:
    """The poll loop of one (event loop, catalog URL, poll interval), for all its read kinds (URL None: no
    catalog, for channels that read none)."""

    _shared: dict[tuple, PollGroup] = {}

    def __init__(self, url: str | None, interval: float):
        self.url = url
        self.interval = interval
        #: Per read kind, its channel.
        self.channels: dict = {}
        self.ticks = 0
        self._since: int | None = None  # the change counter as the last tick read it
        self._task: asyncio.Task | None = None
        self._key: tuple | None = None

    @classmethod
    def shared(cls, url: str | None, interval: float) -> PollGroup:
        key = (id(asyncio.get_running_loop()), url, float(interval))
        group = cls._shared.get(key)
        if group is None:
            group = cls._shared[key] = cls(url, float(interval))
            group._key = key
        return group

    def wake(self) -> None:
        """Run the poll loop (again) if it is not running: a channel got a subscriber."""
        if self._task is None or self._task.done():
            name = f"leastaction-poller {self._name()}"  # asyncio shows task names: never the password
            self._task = asyncio.get_running_loop().create_task(self._run(), name=name)

    def _waiting(self) -> bool:
        return any(channel.subscribers for channel in self.channels.values())

    async def _poll(self, store: CatalogStore | None) -> CatalogStore | None:
        """One tick; the engine is created (and its schema checked) on the first poll that can."""
        if store is None and self.url is not None:
            store = await asyncio.to_thread(store_at, self.url)
        await self._tick(store)
        return store

    async def _tick(self, store: CatalogStore) -> None:
        """Ask which tasks changed since the last tick, and read the tasks new subscriptions watch (one
        statement for every channel); then each channel re-reads what changed of its own and delivers."""
        channels = list(self.channels.values())
        for channel in channels:
            channel._drop_leaving()
        news = {channel.read: list(channel._new.values()) for channel in channels}
        names = {i.name for channel in channels for sub in news[channel.read] for i in channel._identities(sub)}
        rows, high = await asyncio.to_thread(self._changes, store, self._since, names) if store else ([], None)
        for channel in channels:
            await channel._apply(store, rows, self._since, news[channel.read])
        self._since = high

    def _changes(self, store: CatalogStore, since: int | None, names: set[str]) -> tuple[list, int]:
        """The tick's first statement: the rows of the tasks changed after ``since`` that a channel watches
        (read only when a task changed), or named in ``names``, and the change counter
        (:func:`~airflow_leastaction.catalog.changes.changed_tasks`)."""
        channels = list(self.channels.values())

        def watched() -> set[str]:  # in this thread, while the event loop may add subscribers: copies first
            return {name for channel in channels for name in list(channel._watched_names())}

        with store.poll_read() as conn:
            return changed_tasks(conn, task_columns(), since, names, watched)

    def _fail(self, error: BaseException) -> None:
        """A failed poll: every channel reads its subscriptions in full again (the catalog that returns may
        not be the one that left: restored from a backup, its change counter behind), and every subscriber
        hears about the error and keeps waiting."""
        self._since = None
        for channel in list(self.channels.values()):
            channel._reset()
            for sub in list(channel._subs.values()):
                sub.deliver(None, error)

    async def _run(self) -> None:
        # Never gives up while anyone waits: an unreachable catalog (engine creation, schema check or a
        # read failing) is delivered to every subscriber and polled again with back-off until it returns.
        store, failures = None, 0
        try:
            while self._waiting():
                try:
                    store = await self._poll(store)
                    error = None
                except Exception as exc:  # every subscriber hears about it: an outage keeps it waiting, a bug ends it
                    error = exc
                    self._fail(exc)
                reads = ", ".join(sorted(self.channels))
                if error is not None and not is_outage(error):
                    log.error("catalog %s poll failed (%s poll), not an outage: %r", self._name(), reads, error)
                elif error is not None and not failures:
                    log.warning(
                        "catalog %s unreachable (%s poll), polling again with back-off: %s", self._name(), reads, error
                    )
                elif error is None and failures:
                    log.warning(
                        "catalog %s reachable again (%s poll) after %d failed polls", self._name(), reads, failures
                    )
                failures = failures + 1 if error is not None else 0
                self.ticks += 1
                for channel in self.channels.values():
                    channel.ticks += 1
                await asyncio.sleep(backoff(self.interval, failures))
        finally:
            for read, channel in list(self.channels.items()):
                if not channel.subscribers:
                    channel._ended()
                    del self.channels[read]
            if not self.channels and self._shared.get(self._key) is self:
                del self._shared[self._key]

    def _name(self) -> str:
        return shown_url(self.url) if self.url is not None else "(no catalog)"


async def readable_catalog_url(conn_id: str | None, interval: float, log) -> str:
    """The catalog's URL once its connection can be read: a look-up that fails (a secrets backend down)
    keeps the trigger waiting, said once and tried again with back-off; any other error ends it."""
    failures = 0
    while True:
        try:
            url = await aresolve_url(conn_id)
        except Exception as exc:
            if not is_outage(exc):
                raise
            if not failures:
                log.warning("waiting for the catalog connection: %s", exc)
            failures += 1
            await asyncio.sleep(backoff(interval, failures))
            continue
        if failures:
            log.warning("catalog connection read after %d failed look-ups", failures)
        return url
