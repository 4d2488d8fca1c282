"""Incremental polling: an idle tick is one statement; a change re-reads only the task that changed and
wakes only the subscribers that read it; what each subscriber holds is what a full read of its own
requests returns at the same moment; and writers committing concurrently never slip a change past a
reader (on SQLite and PostgreSQL, real transactions and threads)."""

from __future__ import annotations

import asyncio
import datetime as dt
import threading
import time
import uuid
from contextlib import AsyncExitStack

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import event, select, text

from airflow_leastaction.catalog.changes import changed_tasks
from airflow_leastaction.catalog.engine import get_engine
from airflow_leastaction.catalog.schema import task
from airflow_leastaction.catalog.snapshots import wanted_windows
from airflow_leastaction.catalog.store import CatalogStore, TaskMeta
from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.intervals.judging import read_windows
from airflow_leastaction.triggers.poll_group import PollGroup
from airflow_leastaction.triggers.poller import CatalogPoller
from tests.helpers.statement_count import StatementCounter

UTC = dt.UTC
DAY = dt.datetime(2026, 1, 1, tzinfo=UTC)
DAILY = TaskMeta(cron="0 0 * * *")
POLL = 0.02
QUIET = 3600.0  # a poller that ticks once by itself; the test ticks it by hand
HANG = 120  # seconds: a guard against a hung test, never what a test checks


def day(n: int) -> dt.datetime:
    return DAY + dt.timedelta(days=n)


async def ticked(poller: CatalogPoller, count: int) -> None:
    """Wait until ``poller`` has ticked ``count`` more times."""
    start = poller.ticks
    while poller.ticks < start + count:
        await asyncio.sleep(0.005)


def recorded_rereads(monkeypatch) -> list[set]:
    """The tasks each tick re-reads (the poller's second statement), one set per read, as they happen."""
    reread: list[set] = []
    original = CatalogPoller._details

    def details(poller, store_, tasks, requests):
        reread.append(set(requests))
        return original(poller, store_, tasks, requests)

    monkeypatch.setattr(CatalogPoller, "_details", details)
    return reread


@pytest.mark.parametrize("read", ["snapshot", "slot_records", "latest_runs", "completions"])
async def test_an_idle_tick_sends_exactly_one_statement(store, catalog_url, read):
    parents = [TaskIdentity(f"idle_{i}", "other-team") for i in range(30)]
    for p in parents:
        store.record_success(p, day(0), meta=DAILY, run_id="r")
    requests = parents if read == "latest_runs" else [(p, 0 if read == "completions" else day(1)) for p in parents]
    poller = CatalogPoller.shared(catalog_url, POLL, read)
    async with poller.subscribe(requests) as sub:
        await sub.next()  # the new subscription's full read
        with StatementCounter(get_engine(catalog_url)) as counter:
            for _ in range(4):
                await asyncio.wait_for(sub.next(), HANG)  # each tick delivers once its statements are sent
            idle = counter.total
    assert idle == 4, counter.statements
    assert all("la_change_counter" in s for s in counter.statements)


async def test_a_change_to_one_parent_rereads_only_that_parent_and_wakes_only_its_subscribers(
    store, catalog_url, monkeypatch
):
    changed, quiet = TaskIdentity("changes", "other-team"), TaskIdentity("stays", "other-team")
    for p in (changed, quiet):
        store.record_success(p, day(0), meta=DAILY, run_id="r0")
    reread = recorded_rereads(monkeypatch)
    poller = CatalogPoller.shared(catalog_url, POLL)
    async with AsyncExitStack() as stack:
        on_changed = [await stack.enter_async_context(poller.subscribe([(changed, day(1))])) for _ in range(3)]
        on_quiet = [await stack.enter_async_context(poller.subscribe([(quiet, day(1))])) for _ in range(3)]
        first = {id(s): await asyncio.wait_for(s.next_change(), HANG) for s in on_changed + on_quiet}
        assert reread == [{changed, quiet}]  # the new subscriptions' full read
        waiting = {id(s): asyncio.ensure_future(s.next_change()) for s in on_changed + on_quiet}
        await ticked(poller, 3)
        assert not any(t.done() for t in waiting.values())  # idle ticks wake nobody
        await asyncio.to_thread(store.record_success, changed, day(1), run_id="r1")
        news = [await asyncio.wait_for(waiting[id(s)], HANG) for s in on_changed]
        await ticked(poller, 3)
        assert not any(waiting[id(s)].done() for s in on_quiet)
        for task_ in waiting.values():
            task_.cancel()
    assert reread == [{changed, quiet}, {changed}]
    assert all(n != first[id(s)] for n, s in zip(news, on_changed, strict=True))
    assert all(max(s.slot for s in n[1]) == day(1) for n in news)


async def test_a_subscriber_that_left_is_handed_nothing_and_its_task_is_not_read_after_the_next_tick(
    store, catalog_url, monkeypatch
):
    """Leaving costs the trigger nothing when it fires (its bookkeeping waits for the next tick), yet a left
    subscriber is never woken again, and a task nobody watches any more is not re-read once that tick ran;
    one still watched by another subscriber is."""
    gone, kept = TaskIdentity("left_behind", "other-team"), TaskIdentity("still_watched", "other-team")
    for p in (gone, kept):
        store.record_success(p, day(0), meta=DAILY, run_id="r0")
    reread = recorded_rereads(monkeypatch)
    poller = CatalogPoller(catalog_url, QUIET)
    async with poller.subscribe([(kept, day(1))]) as staying:
        await asyncio.wait_for(staying.next_change(), HANG)  # the poller's own loop ticks once, then sleeps
        leaving_context = poller.subscribe([(gone, day(1)), (kept, day(1))])
        leaving = await leaving_context.__aenter__()
        await poller._tick(store)
        assert reread == [{kept}, {gone, kept}]
        assert staying._latest is not None and leaving._latest is not None
        await leaving_context.__aexit__(None, None, None)
        assert poller.subscribers == 1
        handed = leaving._latest
        await asyncio.to_thread(store.record_success, gone, day(1), run_id="r1")
        await asyncio.to_thread(store.record_success, kept, day(1), run_id="r1")
        await poller._tick(store)  # takes the leaver off the books first: only the kept task is re-read
        assert reread == [{kept}, {gone, kept}, {kept}]
        assert leaving._latest is handed  # nothing delivered after it left
        assert max(s.slot for s in staying._latest[1] if s.task_pk == staying._latest[0][kept].pk) == day(1)
    poller._task.cancel()


async def test_a_subscriber_joining_during_a_tick_is_read_in_full_on_the_next_one_not_served_half_read(
    store, catalog_url, monkeypatch
):
    """A gate joins while a tick reads; one of its parents changed (so that tick wakes its watchers), the
    other is new to the poller. That tick must not serve it (it never read the new parent); the next tick
    reads it in full, so it never waits on a parent it was told is not in the catalog."""
    watched, unread = TaskIdentity("watched", "other-team"), TaskIdentity("not_read_yet", "other-team")
    for p in (watched, unread):
        store.record_success(p, day(0), meta=DAILY, run_id="r0")
    poller = CatalogPoller(catalog_url, QUIET)
    reading, resume = threading.Event(), threading.Event()
    original = PollGroup._changes

    def changes(poller_, store_, since, names):
        out = original(poller_, store_, since, names)
        reading.set()
        resume.wait(HANG)
        return out

    async with poller.subscribe([(watched, day(1))]) as first:
        await asyncio.wait_for(first.next_change(), HANG)  # the poller's own loop ticks once, then sleeps
        await asyncio.to_thread(store.record_success, watched, day(1), run_id="r1")
        monkeypatch.setattr(PollGroup, "_changes", changes)
        tick = asyncio.create_task(poller._tick(store))
        await asyncio.to_thread(reading.wait, HANG)
        async with poller.subscribe([(watched, day(1)), (unread, day(1))]) as joined:
            resume.set()
            await tick
            assert joined._latest is None  # woken by nothing: its full read is the next tick's
            await poller._tick(store)
            tasks, _ = joined._latest
            assert {watched, unread} <= set(tasks)
    poller._task.cancel()


def _full_read(store: CatalogStore, read: str, requests):
    value = store.snapshot(requests) if read == "snapshot" else getattr(store.runs, read)(requests)
    return _comparable(read, value)


def _comparable(read: str, value, requests=None):
    """A read's value, comparable; a held snapshot restricted to what a full read of ``requests`` holds
    (it may also keep slot records of its parents that other subscribers' windows read), held completions
    to those at or after the subscriber's own change number (another watcher of the task may be behind)."""
    if read == "completions" and requests is not None:
        floors = dict(requests)
        return {i: (t, [c for c in records if c.seq >= floors[i]]) for i, (t, records) in value.items()}
    if read != "snapshot":
        return value
    tasks, slots = value
    if requests is not None:
        wanted = wanted_windows(requests)
        tasks = {i: tasks[i] for i in wanted if i in tasks}
        windows = {t.pk: read_windows(t, wanted[i]) for i, t in tasks.items()}
        slots = [s for s in slots if any(a <= s.slot < b for a, b in windows.get(s.task_pk, ()))]
    return tasks, sorted(slots, key=lambda s: (s.task_pk, s.slot))


WRITES = st.sampled_from(["running", "success", "failed", "hourly", "daily"])
READS = ("snapshot", "slot_records", "latest_runs", "completions")
STEP = st.one_of(
    st.tuples(st.just("write"), WRITES, st.integers(0, 3), st.integers(0, 3)),
    st.tuples(st.just("subscribe"), st.sampled_from(READS), st.integers(0, 3)),
    st.tuples(st.just("leave"), st.integers(0, 20)),
    st.just(("tick",)),
)


def _write(store: CatalogStore, parent: TaskIdentity, what: str, n: int) -> None:
    if what == "running":
        store.record_running(parent, day(n), meta=DAILY, run_id=f"run{n}")
    elif what == "success":
        store.record_success(parent, day(n), meta=DAILY, run_id=f"run{n}-{uuid.uuid4().hex[:4]}")
    elif what == "failed":
        store.record_finished(parent, day(n), "failed", meta=DAILY, run_id=f"run{n}")
    else:  # a new schedule moves the windows the parent's children read
        store.register_task(parent, TaskMeta(cron="0 * * * *" if what == "hourly" else "0 0 * * *"))


def _requests(read: str, parents: list[TaskIdentity], n: int) -> list:
    chosen = [parents[n % len(parents)], parents[(n + 1) % len(parents)]]
    if read == "latest_runs":
        return chosen
    if read == "completions":  # watchers whose cursors are at change 0 and change n
        return [(chosen[0], 0), (chosen[1], n)]
    if read == "slot_records":
        return [(p, day(n)) for p in chosen]
    return [(chosen[0], day(n)), (chosen[1], day(n), day(n + 2))]  # one parent judged on the whole interval


async def _scenario(url: str, steps) -> None:
    store = CatalogStore(get_engine(url))
    project = uuid.uuid4().hex[:8]
    parents = [TaskIdentity(f"p{i}", project) for i in range(3)] + [TaskIdentity("never_reported", project)]
    store.record_success(parents[0], day(0), meta=DAILY, run_id="seed")
    pollers = {r: CatalogPoller(url, QUIET, r) for r in READS}
    subs: list = []  # (read, subscription, its context)

    async def subscribe(read: str, n: int):
        context = pollers[read].subscribe(_requests(read, parents, n))
        subs.append((read, await context.__aenter__(), context))

    for read in pollers:  # each poller's own loop ticks once, then sleeps: the test ticks it by hand
        await subscribe(read, 0)
        await subs[-1][1].next()
    for step in [*steps, ("tick",)]:
        if step[0] == "write":
            await asyncio.to_thread(_write, store, parents[step[2]], step[1], step[3])
        elif step[0] == "subscribe":
            await subscribe(step[1], step[2])
        elif step[0] == "leave" and len(subs) > len(READS):
            _, _, context = subs.pop(step[1] % len(subs))
            await context.__aexit__(None, None, None)
        elif step[0] == "tick":
            for poller in pollers.values():
                await poller._tick(store)
            for read, sub, _ in subs:
                full = await asyncio.to_thread(_full_read, store, read, sub.requests)
                assert _comparable(read, sub._latest, sub.requests) == full, (read, sub.requests)
    for _, _, context in subs:
        await context.__aexit__(None, None, None)
    for poller in pollers.values():
        poller._task.cancel()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(STEP, max_size=14))
def test_what_each_subscriber_holds_equals_a_full_read_of_its_requests_after_any_writes_and_ticks(catalog_url, steps):
    asyncio.run(_scenario(catalog_url, steps))


def test_changes_committed_by_concurrent_writers_are_never_missed(store, catalog_url):
    """Writers in threads, each its own transactions; a reader asks for the changes after the counter it
    last read. A task's last change must be seen by the first read whose counter covers its number: a
    change committed after a read that already counted past its number would be lost for good."""
    engine = get_engine(catalog_url)
    tasks = [TaskIdentity(f"w{i}", "concurrent") for i in range(12)]
    done = threading.Event()
    reads: list[tuple[int, dict]] = []

    def writer(offset: int) -> None:
        for n in range(8):
            for t in tasks[offset::3]:
                store.record_running(t, day(n), meta=DAILY, run_id=f"r{n}")

    def reader() -> None:
        since = None
        while True:
            finished = done.is_set()
            with store.poll_read() as conn:
                rows, high = changed_tasks(conn, [task.c.id, task.c.name], since, [])
            reads.append((high, {r.name: r.change_seq for r in rows}))
            since = high
            if finished:
                return

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(3)]
    watcher = threading.Thread(target=reader)
    watcher.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    done.set()
    watcher.join()
    with engine.connect() as conn:
        final = dict(conn.execute(select(task.c.name, task.c.change_seq).where(task.c.project == "concurrent")).all())
    assert len(final) == len(tasks) and len(set(final.values())) == len(final)
    for name, seq in final.items():
        covering = next(i for i, (high, _) in enumerate(reads) if high >= seq)
        assert any(seen.get(name) == seq for _, seen in reads[: covering + 1]), (name, seq, covering)


LOCK_WAITERS = "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()"


@pytest.mark.postgres
def test_a_change_numbered_first_is_committed_before_any_numbered_after_it(pg_url):
    """Writer A takes its number and pauses before its commit; writer B, on another task, waits for A
    (for the counter) before it takes the next number. A reader in between sees neither, and after both
    sees both, B's number above A's: no reader can count past A's number before A is visible."""
    engine = get_engine(pg_url, migrate=True)
    store = CatalogStore(engine)
    a, b = TaskIdentity("first", "order"), TaskIdentity("second", "order")
    for t in (a, b):
        store.register_task(t, DAILY)
    with store.poll_read() as conn:
        _, since = changed_tasks(conn, [task.c.id], None, [])
    at_commit, release = threading.Event(), threading.Event()
    holder = {}

    def hold(conn):
        if threading.get_ident() == holder.get("a"):
            at_commit.set()
            release.wait()

    event.listen(engine, "commit", hold)
    try:

        def write_a():
            holder["a"] = threading.get_ident()
            store.record_running(a, day(1), run_id="a")

        ta = threading.Thread(target=write_a)
        ta.start()
        at_commit.wait()
        tb = threading.Thread(target=store.record_running, args=(b, day(1)), kwargs={"run_id": "b"})
        tb.start()
        with engine.connect() as conn:  # until B waits for a lock (the counter row A holds)
            deadline = time.monotonic() + HANG
            while not conn.execute(text(LOCK_WAITERS)).scalar():
                assert time.monotonic() < deadline, "writer B never waited for writer A's number"
                conn.rollback()
        with store.poll_read() as conn:
            rows, high = changed_tasks(conn, [task.c.id, task.c.name], since, [])
        assert (rows, high) == ([], since)
        release.set()
        ta.join()
        tb.join()
    finally:
        release.set()
        event.remove(engine, "commit", hold)
    with store.poll_read() as conn:
        rows, _ = changed_tasks(conn, [task.c.id, task.c.name], since, [])
    seqs = {r.name: r.change_seq for r in rows}
    assert set(seqs) == {"first", "second"} and seqs["first"] < seqs["second"]
