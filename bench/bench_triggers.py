"""K waiting ParentIntervalTriggers in one event loop: shared polling vs per-trigger polling.

For K = 100, 1,000 and 10,000 triggers with 3 parents each, on a real SQLite file and a real PostgreSQL
database, measures catalog queries per poll tick, CPU per tick, memory per waiting trigger and the
release latency after the parents complete. The baseline polls per trigger as the reference scheduler
does: one lookup for the child itself plus one per parent, every tick.

    .venv/bin/python -m bench.bench_triggers [--ks 100,1000,10000] [--backends sqlite,postgres]
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import gc
import os
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
import uuid
from pathlib import Path

import sqlalchemy as sa

ROOT = Path(__file__).resolve().parent.parent
DAY = dt.datetime(2026, 11, 28, tzinfo=dt.timezone.utc)
POLL = 1.0
WAIT_TICKS = 3


def catalog_url(backend: str) -> tuple[str, callable]:
    if backend == "sqlite":
        path = Path(tempfile.mkdtemp(prefix="la-bench-")) / "catalog.db"
        return f"sqlite:///{path}", lambda: None
    admin = subprocess.run([str(ROOT / "scripts" / "postgres.sh"), "start"], check=True, capture_output=True,
                           text=True).stdout.strip().splitlines()[-1]
    name = f"la_bench_{uuid.uuid4().hex[:8]}"
    engine = sa.create_engine(admin, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))

    def drop():
        from airflow_leastaction.catalog.engine import dispose_all

        dispose_all()
        with engine.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))

    return admin.rsplit("/", 1)[0] + f"/{name}", drop


def seed(store, k: int):
    """K children, each with 3 parents drawn from K parents (so each parent has about 3 children)."""
    from airflow_leastaction.catalog.schema import task
    from airflow_leastaction.identity import TaskIdentity

    parents = [TaskIdentity(f"parent_{i:05d}", "bench") for i in range(k)]
    now = dt.datetime.now(dt.timezone.utc)
    with store.write() as conn:
        conn.execute(sa.insert(task), [dict(p.as_dict(), source="external", cron="0 0 * * *", timezone="UTC",
                                            updated_at=now) for p in parents]
                     + [dict(name=f"child_{i:05d}", project="bench", account="", partition="", source="airflow",
                             cron="0 0 * * *", timezone="UTC", updated_at=now) for i in range(k)])
    warm = TaskIdentity("warm_up", "bench")
    store.record_success(warm, DAY, run_id="w")
    return [[parents[i], parents[(i + 1) % k], parents[(i + 2) % k]] for i in range(k)], parents, warm


def complete_all(store, parents) -> float:
    from airflow_leastaction.catalog.schema import task, task_run

    now = dt.datetime.now(dt.timezone.utc)
    with store.write() as conn:
        pks = dict(conn.execute(sa.select(task.c.name, task.c.id).where(task.c.project == "bench")).all())
        conn.execute(sa.insert(task_run), [dict(task_pk=pks[p.name], slot=DAY, state="success", attempt=1,
                                                run_id="r", output_revision=1, repair_pending=False,
                                                started_at=now, finished_at=now, updated_at=now) for p in parents])
        conn.execute(sa.update(task).where(task.c.project == "bench", task.c.name.like("parent_%"))
                     .values(state="success", prev_interval_start=DAY, updated_at=now))
    return time.monotonic()


class Counter:
    def __init__(self):
        self.n = 0

    def __call__(self, conn, cursor, statement, *args):
        if "la_task" in statement and statement.lstrip().upper().startswith("SELECT"):
            self.n += 1


async def shared_trigger(parents, child, url):
    from airflow_leastaction.triggers.parent_interval import ParentIntervalTrigger

    trigger = ParentIntervalTrigger([p.as_dict() for p in parents], DAY.isoformat(), poll_interval=POLL)
    async for _ in trigger.run():
        return time.monotonic()


async def per_trigger_polling(parents, child, url):
    """The baseline: every tick, one lookup for the child itself and one per parent."""
    from airflow_leastaction.catalog.engine import get_engine
    from airflow_leastaction.catalog.store import CatalogStore
    from airflow_leastaction.gate import ALL, Verdict, decide
    from airflow_leastaction.identity import TaskIdentity
    from airflow_leastaction.intervals.judging import judge_parents

    store = CatalogStore(get_engine(url))
    me = TaskIdentity(child, "bench")
    while True:
        def look():
            store.get_task(me)
            found = [store.snapshot([(p, DAY)]) for p in parents]  # one lookup per parent
            tasks = {k: v for f in found for k, v in f[0].items()}
            slots = [s for f in found for s in f[1]]
            return tasks, slots

        snapshot = await asyncio.to_thread(look)
        if decide(ALL, judge_parents(parents, DAY, snapshot)).verdict is Verdict.ADMIT:
            return time.monotonic()
        await asyncio.sleep(POLL)


async def measure(kind: str, url: str, store, families, parents, warm) -> dict:
    from airflow_leastaction.catalog.engine import get_engine

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
    counter.n, cpu0, wall0 = 0, time.process_time(), time.monotonic()
    await asyncio.sleep(WAIT_TICKS * POLL)
    ticks = (time.monotonic() - wall0) / POLL
    queries, cpu = counter.n / ticks, (time.process_time() - cpu0) / ticks
    done_at = await asyncio.to_thread(complete_all, store, parents)
    released = await asyncio.wait_for(asyncio.gather(*tasks), timeout=600)
    sa.event.remove(engine, "before_cursor_execute", counter)
    latencies = sorted(max(0.0, r - done_at) for r in released)
    return {"queries_per_tick": queries, "cpu_ms_per_tick": cpu * 1000, "kib_per_trigger": memory / 1024,
            "release_p50_s": statistics.median(latencies),
            "release_p99_s": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]}


def run_one(kind: str, backend: str, k: int) -> dict:
    from airflow_leastaction.catalog.engine import dispose_all, get_engine
    from airflow_leastaction.catalog.store import CatalogStore
    from airflow_leastaction.triggers.poller import CatalogPoller

    url, drop = catalog_url(backend)
    try:
        os.environ["AIRFLOW_CONN_LEASTACTION_CATALOG_DEFAULT"] = (
            '{"conn_type": "leastaction_catalog", "extra": {"url": "%s"}}' % url)
        dispose_all()
        CatalogPoller._shared.clear()
        store = CatalogStore(get_engine(url, migrate=True))
        families, parents, warm = seed(store, k)
        return asyncio.run(measure(kind, url, store, families, parents, warm))
    finally:
        drop()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ks", default="100,1000,10000")
    parser.add_argument("--backends", default="sqlite,postgres")
    parser.add_argument("--baseline-max-k", type=int, default=10000)
    args = parser.parse_args(argv)
    os.environ.setdefault("AIRFLOW_HOME", tempfile.mkdtemp(prefix="la-bench-home-"))
    rows = []
    for backend in args.backends.split(","):
        for k in (int(x) for x in args.ks.split(",")):
            shared = run_one("shared", backend, k)
            base = run_one("baseline", backend, k) if k <= args.baseline_max_k else None
            rows.append((backend, k, shared, base))
            print(format_row(backend, k, shared, base), flush=True)
    return 0


def format_row(backend, k, shared, base) -> str:
    def cell(key, fmt):
        s = format(shared[key], fmt)
        if base is None:
            return s
        ratio = base[key] / shared[key] if shared[key] else float("inf")
        return f"{s} / {format(base[key], fmt)} ({ratio:.1f}x)"

    return (f"| {backend} | {k:,} | {cell('queries_per_tick', '.1f')} | {cell('cpu_ms_per_tick', '.1f')} | "
            f"{cell('kib_per_trigger', '.1f')} | {cell('release_p50_s', '.2f')} | {cell('release_p99_s', '.2f')} |")


if __name__ == "__main__":
    sys.exit(main())
