"""One catalog poll per tick for every waiting gate in a triggerer process, incremental.

Triggers subscribe the requests they wait on (``(parent, child interval)`` pairs for the default
``snapshot`` read; run-condition gates also share ``slot_records`` and ``latest_runs``, asset watchers
``completions``). One poll loop per event loop, catalog and poll interval
(:class:`~airflow_leastaction.triggers.poll_group.PollGroup`) asks the catalog once per tick, for every
read kind, which tasks changed since its last tick (:func:`airflow_leastaction.catalog.changes.changed_tasks`:
one statement, one row of NULLs when nothing changed). Per read kind (a :class:`CatalogPoller`), only the
tasks that changed, and the tasks of subscriptions that are new, are read again (one more statement), in a
worker thread so the event loop never blocks;
each subscriber whose tasks changed is handed a value that holds what the store's full read of its own
requests would return (:mod:`~airflow_leastaction.triggers.poll_views`). The others keep their snapshot: a subscriber
awaiting :meth:`Subscription.next` gets the same object again each tick (run-condition gates also read
Airflow's task states each tick), one awaiting :meth:`Subscription.next_change` (the interval gates,
through :func:`next_until`) is not woken at all.

While the catalog cannot be reached the poll loop keeps polling, backing off up to
:data:`~airflow_leastaction.triggers.poll_group.OUTAGE_BACKOFF_CAP`, and hands each subscriber the error
instead of a snapshot; once it answers again every subscription is read in full.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from contextlib import asynccontextmanager

from airflow_leastaction.catalog.snapshots import task_snapshot
from airflow_leastaction.catalog.store import CatalogStore
from airflow_leastaction.config import setting
from airflow_leastaction.exceptions import ConfigurationError
from airflow_leastaction.gating.admission import gate_mode
from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.triggers.poll_group import PollGroup, backoff
from airflow_leastaction.triggers.poll_views import VIEWS, View

log = logging.getLogger(__name__)

Request = tuple[TaskIdentity, dt.datetime]


class Subscription:
    """A trigger's view of the poller: await :meth:`next` for each tick's snapshot, or
    :meth:`next_change` for the next one that differs.

    Ten thousand of these wait in one triggerer, and every full garbage collection walks what they hold:
    slots instead of an instance dict, the poller's own request tuples (shared with every subscriber of the
    same request) instead of copies, and a wait that is one future, not a chain of coroutines.
    """

    __slots__ = ("requests", "_ready", "_waiter", "_latest", "_error", "served", "every_tick", "bell")

    def __init__(self, requests: tuple):
        #: Its distinct requests, each the poller's one object for that request (:meth:`CatalogPoller.join`).
        self.requests = requests
        # A delivery not taken yet, and the future of a wait for one: what an asyncio.Event does, without
        # the Event's deque per waiting trigger.
        self._ready = False
        self._waiter: asyncio.Future | None = None
        self._latest = None
        self._error: BaseException | None = None
        self.served = False  # read in full once (a new subscription is, on the next tick)
        #: Woken every tick (``next``) or only when its snapshot changed (``next_change``).
        self.every_tick = True
        #: Rung by the next delivery (:func:`until_handed`): a gate asleep on several subscriptions at once.
        self.bell: asyncio.Future | None = None

    def deliver(self, snapshot, error: BaseException | None) -> None:
        self._latest, self._error = snapshot, error
        bell = self.bell
        if bell is not None and not bell.done():
            bell.set_result(None)
        waiter = self._waiter
        if waiter is not None and not waiter.done():  # handed over now: nothing left to take
            self._waiter = None
            if error is None:
                waiter.set_result(snapshot)
            else:
                waiter.set_exception(error)
        else:
            self._ready = True

    def next(self) -> asyncio.Future:
        """The snapshot of the next tick (the same object when nothing it reads changed); raises the
        poll's error if it failed."""
        self.every_tick = True
        return self._next()

    def next_change(self) -> asyncio.Future:
        """The next snapshot that may differ from the last one returned: the first one, one after a
        change to a task its requests name, after a failed poll (raised) or after the deployment's gate
        mode changed. Idle ticks never wake it."""
        self.every_tick = False
        return self._next()

    def _next(self) -> asyncio.Future:
        waiter = asyncio.get_running_loop().create_future()
        if self._ready:  # delivered while nobody waited
            self._ready = False
            if self._error is None:
                waiter.set_result(self._latest)
            else:
                waiter.set_exception(self._error)
        else:
            self._waiter = waiter  # a wait cancelled meanwhile (a deadline) leaves the next delivery ready
        return waiter

    def take(self):
        """What it holds now, without waiting: the delivery not taken yet, else the last one taken (raises
        the poll's error if that is what it was handed)."""
        self._ready = False
        if self._error is not None:
            raise self._error
        return self._latest


async def until_handed(subs, until: dt.datetime | None) -> None:
    """Sleep until one of ``subs`` is handed something (a change, an error: idle ticks hand nothing to a
    subscription not woken every tick) or ``until`` comes (None: no instant); :meth:`Subscription.take`
    then reads each. A gate that judged its reads as they are waits here, not tick after tick."""
    if any(sub._ready for sub in subs):
        return
    bell = asyncio.get_running_loop().create_future()
    for sub in subs:
        sub.every_tick, sub.bell = False, bell
    timeout = None if until is None else max(0.0, (until - dt.datetime.now(dt.UTC)).total_seconds())
    try:
        await asyncio.wait_for(bell, timeout)
    except TimeoutError:
        pass
    finally:
        for sub in subs:
            sub.bell = None


async def look(subs, unread: tuple, until: dt.datetime | None, asleep: bool) -> tuple:
    """One look of a gate at each of ``subs`` (None: a read it does not make, ``unread``'s value instead):
    awake, each one's next tick; asleep, what each holds once one of them is handed something or ``until``
    comes (:func:`until_handed`)."""
    if asleep:
        await until_handed([s for s in subs if s is not None], until)
        return tuple(gone if s is None else s.take() for s, gone in zip(subs, unread, strict=True))
    return tuple([gone if s is None else await s.next() for s, gone in zip(subs, unread, strict=True)])


class DeadlineReached(Exception):
    """Raised by :func:`next_until` when the deadline passes before the next snapshot."""


async def next_until(sub: Subscription, deadline: dt.datetime | None):
    """``sub.next_change()``, unless ``deadline`` passes first: a wait's deadline never depends on the
    catalog answering (during an outage polls back off and may be a minute apart)."""
    if deadline is None:
        return await sub.next_change()
    remaining = (deadline - dt.datetime.now(dt.UTC)).total_seconds()
    if remaining <= 0:
        raise DeadlineReached()
    try:
        return await asyncio.wait_for(sub.next_change(), remaining)
    except TimeoutError:
        raise DeadlineReached() from None


class CatalogPoller:
    """The subscribers of one read kind of a poll loop (:class:`PollGroup`), shared per (event loop, catalog
    URL, poll interval, read kind). Made directly, it has a poll loop of its own."""

    _shared: dict[tuple, CatalogPoller] = {}

    def __init__(self, url: str, interval: float, read: str = "snapshot"):
        if read not in VIEWS:
            raise ValueError(f"unknown catalog read {read!r}: expected one of {', '.join(sorted(VIEWS))}")
        self.url = url
        self.interval = interval
        # The CatalogStore read whose result each subscriber is handed (for its own requests).
        self.read = read
        self.ticks = 0
        self._subs: dict[int, Subscription] = {}
        self._new: dict[int, Subscription] = {}  # not read in full yet
        # Subscribers gone since the last tick, whose requests the next tick takes off the books: a trigger
        # leaves right after it fires, and ten thousand released by one tick would otherwise each pay for
        # their bookkeeping before the next one fires. Held until then, so no new subscriber gets one's id.
        self._leaving: list[Subscription] = []
        self._watching: dict[TaskIdentity, dict[int, Subscription]] = {}
        # Per watched task, its subscribers' distinct requests (with how many subscribers make each): kept as
        # subscribers come and go, so a tick never walks every subscriber's requests.
        self._requests: dict[TaskIdentity, dict[Request, int]] = {}
        # Per watched task, its distinct requests as one frozenset, made again only when they change: a tick
        # re-reading 10,000 tasks hands the view the same objects, whose hashes (and what the view derives
        # from them) are kept.
        self._distinct: dict[TaskIdentity, frozenset] = {}
        # Each distinct request's one tuple, shared by every subscriber that makes it.
        self._canonical: dict[Request, Request] = {}
        # Each watched task's one identity object, by its key: a changed row finds it in one lookup (none:
        # nobody here watches it), and the poller's own dicts hold one object per task, so a lookup finds
        # its key by identity instead of comparing fields.
        self._by_key: dict[tuple[str, str, str, str], TaskIdentity] = {}
        self._view: View = VIEWS[read]()
        self._gates: str | None = None  # the deployment's gate mode as the last tick saw it
        self._key: tuple | None = None
        self._group = PollGroup(url, interval)  # a loop of its own, until shared() puts it in a shared one
        self._group.channels[read] = self

    @classmethod
    def shared(cls, url: str, interval: float, read: str = "snapshot") -> CatalogPoller:
        key = (id(asyncio.get_running_loop()), url, float(interval))
        if read != "snapshot":
            key += (read,)
        poller = cls._shared.get(key)
        if poller is None:
            poller = cls._shared[key] = cls(url, float(interval), read)
            poller._key = key
            poller._group = PollGroup.shared(url, float(interval))
            poller._group.channels[read] = poller
        return poller

    @property
    def _task(self) -> asyncio.Task | None:
        """The poll loop's task (its group's, shared with the other read kinds)."""
        return self._group._task

    @property
    def subscribers(self) -> int:
        return len(self._subs)

    @asynccontextmanager
    async def subscribe(self, requests: list[Request]):
        """A subscription to ``requests`` for the time of the ``async with`` block (:meth:`join`, :meth:`leave`)."""
        sub = self.join(requests)
        try:
            yield sub
        finally:
            self.leave(sub)

    def join(self, requests: list[Request]) -> Subscription:
        """Subscribe to ``requests``: read in full on the next tick, then woken as :class:`Subscription` says.
        Every ``join`` needs its :meth:`leave`. A poller whose loop ended (nobody was subscribed) takes no
        one: a subscriber would wait for ever on a loop that polls for others; ask :meth:`shared` again."""
        if self._group.channels.get(self.read) is not self:
            raise RuntimeError(f"{self.read} poller ended with nobody subscribed: join CatalogPoller.shared() anew")
        view, by_key, canonical = self._view, self._by_key, self._canonical
        # The subscriber's distinct requests, each the poller's one object for it, naming its task by the
        # poller's one identity object: a waiting trigger holds no copy of its own.
        mine = []
        for r in dict.fromkeys(requests):
            ident = view.identity(r)
            key = (ident.name, ident.project, ident.account, ident.partition)
            own = by_key.get(key)
            if own is None:  # a plain identity: a parent helper's coverage is the subscriber's, not the task's
                own = by_key[key] = TaskIdentity(*key)
                self._watching[own] = {}
            r = view.keyed(r, own)
            r = canonical.setdefault(r, r)
            mine.append(r)
            counts = self._requests.setdefault(own, {})
            if r not in counts:
                self._distinct.pop(own, None)
            counts[r] = counts.get(r, 0) + 1
        sub = Subscription(tuple(mine))
        self._subs[id(sub)] = self._new[id(sub)] = sub
        for ident in self._identities(sub):
            self._watching[ident][id(sub)] = sub
        self._group.wake()
        return sub

    def _identities(self, sub: Subscription) -> dict[TaskIdentity, None]:
        """The distinct tasks ``sub``'s requests read (the poller's identity objects), in order."""
        identity = self._view.identity
        return dict.fromkeys(identity(r) for r in sub.requests)

    def leave(self, sub: Subscription) -> None:
        """End ``sub``: nothing is delivered to it any more; its requests leave the books on the next tick."""
        if self._subs.pop(id(sub), None) is not None:
            self._new.pop(id(sub), None)
            self._leaving.append(sub)

    def _drop_leaving(self) -> None:
        leaving, self._leaving = self._leaving, []
        for sub in leaving:
            self._unsubscribe(sub)

    def _unsubscribe(self, sub: Subscription) -> None:
        watching, requests, identity = self._watching, self._requests, self._view.identity
        for r in sub.requests:
            counts = requests.get(identity(r))
            made = counts.get(r) if counts is not None else None
            if made is None:
                continue
            if made > 1:
                counts[r] = made - 1
            else:  # nobody else makes it
                del counts[r]
                self._canonical.pop(r, None)
                self._distinct.pop(identity(r), None)
        for ident in self._identities(sub):
            watchers = watching.get(ident)
            if watchers is None or watchers.pop(id(sub), None) is None or watchers:
                continue
            # nobody reads this task any more: neither polled nor kept
            del watching[ident]
            requests.pop(ident, None)
            self._distinct.pop(ident, None)
            self._by_key.pop((ident.name, ident.project, ident.account, ident.partition), None)
            self._view.forget(ident)

    def _watched_names(self) -> list[str]:
        """The names of the tasks it watches (read in the tick's thread: a copy of the keys, taken at once)."""
        return [key[0] for key in list(self._by_key)]

    def _request_set(self, ident: TaskIdentity) -> frozenset:
        """The distinct requests of ``ident``'s subscribers (the same object until they change)."""
        distinct = self._distinct.get(ident)
        if distinct is None:
            distinct = self._distinct[ident] = frozenset(self._requests.get(ident, ()))
        return distinct

    def _delay(self, failures: int) -> float:
        """Seconds to the next poll after ``failures`` failed polls in a row (:func:`backoff`)."""
        return backoff(self.interval, failures)

    async def _tick(self, store: CatalogStore) -> None:
        """One tick of the poll loop this read kind belongs to (:meth:`PollGroup._tick`)."""
        await self._group._tick(store)

    async def _apply(self, store: CatalogStore, rows: list, since: int | None, new: list[Subscription]) -> None:
        """This read kind's part of a tick: given the rows of the tick's change statement, re-read only the
        watched tasks that changed and those of new subscriptions (one statement), and hand the subscribers
        whose tasks changed their new value."""
        tasks, changed = await asyncio.to_thread(self._snapshots, rows, since)
        new_idents = {i for sub in new for i in self._identities(sub)}
        fresh = (changed | new_idents) & self._watching.keys()
        if fresh:
            requests = {i: self._request_set(i) for i in fresh}
            present = {i: tasks[i] for i in fresh if i in tasks}
            data = await asyncio.to_thread(self._details, store, present, requests) if present else {}
            self._view.update(fresh & self._watching.keys(), present, data)  # not what was left meanwhile
        self._deliver(new, changed)

    def _deliver(self, new: list[Subscription], changed: set[TaskIdentity]) -> None:
        read_now = {id(sub): sub for sub in new}  # the new subscriptions this tick read in full
        woken = dict(read_now)
        for ident in changed:
            woken.update(self._watching.get(ident, {}))
        try:
            gates = gate_mode()
        except ConfigurationError:  # not a mode: the gates woken by the change each judge it and say so
            gates = setting("gates", "")
        if self._gates is not None and gates != self._gates:  # every waiting gate judges the new mode
            woken.update(self._subs)
        self._gates = gates
        for key, sub in woken.items():
            # Not one that joined mid-tick: its tasks may not have been read yet; the next tick reads them.
            if key in self._subs and (sub.served or key in read_now):
                sub.served = True
                self._new.pop(key, None)
                sub.deliver(self._view.build(sub.requests), None)
        for key, sub in self._subs.items():
            if sub.every_tick and sub.served and key not in woken:
                sub.deliver(sub._latest, None)

    def _snapshots(self, rows: list, since: int | None) -> tuple[dict, set[TaskIdentity]]:
        """The watched tasks among the tick's rows, as snapshots, and those of them that changed after
        ``since``: rows become snapshots in the read's thread, and a task nobody here watches is skipped."""
        by_key = self._by_key
        tasks: dict[TaskIdentity, object] = {}
        changed: set[TaskIdentity] = set()
        for row in rows:
            ident = by_key.get((row.name, row.project, row.account or "", row.partition or ""))
            if ident is None:  # a task nobody here watches: not even its snapshot is built
                continue
            tasks[ident] = task_snapshot(row, ident)
            if since is not None and row.change_seq > since:
                changed.add(ident)
        return tasks, changed

    def _details(self, store: CatalogStore, tasks: dict, requests: dict):
        with store.poll_read() as conn:
            return self._view.read(conn, tasks, requests)

    def _reset(self) -> None:
        """After a failed poll every subscriber is read in full again (:meth:`PollGroup._fail`)."""
        self._view = VIEWS[self.read]()
        for key, sub in self._subs.items():
            sub.served = False
            self._new[key] = sub

    def _ended(self) -> None:
        """The poll loop ended with nobody subscribed: a later subscriber gets a new shared poller."""
        if self._shared.get(self._key) is self:
            del self._shared[self._key]
