"""What the trigger benchmark measures: K waiting interval triggers in one event loop, released by their
parents completing; the shared poll against one sensor polling per trigger. :mod:`bench.bench_triggers`
runs it and reports; :mod:`bench.trigger_runs` runs it in a process, or in several."""

from __future__ import annotations

import asyncio
import datetime as dt
import gc
import statistics
import time
import tracemalloc

import sqlalchemy as sa

DAY = dt.datetime(2026, 11, 28, tzinfo=dt.UTC)
POLL = 1.0
WAIT_TICKS = 3


def catalog_url(backend: str) -> tuple[str, callable]:
    """A fresh catalog database (PostgreSQL: on the durable benchmark server) and its ``drop()``."""
    from bench.common import fresh_database

    return fresh_database(backend)


def seed(store, k: int):
    """K children, each with 3 parents drawn from K parents (so each parent has about 3 children)."""
    from airflow_leastaction.catalog.schema import task
    from airflow_leastaction.identity import TaskIdentity

    parents = [TaskIdentity(f"parent_{i:05d}", "bench") for i in range(k)]
    now = dt.datetime.now(dt.UTC)
    with store.write() as conn:
        conn.execute(
            sa.insert(task),
            [dict(p.as_dict(), source="external", cron="0 0 * * *", timezone="UTC", updated_at=now) for p in parents]
            + [
                dict(
                    name=f"child_{i:05d}",
                    project="bench",
                    account="",
                    partition="",
                    source="airflow",
                    cron="0 0 * * *",
                    timezone="UTC",
                    updated_at=now,
                )
                for i in range(k)
            ],
        )
    warm = TaskIdentity("warm_up", "bench")
    store.record_success(warm, DAY, run_id="w")
    return [[parents[i], parents[(i + 1) % k], parents[(i + 2) % k]] for i in range(k)], parents, warm


def complete_all(store, parents) -> float:
    """Every parent completes DAY in one transaction, marked in the catalog change sequence as the store's
    own writers mark what they write (the incremental poller reads only what changed)."""
    from airflow_leastaction.catalog.changes import mark_changed
    from airflow_leastaction.catalog.schema import task, task_run

    now = dt.datetime.now(dt.UTC)
    with store.write() as conn:
        pks = dict(conn.execute(sa.select(task.c.name, task.c.id).where(task.c.project == "bench")).all())
        mark_changed(conn, *(pks[p.name] for p in parents))
        conn.execute(
            sa.insert(task_run),
            [
                dict(
                    task_pk=pks[p.name],
                    slot=DAY,
                    state="success",
                    attempt=1,
                    run_id="r",
                    output_revision=1,
                    repair_pending=False,
                    started_at=now,
                    finished_at=now,
                    updated_at=now,
                )
                for p in parents
            ],
        )
        conn.execute(
            sa.update(task)
            .where(task.c.project == "bench", task.c.name.like("parent_%"))
            .values(state="success", prev_interval_start=DAY, updated_at=now)
        )
    return time.monotonic()


class Counter:
    """Every statement the engine sends, whatever it reads: a filtered count could hide work."""

    def __init__(self):
        self.n = 0

    def __call__(self, conn, cursor, statement, *args):
        self.n += 1


async def shared_trigger(parents, child, url):
    from airflow_leastaction.triggers.parent_interval import ParentIntervalTrigger

    trigger = ParentIntervalTrigger([p.as_dict() for p in parents], DAY.isoformat(), poll_interval=POLL)
    fired = None
    async for _ in trigger.run():  # to its end, as Airflow's trigger runner reads a trigger
        fired = time.monotonic()
    return fired


async def per_trigger_polling(parents, child, url):
    """The baseline: what one deferrable sensor does on its own, as Airflow's ``WorkflowTrigger`` polls per
    trigger: every tick, one snapshot of its own parents (2 statements) in a worker thread, then judge."""
    from airflow_leastaction.catalog.engine import get_engine
    from airflow_leastaction.catalog.store import CatalogStore
    from airflow_leastaction.gating.engine import ALL, Verdict, decide
    from airflow_leastaction.intervals.parents import judge_parents

    store = CatalogStore(get_engine(url))
    requests = [(p, DAY) for p in parents]
    while True:
        snapshot = await asyncio.to_thread(store.snapshot, requests)
        if decide(ALL, judge_parents(parents, DAY, snapshot)).verdict is Verdict.ADMIT:
            return time.monotonic()
        await asyncio.sleep(POLL)


async def until_all_read(k: int) -> None:
    """Wait until the shared poller has every trigger subscribed and has ticked twice since: the idle
    ticks measured next then read nothing new (a subscription's first, full read is not an idle tick)."""
    from airflow_leastaction.triggers.poller import CatalogPoller

    while not (pollers := [p for p in CatalogPoller._shared.values() if p.subscribers == k]):
        await asyncio.sleep(0.01)
    start = pollers[0].ticks
    while pollers[0].ticks < start + 2:
        await asyncio.sleep(0.01)


async def measure(kind: str, url: str, families, warm, pool_size: int, release) -> dict:
    """Subscribe one trigger per family, sample idle ticks, then ``await release()`` (the parents complete;
    it returns the completion instant on the monotonic clock) and wait for every trigger to fire."""
    from concurrent.futures import ThreadPoolExecutor

    from airflow_leastaction.catalog.engine import get_engine

    asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(max_workers=pool_size))
    runner = shared_trigger if kind == "shared" else per_trigger_polling
    await runner([warm], "warm_up", url)  # imports, logging set-up and connection pool are not per trigger
    counter = Counter()
    engine = get_engine(url)
    sa.event.listen(engine, "before_cursor_execute", counter)
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    tasks = [asyncio.create_task(runner(fam, f"child_{i:05d}", url)) for i, fam in enumerate(families)]
    await asyncio.sleep(POLL / 2)
    memory = (tracemalloc.get_traced_memory()[0] - before) / len(families)
    tracemalloc.stop()
    if kind == "shared":
        await until_all_read(len(families))
    # The collector's steady state: the full pass the K arrivals made due runs now, as a triggerer's next
    # allocations after they join run it (a triggerer does more than wait: heartbeats, logs, other triggers).
    # It is timed and published: a release that coincides with one takes that much longer.
    gc_started = time.perf_counter()
    gc.collect()
    full_gc_waiting = time.perf_counter() - gc_started
    ticks = []  # one sample per poll interval while every trigger waits
    for _ in range(WAIT_TICKS):
        n0, cpu0, wall0 = counter.n, time.process_time(), time.monotonic()
        await asyncio.sleep(POLL)
        wall = time.monotonic() - wall0
        ticks.append(
            {
                "wall_s": round(wall, 4),
                "statements": counter.n - n0,
                "cpu_ms": round((time.process_time() - cpu0) * 1000, 2),
            }
        )
    full = FullCollections()
    gc.callbacks.append(full)
    try:
        done_at = await release()
        released = await asyncio.wait_for(asyncio.gather(*tasks), timeout=1800)
    finally:
        gc.callbacks.remove(full)
    sa.event.remove(engine, "before_cursor_execute", counter)
    latencies = sorted(round(max(0.0, r - done_at), 4) for r in released)
    return {
        "ticks": ticks,
        "bytes_per_trigger": round(memory, 1),
        "release_s": latencies,
        "full_gc_s": full.between(done_at, max(released)),
        "full_gc_waiting_s": round(full_gc_waiting, 4),
    }


class FullCollections:
    """The full (generation 2) passes of Python's garbage collector in this process, as (start, end) on the
    monotonic clock: one walks every tracked object, every waiting trigger's among them, and when it lands
    between a commit and the last release it is part of the release time measured."""

    def __init__(self):
        self.passes: list[tuple[float, float]] = []
        self._start = 0.0

    def __call__(self, phase: str, info: dict) -> None:
        if info["generation"] != 2:
            return
        if phase == "start":
            self._start = time.monotonic()
        else:
            self.passes.append((self._start, time.monotonic()))

    def between(self, start: float, end: float) -> list[float]:
        """The seconds each pass spent inside [start, end]."""
        return [round(min(b, end) - max(a, start), 4) for a, b in self.passes if b > start and a < end]


def derived(run: dict) -> dict:
    """The figures of one run, from its raw samples (the report and the console use the same ones)."""
    wall = sum(t["wall_s"] for t in run["ticks"]) / POLL
    lat = run["release_s"]
    return {
        "statements_per_tick": sum(t["statements"] for t in run["ticks"]) / wall,
        "cpu_ms_per_tick": sum(t["cpu_ms"] for t in run["ticks"]) / wall,
        "kib_per_trigger": run["bytes_per_trigger"] / 1024,
        "release_median_s": statistics.median(lat),
        "release_p99_s": lat[min(len(lat) - 1, int(len(lat) * 0.99))],
        "release_max_s": lat[-1],
        "full_gc_s": sum(run.get("full_gc_s", ())),
        "full_gc_waiting_s": run.get("full_gc_waiting_s"),
    }
