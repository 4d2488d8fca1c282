"""Retention: prune a large decision history while gates keep recording decisions.

For each backend (a real SQLite file, the durable benchmark PostgreSQL), the catalog is filled with N
old gate decisions and N/5 consumption records pointing at them (the UI benchmark's proportion), then
``prune_catalog`` deletes everything older than a cutoff in its batches while W writer processes keep
recording gate attempts (3 decisions each, in one statement, as a gate does; one every 50 ms per
writer). Reported: rows pruned per second, and the writers' single-write latencies before the prune and
during it (the longest is the longest stall a gate saw).

    .venv/bin/python -m bench.bench_retention [--rows 1000000] [--writers 2] [--write-interval 0.05]
        [--backends sqlite,postgres] [--json PATH]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import multiprocessing as mp
import os
import sys
import time

import sqlalchemy as sa

UTC = dt.UTC
OLD = dt.datetime(2026, 1, 1, tzinfo=UTC)
CUTOFF = dt.datetime(2026, 6, 1, tzinfo=UTC)
CONSUMPTION_EVERY = 5  # one consumption record per 5 decisions
BEFORE_S = 5.0  # writers' latencies measured this long before the prune starts


DECISION_COLUMNS = (
    "id,dag_id,task_id,run_id,map_index,attempt,downstream_slot,dependency,dependency_type,result,reason,decided_at"
)
CONSUMPTION_COLUMNS = "id,decision_id,dag_id,task_id,run_id,map_index,attempt,downstream_slot,dependency,consumed_at"


def _rows(rows: int, dialect: str):
    """(decision rows, consumption rows) as tuples in the column orders above."""
    from bench.bench_ui import _stamp

    decisions, consumed = [], []
    for i in range(1, rows + 1):
        at = _stamp(OLD + dt.timedelta(seconds=i), dialect)
        who = (f"dag_{i % 500:03d}", f"task_{i % 40:02d}", f"run_{i // 40}", -1, 1, at, f"task:up_{i % 3}")
        decisions.append((i, *who[:6], who[6], "SUCCESS", "SATISFIED", "upstream succeeded", at))
        if i % CONSUMPTION_EVERY == 1 or CONSUMPTION_EVERY == 1:
            consumed.append((len(consumed) + 1, i, *who, at))
    return decisions, consumed


def seed(url: str, rows: int) -> float:
    """N old decisions and N/5 consumption records, bulk loaded (COPY on PostgreSQL); returns the seconds."""
    from airflow_leastaction.catalog.engine import get_engine

    engine = get_engine(url, migrate=True)
    began = time.perf_counter()
    decisions, consumed = _rows(rows, engine.dialect.name)
    _load(engine, "la_gate_decision", DECISION_COLUMNS, decisions)
    _load(engine, "la_consumption", CONSUMPTION_COLUMNS, consumed)
    if engine.dialect.name == "postgresql":
        with engine.begin() as conn:
            for table in ("la_gate_decision", "la_consumption"):
                conn.execute(
                    sa.text(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), (SELECT max(id) FROM {table}))")
                )
            conn.execute(sa.text("ANALYZE"))
    return time.perf_counter() - began


def _load(engine, table: str, columns: str, rows) -> None:
    import csv
    import io

    raw = engine.raw_connection()
    try:
        cur = raw.cursor()
        if engine.dialect.name == "sqlite":
            cur.execute("BEGIN")
            cur.executemany(f"INSERT INTO {table} ({columns}) VALUES ({','.join('?' * len(columns.split(',')))})", rows)
            cur.execute("COMMIT")
        else:
            buf = io.StringIO()
            csv.writer(buf, quoting=csv.QUOTE_NONNUMERIC).writerows(rows)
            buf.seek(0)
            cur.copy_expert(f"COPY {table} ({columns}) FROM STDIN WITH (FORMAT csv)", buf)
            raw.commit()
    finally:
        raw.close()


def _writer(url: str, seed_: int, interval: float, go, stop, out) -> None:
    """Record a gate attempt every ``interval`` seconds, as waiting gates do; send (start, latency) of every
    write when told to stop."""
    from airflow_leastaction.catalog.audit import AttemptKey
    from airflow_leastaction.catalog.engine import get_engine
    from airflow_leastaction.catalog.store import CatalogStore
    from airflow_leastaction.gating.engine import Judgement

    store = CatalogStore(get_engine(url))
    judgements = [Judgement(f"task:up_{i}", True, "upstream succeeded") for i in range(3)]
    slot = dt.datetime.now(UTC)
    store.audit.record_decisions(AttemptKey("live", f"w{seed_}", "warm"), judgements, downstream_slot=slot)
    samples, n = [], 0
    go.wait()
    while not stop.is_set():
        n += 1
        began = time.monotonic()
        store.audit.record_decisions(AttemptKey("live", f"w{seed_}", f"r{n}"), judgements, downstream_slot=slot)
        samples.append((began, time.monotonic() - began))
        stop.wait(interval)
    out.put(samples)


def run_backend(backend: str, rows: int, writers: int, interval: float, batch_size: int) -> dict:
    from airflow_leastaction.catalog.engine import dispose_all
    from airflow_leastaction.catalog.retention import prune_catalog
    from bench.common import fresh_database

    url, drop = fresh_database(backend)
    conn_id = f"la_bench_retention_{backend}"
    os.environ[f"AIRFLOW_CONN_{conn_id.upper()}"] = json.dumps(
        {"conn_type": "leastaction_catalog", "extra": {"url": url}}
    )
    try:
        seed_s = seed(url, rows)
        dispose_all()
        ctx = mp.get_context("spawn")
        go, stop, out = ctx.Event(), ctx.Event(), ctx.Queue()
        procs = [ctx.Process(target=_writer, args=(url, i, interval, go, stop, out)) for i in range(writers)]
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
    return {
        "backend": backend,
        "rows": rows,
        "writers": writers,
        "batch_size": batch_size,
        "seed_s": round(seed_s, 2),
        "prune_s": round(prune_end - prune_start, 3),
        "pruned": counts,
        "transactions": {n: t.transactions for n, t in report.tables.items()},
        "write_latency_before_s": before,
        "write_latency_during_s": during,
    }


def derived(r: dict) -> dict:
    from bench.common import summary

    pruned = r["pruned"]["la_gate_decision"] + r["pruned"]["la_consumption"]
    return {
        "rows_per_s": pruned / r["prune_s"],
        "before": summary(r["write_latency_before_s"]),
        "during": summary(r["write_latency_during_s"]),
    }


def main(argv=None) -> int:
    from airflow_leastaction.catalog.retention import DEFAULT_BATCH_SIZE
    from bench.common import environment, temporary_airflow_home, write_json

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="old gate decisions to prune")
    parser.add_argument("--writers", type=int, default=2, help="concurrent writer processes")
    parser.add_argument("--write-interval", type=float, default=0.05, help="seconds between one writer's gate attempts")
    parser.add_argument("--batch-size", type=int, default=DEFAULT_BATCH_SIZE)
    parser.add_argument("--backends", default="sqlite,postgres")
    parser.add_argument("--json", help="write inputs, environment and every raw sample here")
    args = parser.parse_args(argv)
    temporary_airflow_home()
    backends = args.backends.split(",")
    env = environment(backends)
    results = []
    for backend in backends:
        r = run_backend(backend, args.rows, args.writers, args.write_interval, args.batch_size)
        d = derived(r)
        print(
            f"{backend}: {d['rows_per_s']:,.0f} rows/s over {r['prune_s']:.1f} s; write latency max "
            f"{d['before']['max'] * 1000:.1f} ms before, {d['during']['max'] * 1000:.1f} ms during",
            flush=True,
        )
        results.append(r)
    write_json(
        args.json,
        "bench_retention",
        {
            "rows": args.rows,
            "consumption_per_decision": 1 / CONSUMPTION_EVERY,
            "writers": args.writers,
            "write_interval_s": args.write_interval,
            "batch_size": args.batch_size,
            "backends": backends,
            "before_s": BEFORE_S,
            "cutoff": CUTOFF.isoformat(),
        },
        env,
        results,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
