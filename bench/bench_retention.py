"""Retention: prune a large decision history while gates keep recording decisions.

For each backend (a real SQLite file, the durable benchmark PostgreSQL), the catalog is filled with N
old gate decisions and N/5 consumption records pointing at them (the UI benchmark's proportion), then
``prune_catalog`` deletes everything older than a cutoff in its batches while W writer processes keep
recording gate attempts (3 decisions each, in one statement, as a gate does). Reported: rows pruned per
second, and the writers' single-write latencies before the prune and during it (the longest is the
longest stall a gate saw).

    .venv/bin/python -m bench.bench_retention [--rows 1000000] [--writers 2] [--backends sqlite,postgres] [--json PATH]
"""

from __future__ import annotations

import argparse
import datetime as dt
import multiprocessing as mp
import os
import sys
import tempfile
import time

import sqlalchemy as sa

UTC = dt.timezone.utc
OLD = dt.datetime(2026, 1, 1, tzinfo=UTC)
CUTOFF = dt.datetime(2026, 6, 1, tzinfo=UTC)
CONSUMPTION_EVERY = 5  # one consumption record per 5 decisions
CHUNK = 10_000
BEFORE_S = 5.0  # writers' latencies measured this long before the prune starts


def seed(url: str, rows: int) -> float:
    """N old decisions and N/5 consumption records, in bulk; returns the seconds it took."""
    from airflow_leastaction.catalog.engine import get_engine
    from airflow_leastaction.catalog.schema import consumption, gate_decision

    engine, began = get_engine(url, migrate=True), time.perf_counter()
    for start in range(0, rows, CHUNK):
        batch = []
        for i in range(start, min(rows, start + CHUNK)):
            at = OLD + dt.timedelta(seconds=i)
            batch.append(dict(dag_id=f"dag_{i % 500:03d}", task_id=f"task_{i % 40:02d}", run_id=f"run_{i // 40}",
                              map_index=-1, attempt=1, downstream_slot=at, dependency=f"task:up_{i % 3}",
                              dependency_type="SUCCESS", result="SATISFIED", reason="upstream succeeded",
                              decided_at=at))
        with engine.begin() as conn:
            first = conn.execute(sa.select(sa.func.coalesce(sa.func.max(gate_decision.c.id), 0))).scalar()
            conn.execute(sa.insert(gate_decision), batch)
            conn.execute(sa.insert(consumption), [
                dict(decision_id=first + 1 + j, dag_id=row["dag_id"], task_id=row["task_id"], run_id=row["run_id"],
                     map_index=-1, attempt=1, downstream_slot=row["downstream_slot"], dependency=row["dependency"],
                     consumed_at=row["decided_at"])
                for j, row in enumerate(batch) if (start + j) % CONSUMPTION_EVERY == 0])
    return time.perf_counter() - began


def _writer(url: str, seed_: int, go, stop, out) -> None:
    """Record gate attempts back to back; send (start, latency) of every write when told to stop."""
    from airflow_leastaction.catalog.audit import AttemptKey
    from airflow_leastaction.catalog.engine import get_engine
    from airflow_leastaction.catalog.store import CatalogStore
    from airflow_leastaction.gate import Judgement

    store = CatalogStore(get_engine(url))
    judgements = [Judgement(f"task:up_{i}", True, "upstream succeeded") for i in range(3)]
    slot = dt.datetime.now(UTC)
    store.record_decisions(AttemptKey("live", f"w{seed_}", "warm"), judgements, downstream_slot=slot)
    samples, n = [], 0
    go.wait()
    while not stop.is_set():
        n += 1
        began = time.monotonic()
        store.record_decisions(AttemptKey("live", f"w{seed_}", f"r{n}"), judgements, downstream_slot=slot)
        samples.append((began, time.monotonic() - began))
    out.put(samples)


def run_backend(backend: str, rows: int, writers: int, batch_size: int) -> dict:
    from airflow_leastaction.catalog.engine import dispose_all
    from airflow_leastaction.catalog.retention import prune_catalog
    from bench.common import fresh_database

    url, drop = fresh_database(backend)
    conn_id = f"la_bench_retention_{backend}"
    os.environ[f"AIRFLOW_CONN_{conn_id.upper()}"] = (
        '{"conn_type": "leastaction_catalog", "extra": {"url": "%s"}}' % url)
    try:
        seed_s = seed(url, rows)
        dispose_all()
        ctx = mp.get_context("spawn")
        go, stop, out = ctx.Event(), ctx.Event(), ctx.Queue()
        procs = [ctx.Process(target=_writer, args=(url, i, go, stop, out)) for i in range(writers)]
        for p in procs:
            p.start()
        time.sleep(3.0 + writers)  # writers imported and connected before the clock starts
        go.set()
        time.sleep(BEFORE_S)
        prune_start = time.monotonic()
        report = prune_catalog(CUTOFF, conn_id=conn_id, batch_size=batch_size)
        prune_end = time.monotonic()
        stop.set()
        samples = [s for _ in procs for s in out.get(timeout=120)]
        for p in procs:
            p.join()
        return _result(backend, rows, writers, batch_size, seed_s, report, prune_start, prune_end, samples)
    finally:
        drop()


def _result(backend, rows, writers, batch_size, seed_s, report, prune_start, prune_end, samples) -> dict:
    counts = report.counts()
    pruned = counts.get("la_gate_decision", 0) + counts.get("la_consumption", 0)
    # Correctness, never timing: the prune removed exactly the seeded history and kept every live write.
    expected = rows + (rows + CONSUMPTION_EVERY - 1) // CONSUMPTION_EVERY
    assert pruned == expected, f"{backend}: pruned {pruned} rows, seeded {expected}"
    before = [round(lat, 5) for t, lat in samples if t < prune_start]
    during = [round(lat, 5) for t, lat in samples if prune_start <= t < prune_end]
    return {"backend": backend, "rows": rows, "writers": writers, "batch_size": batch_size,
            "seed_s": round(seed_s, 2), "prune_s": round(prune_end - prune_start, 3),
            "pruned": counts, "transactions": {n: t.transactions for n, t in report.tables.items()},
            "write_latency_before_s": before, "write_latency_during_s": during}


def derived(r: dict) -> dict:
    from bench.common import summary

    pruned = r["pruned"]["la_gate_decision"] + r["pruned"]["la_consumption"]
    return {"rows_per_s": pruned / r["prune_s"], "before": summary(r["write_latency_before_s"]),
            "during": summary(r["write_latency_during_s"])}


def main(argv=None) -> int:
    from airflow_leastaction.catalog.retention import DEFAULT_BATCH_SIZE
    from bench.common import environment, write_json

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="old gate decisions to prune")
    parser.add_argument("--writers", type=int, default=2, help="concurrent writer processes")
    parser.add_argument("--batch-size", type=int, default=DEFAULT_BATCH_SIZE)
    parser.add_argument("--backends", default="sqlite,postgres")
    parser.add_argument("--json", help="write inputs, environment and every raw sample here")
    args = parser.parse_args(argv)
    os.environ.setdefault("AIRFLOW_HOME", tempfile.mkdtemp(prefix="la-bench-home-"))
    backends = args.backends.split(",")
    env = environment(backends)
    results = []
    for backend in backends:
        r = run_backend(backend, args.rows, args.writers, args.batch_size)
        d = derived(r)
        print(f"{backend}: {d['rows_per_s']:,.0f} rows/s over {r['prune_s']:.1f} s; write latency max "
              f"{d['before']['max'] * 1000:.1f} ms before, {d['during']['max'] * 1000:.1f} ms during", flush=True)
        results.append(r)
    write_json(args.json, "bench_retention", {"rows": args.rows, "consumption_per_decision": 1 / CONSUMPTION_EVERY,
                                              "writers": args.writers, "batch_size": args.batch_size,
                                              "backends": backends, "before_s": BEFORE_S,
                                              "cutoff": CUTOFF.isoformat()}, env, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
