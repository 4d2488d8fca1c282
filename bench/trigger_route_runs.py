"""One run of the several-triggerer benchmark (:mod:`bench.bench_trigger_routes`): K gates laid out over
triggerer processes on one PostgreSQL catalog, released (a) by every parent completing in one transaction
or (b) by parents completing one per transaction at a steady rate, written by this (the parent) process.

Each triggerer process counts, from the moment the parents start completing to its last release (a) or to
the end of the steady window (b): the rows its statements return (every statement its engine sends: the
change read and the re-read of what changed), the parents its poll judged (watched parents that changed),
and its CPU seconds.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import gc
import time

import sqlalchemy as sa

from bench.trigger_release import DAY, POLL, WAIT_TICKS, Counter, shared_trigger, until_all_read

SCENARIOS = ("one_transaction", "steady")


class Rows:
    """Rows returned by the statements the engine sends (psycopg's ``rowcount`` of a SELECT), and their time."""

    def __init__(self):
        self.rows = 0
        self.seconds = 0.0
        self._start = 0.0

    def before(self, conn, cursor, statement, *args):
        self._start = time.perf_counter()

    def after(self, conn, cursor, statement, *args):
        self.seconds += time.perf_counter() - self._start
        self.rows += max(0, cursor.rowcount or 0)


class Judged:
    """The watched parents each tick found changed, in every poller of this process."""

    def __init__(self):
        self.n = 0

    def install(self):
        from airflow_leastaction.triggers.poller import CatalogPoller

        original = CatalogPoller._snapshots
        counter = self

        def counted(poller, rows, since):
            tasks, changed = original(poller, rows, since)
            counter.n += len(changed)
            return tasks, changed

        CatalogPoller._snapshots = counted


def seed(store, parents, k: int) -> dict:
    """The parents' and the K children's task rows; returns each parent's primary key by name."""
    from airflow_leastaction.catalog.schema import task

    now = dt.datetime.now(dt.UTC)
    common = dict(account="", partition="", cron="0 0 * * *", timezone="UTC", updated_at=now)
    with store.write() as conn:
        conn.execute(
            sa.insert(task), [dict(common, name=p.name, project=p.project, source="external") for p in parents]
        )
        conn.execute(
            sa.insert(task), [dict(common, name=f"child_{g:07d}", project="gates", source="airflow") for g in range(k)]
        )
        return dict(conn.execute(sa.select(task.c.name, task.c.id).where(task.c.source == "external")).all())


def complete(conn, pks: list[int]) -> None:
    """Parents ``pks`` complete DAY, marked in the change sequence as the store's writers mark what they write."""
    from airflow_leastaction.catalog.changes import mark_changed
    from airflow_leastaction.catalog.schema import task, task_run

    now = dt.datetime.now(dt.UTC)
    mark_changed(conn, *pks)
    run = dict(slot=DAY, state="success", attempt=1, run_id="r", output_revision=1, repair_pending=False)
    conn.execute(
        sa.insert(task_run), [dict(run, task_pk=pk, started_at=now, finished_at=now, updated_at=now) for pk in pks]
    )
    conn.execute(
        sa.update(task).where(task.c.id.in_(pks)).values(state="success", prev_interval_start=DAY, updated_at=now)
    )


def steady_order(gates) -> list[int]:
    """The order parents complete in at a steady rate: team after team, as a morning's pipelines finish."""
    return sorted(range(len(gates.parents)), key=lambda i: (i % gates.teams, i))


def _triggerer(url, families, members, scenario, pool_size, ready, go, stop, done_at, commits, grace, results):
    """One triggerer process: its gates wait, idle ticks are sampled, then it is released."""
    from bench.trigger_runs import _use_catalog

    _use_catalog(url)
    from airflow_leastaction.identity import TaskIdentity

    fams = [[TaskIdentity.from_dict(p) for p in fam] for fam in families]
    results.put(
        asyncio.run(_measure(url, fams, members, scenario, pool_size, ready, go, stop, done_at, commits, grace))
    )


async def _measure(url, fams, members, scenario, pool_size, ready, go, stop, done_at, commits, grace) -> dict:
    from concurrent.futures import ThreadPoolExecutor

    from airflow_leastaction.catalog.engine import get_engine
    from airflow_leastaction.identity import TaskIdentity

    asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(max_workers=pool_size))
    await shared_trigger([TaskIdentity("warm_up", "bench")], "warm_up", url)
    engine = get_engine(url)
    counter, rows, judged = Counter(), Rows(), Judged()
    sa.event.listen(engine, "before_cursor_execute", counter)
    sa.event.listen(engine, "before_cursor_execute", rows.before)
    sa.event.listen(engine, "after_cursor_execute", rows.after)
    judged.install()
    tasks = [asyncio.create_task(shared_trigger(fam, "", url)) for fam in fams]
    await until_all_read(len(fams))
    gc.collect()
    ticks = []
    for _ in range(WAIT_TICKS):
        n0, r0, s0, cpu0, wall0 = counter.n, rows.rows, rows.seconds, time.process_time(), time.monotonic()
        await asyncio.sleep(POLL)
        ticks.append(
            {
                "wall_s": round(time.monotonic() - wall0, 4),
                "statements": counter.n - n0,
                "rows": rows.rows - r0,
                "statement_ms": round((rows.seconds - s0) * 1000, 3),
                "cpu_ms": round((time.process_time() - cpu0) * 1000, 2),
            }
        )
    ready.put(1)
    while not go.is_set():
        await asyncio.sleep(0.005)
    r0, s0, j0, n0, cpu0, wall0 = rows.rows, rows.seconds, judged.n, counter.n, time.process_time(), time.monotonic()
    if scenario == "one_transaction":
        fired = await asyncio.wait_for(asyncio.gather(*tasks), timeout=1800)
        cpu, end = time.process_time() - cpu0, time.monotonic()
        release = sorted(round(max(0.0, f - done_at.value), 4) for f in fired)
        late = 0
    else:
        while not stop.is_set():
            await asyncio.sleep(0.05)
        await asyncio.sleep(grace)
        cpu, end = time.process_time() - cpu0, time.monotonic()
        release, late = [], 0
        for task, gate in zip(tasks, members, strict=True):
            last = max(commits[i] for i in gate) if all(commits[i] for i in gate) else None
            if task.done():
                release.append(round(max(0.0, task.result() - last), 4))
            elif last is not None:
                late += 1  # all its parents completed, not released within the grace period
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        release.sort()
    return {
        "gates": len(fams),
        "ticks": ticks,
        "release_s": release,
        "not_released": late,
        "window_s": round(end - wall0, 3),
        "cpu_s": round(cpu, 3),
        "rows": rows.rows - r0,
        "statements": counter.n - n0,
        "statement_s": round(rows.seconds - s0, 3),
        "parents_judged": judged.n - j0,
    }


def run_layout(gates, placement, processes, scenario, pool_size, rate_per_min=1000.0, window_s=60.0, grace=5.0):
    """Gates placed per ``placement`` in ``processes`` triggerer processes on a fresh PostgreSQL catalog."""
    import multiprocessing

    from airflow_leastaction.catalog.engine import get_engine
    from airflow_leastaction.catalog.store import CatalogStore
    from airflow_leastaction.identity import TaskIdentity
    from bench.common import fresh_database
    from bench.trigger_layouts import shares
    from bench.trigger_runs import _use_catalog

    url, drop = fresh_database("postgres")
    ctx = multiprocessing.get_context("spawn")
    procs = []
    try:
        _use_catalog(url)
        store = CatalogStore(get_engine(url, migrate=True))
        pks = seed(store, gates.parents, len(gates.gates))
        store.record_success(TaskIdentity("warm_up", "bench"), DAY, run_id="w")
        ready, results, go, stop = ctx.Queue(), ctx.Queue(), ctx.Event(), ctx.Event()
        done_at = ctx.Value("d", 0.0)
        commits = ctx.Array("d", len(gates.parents), lock=False)
        for n, share in enumerate(shares(gates, placement, processes)):
            fams = [[gates.parents[i].as_dict() for i in gates.gates[g]] for g in share]
            members = [gates.gates[g] for g in share]
            args = (url, fams, members, scenario, pool_size, ready, go, stop, done_at, commits, grace, results)
            procs.append(ctx.Process(target=_triggerer, args=args, name=f"triggerer-{n}"))
        for proc in procs:
            proc.start()
        for _ in procs:
            ready.get(timeout=3600)
        written = _write(store, gates, pks, scenario, go, done_at, commits, rate_per_min, window_s)
        stop.set()
        runs = [results.get(timeout=3600) for _ in procs]
        for proc in procs:
            proc.join(120)
        return {"processes": runs, **written}
    finally:
        for proc in procs:
            if proc.is_alive():
                proc.kill()
        drop()


def _write(store, gates, pks, scenario, go, done_at, commits, rate_per_min, window_s) -> dict:
    """The writer: every parent in one transaction, or one parent per transaction at ``rate_per_min``."""
    names = [p.name for p in gates.parents]
    if scenario == "one_transaction":
        started = time.perf_counter()
        with store.write() as conn:
            complete(conn, [pks[n] for n in names])
        done_at.value = time.monotonic()
        go.set()
        return {"parents_completed": len(names), "write_s": round(time.perf_counter() - started, 3)}
    order = steady_order(gates)[: max(1, int(rate_per_min * window_s / 60))]
    go.set()
    t0 = time.monotonic()
    for n, i in enumerate(order):
        delay = t0 + n * 60.0 / rate_per_min - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        with store.write() as conn:
            complete(conn, [pks[names[i]]])
        commits[i] = time.monotonic()
    return {"parents_completed": len(order), "write_s": round(time.monotonic() - t0, 3)}
