"""The run-condition gate: engine speed, audit write cost, and start latency next to ``one_success``.

* engine: evaluations per second of one gate (judge every dependency, decide) with 10, 100 and 1,000
  same-run dependencies, one of them still running (the worst case: every dependency is looked at).
* writes: per gate attempt, the decisions (one row per dependency) plus the downstream's success with
  its consumption, on SQLite and PostgreSQL; baseline: the same success record without decisions and
  consumption (what the listener writes for any task).
* latency: a real scheduler + triggerer + workers (LocalExecutor, PostgreSQL): time from the first
  upstream's success to the gated task starting, for an ANY gate started and ended in the triggerer
  (the default), the same gate with ``start_from_trigger=False`` (deferred from and resumed on a
  worker), the same condition declared ``native=True`` (no gate: the task carries ``one_success`` and
  records its decisions when it starts), and Airflow's own ``one_success`` trigger rule, on the same DAG
  shape (one fast upstream, two slow ones).

    .venv/bin/python -m bench.bench_gate [--parts engine,writes,latency] [--runs 7] [--json PATH]
"""

from __future__ import annotations

import argparse
import datetime as dt
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
UTC = dt.UTC
SLOT = dt.datetime(2026, 11, 28, tzinfo=UTC)


# -- engine -------------------------------------------------------------------------------------------
def engine_rate(k: int, seconds: float = 1.0) -> dict:
    from airflow_leastaction.gating.engine import ALL
    from airflow_leastaction.run_conditions.judging import RunView, evaluate
    from airflow_leastaction.run_conditions.model import Dependency, GateSpec
    from airflow_leastaction.run_conditions.wait_rule import WaitClock, WaitPolicy

    ids = [f"up_{i:04d}" for i in range(k)]
    spec = GateSpec("child", tuple(Dependency(t, "HAS_DATA" if i % 3 else "SUCCESS") for i, t in enumerate(ids)), ALL)
    states = {t: "success" for t in ids}
    states[ids[-1]] = "running"
    from airflow_leastaction.run_conditions.latest_run import RunRecord

    records = {t: RunRecord(i, i, SLOT, "r", "success", 1, 5, SLOT, SLOT) for i, t in enumerate(ids)}
    view = RunView("r", states, {"child": ids, **{t: [] for t in ids}}, frozenset({"child__gate"}), records)
    clock, policy, now = WaitClock(SLOT), WaitPolicy(), SLOT
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        evaluate(spec, view, {}, {}, clock, policy, now)
        n += 1
    took = time.perf_counter() - start
    return {"dependencies": k, "evaluations": n, "seconds": round(took, 4), "per_s": n / took}


# -- writes -------------------------------------------------------------------------------------------
def catalog(backend: str):
    from bench.common import fresh_database

    return fresh_database(backend)  # PostgreSQL: the durable benchmark server


def write_cost(backend: str, deps: int, attempts: int) -> dict:
    """ms of every attempt with decisions + consumption and of every plain success record, and the
    statements each sends (every one the engine executes counted)."""
    from sqlalchemy import event

    from airflow_leastaction.catalog.engine import dispose_all, get_engine
    from airflow_leastaction.catalog.store import AttemptKey, CatalogStore
    from airflow_leastaction.gating.engine import DependencyType, Judgement
    from airflow_leastaction.identity import TaskIdentity

    url, drop = catalog(backend)
    try:
        store = CatalogStore(get_engine(url, migrate=True))
        judged = [
            Judgement(
                f"task:up_{i}",
                True,
                f"up_{i} (SUCCESS): upstream succeeded",
                DependencyType.SUCCESS,
                final=True,
                upstream_slot=SLOT,
                upstream_revision=1,
            )
            for i in range(deps)
        ]

        def gated(i: int):
            run = f"run-{i}"
            store.audit.record_decisions(AttemptKey("bench", "child__gate", run), judged, downstream_slot=SLOT)
            store.record_success(
                TaskIdentity("bench.child", "bench"),
                SLOT + dt.timedelta(days=i),
                run_id=run,
                consumer=AttemptKey("bench", "child", run),
                gate_task_ids=["child__gate"],
            )

        def plain(i: int):
            store.record_success(TaskIdentity("bench.plain", "bench"), SLOT + dt.timedelta(days=i), run_id=f"p-{i}")

        sent = [0]

        def count(*_args):
            sent[0] += 1

        gated(-1)  # warm up
        plain(-1)
        # The two take turns attempt by attempt, so a change in the machine's speed (its disk's flushes
        # above all) reaches both alike: timed one after the other, their ratio moved by 1.7x between runs.
        out, sent_by = ([], []), [0, 0]
        event.listen(store.engine, "before_cursor_execute", count)
        for i in range(attempts):
            for n, fn in enumerate((gated, plain)):
                before, start = sent[0], time.perf_counter()
                fn(i)
                out[n].append(round((time.perf_counter() - start) * 1000, 3))
                sent_by[n] += sent[0] - before
        event.remove(store.engine, "before_cursor_execute", count)
        statements = [n / attempts for n in sent_by]
        return {
            "backend": backend,
            "dependencies": deps,
            "gated_ms": out[0],
            "plain_ms": out[1],
            "gated_statements": statements[0],
            "plain_statements": statements[1],
        }
    finally:
        dispose_all()
        drop()


def main(argv=None) -> int:
    from bench.common import environment, temporary_airflow_home, write_json
    from bench.gate_latency import LATENCY_POLL, latency

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", default="engine,writes,latency")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--attempts", type=int, default=200)
    parser.add_argument("--backends", default="sqlite,postgres", help="catalogs of the writes part")
    parser.add_argument("--json", help="write inputs, environment and every raw sample here")
    args = parser.parse_args(argv)
    temporary_airflow_home()
    parts, backends = args.parts.split(","), args.backends.split(",")
    env = environment(set(backends) | ({"postgres"} if "latency" in parts else set()))
    results: dict = {}
    if "engine" in parts:
        results["engine"] = [engine_rate(k) for k in (10, 100, 1000)]
        for r in results["engine"]:
            print(f"engine {r['dependencies']:,} dependencies: {r['per_s']:,.0f} evaluations/s", flush=True)

    def save():  # after each part, so a later part's failure keeps the earlier ones
        write_json(
            args.json,
            "bench_gate",
            {
                "parts": parts,
                "runs": args.runs,
                "attempts": args.attempts,
                "attempts_at_100_dependencies": args.attempts // 4,
                "backends": backends,
            },
            env,
            results,
        )

    save()
    if "writes" in parts:
        results["writes"] = []
        for backend in backends:
            for deps in (1, 10, 100):
                r = write_cost(backend, deps, args.attempts if deps < 100 else args.attempts // 4)
                results["writes"].append(r)
                g, p = statistics.median(r["gated_ms"]), statistics.median(r["plain_ms"])
                print(
                    f"writes {backend} {deps}: {g:.2f} / {p:.2f} ms median ({g / p:.1f}x), statements "
                    f"{r['gated_statements']:.0f} / {r['plain_statements']:.0f}",
                    flush=True,
                )
    save()
    if "latency" in parts:
        measured = latency(args.runs)
        ok = {dag_id: [round(x, 3) for x, _ in pairs if x is not None] for dag_id, pairs in measured.items()}
        results["latency"] = {
            "any_gate_s": ok["bench_gate_any"],
            "any_gate_worker_s": ok["bench_gate_any_worker"],
            "any_native_s": ok["bench_gate_any_native"],
            "one_success_s": ok["bench_one_success"],
            "sensor_release_s": ok["bench_sensor_child"],
            "sensor_child_start_s": [
                round(d["report_start_s"], 3) for x, d in measured["bench_sensor_child"] if x is not None
            ],
            "poll_interval_s": LATENCY_POLL,
            "failed_runs": [d for pairs in measured.values() for x, d in pairs if x is None],
        }
        print(
            f"latency: ANY gate {ok['bench_gate_any']}, on a worker {ok['bench_gate_any_worker']}, "
            f"native {ok['bench_gate_any_native']}, "
            f"one_success {ok['bench_one_success']}, sensor release {ok['bench_sensor_child']}, "
            f"failed runs {len(results['latency']['failed_runs'])}",
            flush=True,
        )
    save()
    return 0


if __name__ == "__main__":
    sys.exit(main())
