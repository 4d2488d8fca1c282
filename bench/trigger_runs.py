"""The trigger benchmark's runs (:mod:`bench.bench_triggers`): K waiting triggers in one process with the
parents completed by a writer process, or spread over several triggerer processes on one catalog."""

from __future__ import annotations

import asyncio
import json
import os

from bench.trigger_release import catalog_url, complete_all, measure, seed


def run_one(kind: str, backend: str, k: int, pool_size: int) -> dict:
    """K waiting triggers in this process; the parents complete in another (a writer process, as a
    worker's listener or a reporting system writes them), so the triggers' process does nothing but wait,
    poll and judge: the write's work (and any garbage collection it sets off) is not in their process."""
    import multiprocessing

    from airflow_leastaction.catalog.engine import get_engine
    from airflow_leastaction.catalog.store import CatalogStore

    url, drop = catalog_url(backend)
    ctx = multiprocessing.get_context("spawn")
    go, done, done_at = ctx.Event(), ctx.Event(), ctx.Value("d", 0.0)
    writer = None
    try:
        _use_catalog(url)
        store = CatalogStore(get_engine(url, migrate=True))
        families, parents, warm = seed(store, k)
        writer = ctx.Process(target=_writer_process, args=(url, [p.name for p in parents], go, done, done_at))
        writer.start()

        async def release() -> float:
            go.set()
            if not await asyncio.to_thread(done.wait, 600):
                raise RuntimeError("the writer process did not complete the parents")
            return done_at.value

        return asyncio.run(measure(kind, url, families, warm, pool_size, release))
    finally:
        if writer is not None:
            writer.join(60)
            if writer.is_alive():
                writer.kill()
        drop()


def _writer_process(url: str, names: list[str], go, done, done_at) -> None:
    """Complete every parent in one transaction once told to; the commit's instant goes in ``done_at``."""
    from airflow_leastaction.catalog.engine import get_engine
    from airflow_leastaction.catalog.store import CatalogStore
    from airflow_leastaction.identity import TaskIdentity

    store = CatalogStore(get_engine(url))
    parents = [TaskIdentity(name, "bench") for name in names]
    go.wait()
    done_at.value = complete_all(store, parents)
    done.set()


def _use_catalog(url: str) -> None:
    from airflow_leastaction.catalog.engine import dispose_all
    from airflow_leastaction.triggers.poll_group import PollGroup
    from airflow_leastaction.triggers.poller import CatalogPoller

    os.environ["AIRFLOW_CONN_LEASTACTION_CATALOG_DEFAULT"] = json.dumps(
        {"conn_type": "leastaction_catalog", "extra": {"url": url}}
    )
    dispose_all()
    CatalogPoller._shared.clear()
    PollGroup._shared.clear()


def _triggerer_process(url: str, families: list, warm: dict, pool_size: int, ready, go, done_at, results) -> None:
    """One triggerer's share of the waiting triggers, in a process of its own (its own event loop, poller
    and connection pool, as a triggerer has): idle ticks sampled, then released by the parents' completion."""
    from airflow_leastaction.identity import TaskIdentity

    _use_catalog(url)

    async def release() -> float:
        ready.put(os.getpid())
        while not go.is_set():  # the parent process completes the parents once every process is idle
            await asyncio.sleep(0.005)
        return done_at.value

    fams = [[TaskIdentity.from_dict(p) for p in fam] for fam in families]
    results.put(asyncio.run(measure("shared", url, fams, TaskIdentity.from_dict(warm), pool_size, release)))


def run_processes(backend: str, k: int, processes: int, pool_size: int) -> list[dict]:
    """K waiting triggers spread evenly over ``processes`` triggerer processes on one catalog."""
    import multiprocessing

    from airflow_leastaction.catalog.engine import get_engine
    from airflow_leastaction.catalog.store import CatalogStore

    url, drop = catalog_url(backend)
    ctx = multiprocessing.get_context("spawn")
    procs = []
    try:
        _use_catalog(url)
        store = CatalogStore(get_engine(url, migrate=True))
        families, parents, warm = seed(store, k)
        ready, results, go, done_at = ctx.Queue(), ctx.Queue(), ctx.Event(), ctx.Value("d", 0.0)
        for n in range(processes):
            share = [[p.as_dict() for p in fam] for fam in families[n::processes]]
            args = (url, share, warm.as_dict(), pool_size, ready, go, done_at, results)
            procs.append(ctx.Process(target=_triggerer_process, args=args, name=f"triggerer-{n}"))
        for proc in procs:
            proc.start()
        for _ in procs:
            ready.get(timeout=3600)
        done_at.value = complete_all(store, parents)
        go.set()
        runs = [results.get(timeout=1800) for _ in procs]
        for proc in procs:
            proc.join(60)
        return runs
    finally:
        for proc in procs:
            if proc.is_alive():
                proc.kill()
        drop()
