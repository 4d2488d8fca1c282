"""The dbt model queue: enqueue throughput, builds saved on overlapping demand, a 24-hour demand replay.

* enqueue: request events per second with 1, 4 and 8 producer processes on PostgreSQL and SQLite (each
  request merges 8 models out of 400 into the queue and writes 8 events); goal: >= 5,000 events/s with
  8 producers on PostgreSQL.
* builds: K overlapping requests (Request A and Request B alternating) on the example dbt-duckdb
  project: model builds and dbt invocations through the queue vs one ``dbt build`` per request (naive,
  run one after the other so they do not collide) and vs one ``dbt build`` of the union of all requests;
  all requests at once, and with the second half arriving while the first build runs.
* replay: a synthetic 24 hours shaped like the design document's sample (~100,000 model request events,
  a worker draining every 27 minutes with 12-minute builds), replayed through the real store in
  simulated time: the share of requests that became new work, and the time the replay takes.

    .venv/bin/python -m bench.bench_dbt_queue [--parts enqueue,builds,replay] [--requests 1500] [--k 4] [--json PATH]
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
UTC = dt.UTC
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
    """A migrated, empty catalog (PostgreSQL: on the durable benchmark server); ``drop()`` removes it."""
    from airflow_leastaction.catalog.engine import get_engine
    from bench.common import fresh_database

    url, drop = fresh_database(backend, workdir)
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


def _claimer(url: str, stop, out) -> None:
    """A worker claiming and settling batches while the producers write, as a drain does."""
    from airflow_leastaction.catalog.engine import get_engine
    from airflow_leastaction.dbt.policy import ModelOutcome, Tier, TierPolicy
    from airflow_leastaction.dbt.queue_store import QueueStore

    queue = QueueStore(get_engine(url))
    policy = TierPolicy(tiers=[Tier("standard", 20)], default="standard")
    queue.acquire_lease("bench", "claimer", dt.timedelta(hours=1))
    batches = 0
    while not stop.is_set():
        batch = queue.claim("bench", "claimer", policy, max_size=50)
        if batch is None:
            stop.wait(0.01)
            continue
        queue.finish(
            batch,
            {r.unique_id: ModelOutcome.SUCCESS for r in batch.rows},
            status="success",
            invocations=1,
            exit_code=0,
            message=None,
        )
        batches += 1
    out.put(batches)


def check_events(url: str, expected: int) -> None:
    """Every request landed: the event count is exact and each event is counted by one queue row."""
    import sqlalchemy as sa

    from airflow_leastaction.catalog.engine import get_engine
    from airflow_leastaction.dbt.schema import dbt_queue, dbt_request_event

    with get_engine(url).connect() as conn:
        events = conn.execute(sa.select(sa.func.count()).select_from(dbt_request_event)).scalar_one()
        merged = conn.execute(sa.select(sa.func.sum(dbt_queue.c.request_count))).scalar_one()
    assert events == expected, f"{events} request events recorded, {expected} sent"
    assert merged == events, f"queue rows count {merged} requests, {events} events recorded"


def enqueue_rate(url: str, producers: int, requests: int) -> dict:
    """Events per second with ``producers`` processes sending ``requests`` requests each, and a claimer."""
    ctx = mp.get_context("spawn")
    start, done, stop, claimed = ctx.Event(), ctx.Queue(), ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=_producer, args=(url, requests, seed, start, done)) for seed in range(producers)]
    claimer = ctx.Process(target=_claimer, args=(url, stop, claimed))
    for p in procs + [claimer]:
        p.start()
    time.sleep(3.0 + producers * 0.5)  # every producer imported and warmed up before the clock starts
    began = time.perf_counter()
    start.set()
    for _ in procs:
        done.get(timeout=600)
    elapsed = time.perf_counter() - began
    stop.set()
    batches = claimed.get(timeout=120)
    for p in procs + [claimer]:
        p.join()
    check_events(url, producers * (requests + 1) * MODELS_PER_REQUEST)  # + each producer's warm-up
    return {
        "producers": producers,
        "elapsed_s": round(elapsed, 3),
        "claimed_batches": batches,
        "events_per_s": round(producers * requests * MODELS_PER_REQUEST / elapsed, 1),
    }


def bench_enqueue(requests: int, workdir: Path, backends) -> list:
    print(f"\nenqueue: events/s ({MODELS_PER_REQUEST} models per request, {requests} requests per producer)")
    results = []
    for backend in backends:
        for producers in (1, 4, 8):
            url, drop = _fresh_catalog(backend, workdir)
            try:
                r = enqueue_rate(url, producers, requests)
            finally:
                drop()
            results.append({"backend": backend, **r})
            print(
                f"{backend} {producers} producers: {r['events_per_s']:,.0f} events/s "
                f"({r['claimed_batches']} batches claimed meanwhile)",
                flush=True,
            )
    return results


# -- builds -------------------------------------------------------------------------------------------
def _model_builds(inv) -> int:
    return sum(1 for u in inv.node_results().statuses if u.startswith("model."))


def _dbt_builds(runner, selections) -> dict:
    """One ``dbt build`` per selection, one after another (concurrent builds collide on DuckDB's lock)."""
    began, models = time.perf_counter(), 0
    for fqns in selections:
        with runner.session() as session:
            models += _model_builds(session.build(sorted(fqns)))
    return {"dbt_builds": len(selections), "model_builds": models, "wall_s": round(time.perf_counter() - began, 2)}


def _queue_path(runner, workdir: Path, early, late) -> dict:
    """Enqueue ``early``, drain; ``late`` requests are enqueued while the drain's first build runs."""
    import threading

    import sqlalchemy as sa

    from airflow_leastaction.catalog.engine import get_engine
    from airflow_leastaction.dbt.policy import BatchKey, Tier, TierPolicy
    from airflow_leastaction.dbt.queue_store import QueueStore
    from airflow_leastaction.dbt.schema import dbt_queue
    from airflow_leastaction.dbt.worker import QueueWorker

    url = f"sqlite:///{workdir}/builds-{uuid.uuid4().hex[:8]}.db"
    queue = QueueStore(get_engine(url, migrate=True))
    no_wait = TierPolicy(tiers=[Tier("fast", 30), Tier("standard", 20), Tier("historical", 10)])
    reports = []
    began = time.perf_counter()
    for plan in early:
        queue.enqueue(BatchKey("bench"), plan.models, plan.selector)
    drain = threading.Thread(
        target=lambda: reports.append(
            QueueWorker(queue, runner, "bench", policy=no_wait, heartbeat_interval=1.0).drain()
        )
    )
    drain.start()
    if late:
        running = sa.select(sa.func.count()).where(dbt_queue.c.status == "running")
        while drain.is_alive():  # the late requests arrive once a build is under way
            with queue.engine.connect() as conn:
                if conn.execute(running).scalar_one():
                    break
            time.sleep(0.05)
        for plan in late:
            queue.enqueue(BatchKey("bench"), plan.models, plan.selector)
    drain.join()
    if late:  # what arrived after the drain's last claim waits for the next drain
        reports.append(QueueWorker(queue, runner, "bench", policy=no_wait, heartbeat_interval=1.0).drain())
    batches = [b for r in reports for b in r.batches]
    return {
        "dbt_builds": len(batches),
        "model_builds": sum(len(b.outcomes) for b in batches),
        "drains": len(reports),
        "wall_s": round(time.perf_counter() - began, 2),
    }


def bench_builds(k: int, workdir: Path) -> dict:
    from airflow_leastaction.dbt.planner import Planner
    from airflow_leastaction.dbt.runner import DbtRunner

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
    early, late = requests[: (k + 1) // 2], requests[(k + 1) // 2 :]

    def union(group):
        return {m.fqn for plan in group for m in plan.models}

    results = {
        "k": k,
        "all_at_once": {
            "naive": _dbt_builds(runner, [{m.fqn for m in p.models} for p in requests]),
            "union": _dbt_builds(runner, [union(requests)]),
            "queue": _queue_path(runner, workdir, requests, []),
        },
        "arriving_during_build": {
            "early": len(early),
            "late": len(late),
            "naive": _dbt_builds(runner, [{m.fqn for m in p.models} for p in requests]),
            # A build cannot include what is requested after it started: the union is built twice.
            "union": _dbt_builds(runner, [union(early)] + ([union(late)] if late else [])),
            "queue": _queue_path(runner, workdir, early, late),
        },
    }
    for case in ("all_at_once", "arriving_during_build"):
        for path in ("naive", "union", "queue"):
            r = results[case][path]
            print(
                f"builds {case} {path}: {r['dbt_builds']} dbt builds, {r['model_builds']} model builds, "
                f"{r['wall_s']:.1f} s",
                flush=True,
            )
    return results


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
            queue.finish(batch, built, status="success", invocations=1, exit_code=0, message=None, now=batch_ends)
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


def bench_replay(workdir: Path, backends) -> list:
    results = []
    for backend in backends:
        url, drop = _fresh_catalog(backend, workdir)
        try:
            r = replay(url)
        finally:
            drop()
        events = r["new_pending"] + r["already_pending"] + r["already_running"]
        print(
            f"replay {backend}: {r['requests']:,} requests, {events:,} events, {r['new_pending'] / events:.1%} "
            f"new work, {r['elapsed']:.1f} s",
            flush=True,
        )
        results.append({"backend": backend, **r, "elapsed": round(r["elapsed"], 2)})
    return results


def main(argv: list[str] | None = None) -> int:
    from bench.common import environment, write_json

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", default="enqueue,builds,replay")
    parser.add_argument("--requests", type=int, default=1500, help="requests per producer (enqueue)")
    parser.add_argument("--k", type=int, default=4, help="overlapping requests (builds)")
    parser.add_argument("--backends", default="postgres,sqlite")
    parser.add_argument("--json", help="write inputs, environment and every raw sample here")
    args = parser.parse_args(argv)
    parts, backends = args.parts.split(","), args.backends.split(",")
    env = environment(backends)
    results = {}
    with tempfile.TemporaryDirectory(prefix="leastaction-bench-dbt-") as tmp:
        workdir = Path(tmp)
        if "enqueue" in parts:
            results["enqueue"] = bench_enqueue(args.requests, workdir, backends)
        if "builds" in parts:
            results["builds"] = bench_builds(args.k, workdir)
        if "replay" in parts:
            results["replay"] = bench_replay(workdir, backends)
    write_json(
        args.json,
        "bench_dbt_queue",
        {
            "parts": parts,
            "requests_per_producer": args.requests,
            "models_per_request": MODELS_PER_REQUEST,
            "universe": UNIVERSE,
            "k": args.k,
            "backends": backends,
            "goal_events_per_s": GOAL_EVENTS_PER_S,
        },
        env,
        results,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
