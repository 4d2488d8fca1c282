"""The dbt model queue: enqueue throughput, builds saved on overlapping demand, a 24-hour demand replay.

* enqueue: request events per second with 1, 4 and 8 producer processes on PostgreSQL and SQLite (each
  request merges 8 models out of 400 into the queue and writes 8 events); goal: >= 5,000 events/s with
  8 producers on PostgreSQL.
* builds: K overlapping requests (Request A and Request B alternating) on the example dbt-duckdb
  project: model builds and dbt invocations through the queue (one drain) vs one ``dbt build`` per
  request (naive, run one after the other so they do not collide).
* replay: a synthetic 24 hours shaped like the design document's sample (~100,000 model request events,
  a worker draining every 27 minutes with 12-minute builds), replayed through the real store in
  simulated time: the share of requests that became new work, and the time the replay takes.

    .venv/bin/python -m bench.bench_dbt_queue [--parts enqueue,builds,replay] [--requests 1500] [--k 4]
"""

from __future__ import annotations

import argparse
import datetime as dt
import multiprocessing as mp
import random
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
UTC = dt.timezone.utc
MODELS_PER_REQUEST = 8
UNIVERSE = 400
GOAL_EVENTS_PER_S = 5000


def _models(n: int):
    from airflow_leastaction.dbt.planner import PlannedModel

    return [
        PlannedModel(f"model.bench.m{i:04d}", f"m{i:04d}", f"bench.marts.m{i:04d}", "table", "standard")
        for i in range(n)
    ]


def _fresh_catalog(backend: str, workdir: Path) -> tuple[str, callable]:
    """A migrated, empty catalog; ``drop()`` removes it."""
    from airflow_leastaction.catalog.engine import get_engine
    from bench.bench_triggers import catalog_url

    if backend == "sqlite":
        url = f"sqlite:///{workdir}/bench-{uuid.uuid4().hex[:8]}.db"
        drop = lambda: None  # noqa: E731  (the work directory goes away with the run)
    else:
        url, drop = catalog_url(backend)
    get_engine(url, migrate=True)
    return url, drop


# -- enqueue ------------------------------------------------------------------------------------------
def _producer(url: str, requests: int, seed: int, start, done) -> None:
    from airflow_leastaction.catalog.engine import get_engine
    from airflow_leastaction.dbt.policy import BatchKey
    from airflow_leastaction.dbt.queue_store import QueueStore

    queue, key, models, rnd = (
        QueueStore(get_engine(url)),
        BatchKey("bench"),
        _models(UNIVERSE),
        random.Random(seed),
    )
    queue.enqueue(key, rnd.sample(models, MODELS_PER_REQUEST), "warm-up")
    start.wait()
    for i in range(requests):
        queue.enqueue(key, rnd.sample(models, MODELS_PER_REQUEST), f"source:bench.s{i % 16}+")
    done.put(seed)


def enqueue_rate(url: str, producers: int, requests: int) -> float:
    """Model request events per second with ``producers`` processes, each sending ``requests`` requests."""
    ctx = mp.get_context("spawn")
    start, done = ctx.Event(), ctx.Queue()
    procs = [
        ctx.Process(target=_producer, args=(url, requests, seed, start, done)) for seed in range(producers)
    ]
    for p in procs:
        p.start()
    time.sleep(3.0 + producers * 0.5)  # every producer imported and warmed up before the clock starts
    began = time.perf_counter()
    start.set()
    for _ in procs:
        done.get(timeout=600)
    elapsed = time.perf_counter() - began
    for p in procs:
        p.join()
    return producers * requests * MODELS_PER_REQUEST / elapsed


def bench_enqueue(requests: int, workdir: Path) -> None:
    print(f"\nenqueue: events/s ({MODELS_PER_REQUEST} models per request, {requests} requests per producer)")
    print(
        f"| backend | 1 producer | 4 producers | 8 producers | 8 producers vs goal {GOAL_EVENTS_PER_S:,}/s |"
    )
    print("| --- | --- | --- | --- | --- |")
    for backend in ("postgres", "sqlite"):
        rates = []
        for producers in (1, 4, 8):
            url, drop = _fresh_catalog(backend, workdir)
            try:
                rates.append(enqueue_rate(url, producers, requests))
            finally:
                drop()
        print(
            f"| {backend} | {rates[0]:,.0f} | {rates[1]:,.0f} | {rates[2]:,.0f} | "
            f"{rates[2] / GOAL_EVENTS_PER_S:.2f}x |",
            flush=True,
        )


# -- builds -------------------------------------------------------------------------------------------
def bench_builds(k: int, workdir: Path) -> None:
    from airflow_leastaction.catalog.engine import get_engine
    from airflow_leastaction.dbt.planner import Planner
    from airflow_leastaction.dbt.policy import BatchKey, Tier, TierPolicy
    from airflow_leastaction.dbt.queue_store import QueueStore
    from airflow_leastaction.dbt.runner import DbtRunner
    from airflow_leastaction.dbt.worker import QueueWorker

    project = workdir / "field_ops"
    shutil.copytree(
        ROOT / "dags_examples" / "dbt_project",
        project,
        ignore=shutil.ignore_patterns("target", "logs", "*.duckdb*"),
    )
    runner = DbtRunner(project, env={"FIELD_OPS_DUCKDB_PATH": "field_ops.duckdb"})
    with runner.session() as session:
        session.invoke(["build"]).raise_for_exit()  # deploy: views and tables exist
    planner = Planner(runner)
    plans = [planner.plan(s) for s in ("source:field_ops.work_orders+", "source:field_ops.time_entries+")]
    requests = [plans[i % 2] for i in range(k)]

    began = time.perf_counter()
    naive_models = 0
    for plan in requests:
        with runner.session() as session:
            inv = session.build([m.fqn for m in plan.models])
            naive_models += sum(1 for u in inv.node_results().statuses if u.startswith("model."))
    naive_s = time.perf_counter() - began

    url = f"sqlite:///{workdir}/builds.db"
    queue = QueueStore(get_engine(url, migrate=True))
    began = time.perf_counter()
    for plan in requests:
        queue.enqueue(BatchKey("bench"), plan.models, plan.selector)
    no_wait = TierPolicy(tiers=[Tier("fast", 30), Tier("standard", 20), Tier("historical", 10)])
    report = QueueWorker(queue, runner, "bench", policy=no_wait, heartbeat_interval=1.0).drain()
    queue_s = time.perf_counter() - began
    queue_models = sum(len(b.outcomes) for b in report.batches)
    print(f"\nbuilds: {k} overlapping requests (A, B alternating) on real dbt-duckdb")
    print("| path | dbt builds | model builds | wall time | ratio (naive / queue) |")
    print("| --- | --- | --- | --- | --- |")
    print(f"| naive: one dbt build per request | {k} | {naive_models} | {naive_s:.1f} s | 1.0x |")
    print(
        f"| queue: enqueue + one drain | {len(report.batches)} | {queue_models} | {queue_s:.1f} s | "
        f"{naive_models / max(queue_models, 1):.1f}x fewer model builds, {naive_s / queue_s:.1f}x faster |"
    )


# -- replay -------------------------------------------------------------------------------------------
def replay(url: str, seed: int = 7, n_models: int = 480) -> dict:
    """24 simulated hours: requests every ~4.3 s, a worker claiming every 27 min, builds of 12 min."""
    from airflow_leastaction.catalog.engine import get_engine
    from airflow_leastaction.dbt.policy import BatchKey, ModelOutcome, Tier, TierPolicy
    from airflow_leastaction.dbt.queue_store import QueueStore

    rnd = random.Random(seed)
    queue, key = QueueStore(get_engine(url)), BatchKey("replay")
    models = _models(n_models)
    sources = [rnd.sample(models, 5) for _ in range(n_models // 5)]  # overlapping source selections
    policy = TierPolicy(tiers=[Tier("standard", 20)], default="standard")
    t0 = dt.datetime(2026, 11, 28, tzinfo=UTC)
    cycle, build = dt.timedelta(minutes=27), dt.timedelta(minutes=12)
    next_claim, batch, batch_ends = t0, None, None
    now, requests = t0, 0
    queue.acquire_lease("replay", "replayer", dt.timedelta(days=2), now=t0)  # claims need the lease
    began = time.perf_counter()
    while now < t0 + dt.timedelta(hours=24):
        now += dt.timedelta(seconds=rnd.expovariate(1 / 4.32))
        if batch is not None and now >= batch_ends:
            built = {r.unique_id: ModelOutcome.SUCCESS for r in batch.rows}
            queue.finish(
                batch, built, status="success", invocations=1, exit_code=0, message=None, now=batch_ends
            )
            batch = None
        if batch is None and now >= next_claim:
            batch = queue.claim("replay", "replayer", policy, max_size=1000, now=next_claim)
            batch_ends, next_claim = next_claim + build, next_claim + cycle
        source = rnd.randrange(len(sources))
        queue.enqueue(key, sources[source], f"source:replay.s{source}+", now=now)
        requests += 1
    elapsed = time.perf_counter() - began
    counts = queue.outcome_counts("replay")
    return {"requests": requests, "elapsed": elapsed, **counts}


def bench_replay(workdir: Path) -> None:
    print(
        "\nreplay: synthetic 24 h of demand (document's sample: 2,210 new / 55,587 pending / 44,695 running)"
    )
    print(
        "| backend | requests | model request events | new_pending | already_pending | already_running "
        "| became new work | replay time |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for backend in ("postgres", "sqlite"):
        url, drop = _fresh_catalog(backend, workdir)
        try:
            r = replay(url)
        finally:
            drop()
        events = r["new_pending"] + r["already_pending"] + r["already_running"]
        print(
            f"| {backend} | {r['requests']:,} | {events:,} | {r['new_pending']:,} | "
            f"{r['already_pending']:,} | "
            f"{r['already_running']:,} | {r['new_pending'] / events:.1%} | {r['elapsed']:.1f} s |",
            flush=True,
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", default="enqueue,builds,replay")
    parser.add_argument("--requests", type=int, default=1500, help="requests per producer (enqueue)")
    parser.add_argument("--k", type=int, default=4, help="overlapping requests (builds)")
    args = parser.parse_args(argv)
    parts = set(args.parts.split(","))
    with tempfile.TemporaryDirectory(prefix="leastaction-bench-dbt-") as tmp:
        workdir = Path(tmp)
        if "enqueue" in parts:
            bench_enqueue(args.requests, workdir)
        if "builds" in parts:
            bench_builds(args.k, workdir)
        if "replay" in parts:
            bench_replay(workdir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
