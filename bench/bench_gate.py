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
import os
import statistics
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
UTC = dt.UTC
SLOT = dt.datetime(2026, 11, 28, tzinfo=UTC)


# -- engine -------------------------------------------------------------------------------------------
def engine_rate(k: int, seconds: float = 1.0) -> dict:
    from airflow_leastaction.gate import ALL
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
    if backend == "sqlite":
        return f"sqlite:///{tempfile.mkdtemp(prefix='la-bench-gate-')}/catalog.db", lambda: None
    from bench.common import fresh_database

    return fresh_database(backend)  # PostgreSQL: the durable benchmark server


def write_cost(backend: str, deps: int, attempts: int) -> dict:
    """ms of every attempt with decisions + consumption and of every plain success record, and the
    statements each sends (every one the engine executes counted)."""
    from sqlalchemy import event

    from airflow_leastaction.catalog.engine import dispose_all, get_engine
    from airflow_leastaction.catalog.store import AttemptKey, CatalogStore
    from airflow_leastaction.gate import DependencyType, Judgement
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
            store.record_decisions(AttemptKey("bench", "child__gate", run), judged, downstream_slot=SLOT)
            store.record_success(
                TaskIdentity("bench.child", "bench"),
                SLOT + dt.timedelta(days=i),
                run_id=run,
                consumer=AttemptKey("bench", "child", run),
                gate_task_ids=["child__gate"],
            )

        def plain(i: int):
            store.record_success(TaskIdentity("bench.plain", "bench"), SLOT + dt.timedelta(days=i), run_id=f"p-{i}")

        out, statements = [], []
        sent = [0]

        def count(*_args):
            sent[0] += 1

        for fn in (gated, plain):
            fn(-1)  # warm up
            sent[0] = 0
            event.listen(store.engine, "before_cursor_execute", count)
            times = []
            for i in range(attempts):
                start = time.perf_counter()
                fn(i)
                times.append(round((time.perf_counter() - start) * 1000, 3))
            out.append(times)
            event.remove(store.engine, "before_cursor_execute", count)
            statements.append(sent[0] / attempts)
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


# -- latency ------------------------------------------------------------------------------------------
LATENCY_DAGS = textwrap.dedent("""
    import os
    import time
    from pathlib import Path

    import pendulum
    from airflow.sdk import DAG, task
    from airflow_leastaction.run_conditions import run_condition

    def wait_for_release(run_id, what):
        # Each upstream runs until the driver releases it, so the order of events never depends on how
        # busy the machine is: `first` once the gate waits, the slow ones once the child started.
        marker = Path(os.environ["LEASTACTION_RELEASE_DIR"]) / f"{run_id.replace(':', '_')}.{what}"
        deadline = time.monotonic() + 600
        while not marker.exists():
            if time.monotonic() > deadline:
                raise TimeoutError(f"{marker} never appeared")
            time.sleep(0.1)

    def shape(dag_id, gated, **gate_kwargs):
        with DAG(dag_id, schedule=None, start_date=pendulum.datetime(2026, 1, 1, tz="UTC"), catchup=False):
            @task
            def first(run_id=None):
                wait_for_release(run_id, "first")

            @task
            def slow(n: int, run_id=None):
                wait_for_release(run_id, "slow")

            @task(trigger_rule="all_success" if gated else "one_success")
            def child():
                return "ran"

            ups = [first(), slow.override(task_id="slow_a")(1), slow.override(task_id="slow_b")(2)]
            if gated:
                run_condition(child(), *ups, when="ANY", **gate_kwargs)
            else:
                ups >> child()

    shape("bench_gate_any", gated=True)
    shape("bench_gate_any_worker", gated=True, start_from_trigger=False)
    shape("bench_gate_any_native", gated=True, native=True)
    shape("bench_one_success", gated=False)

    # A ParentIntervalSensor (started and ended in the triggerer) on a task of another DAG: the child run
    # and the parent run share a logical date, and the parent's task ends when the driver releases it.
    from airflow_leastaction.refs import airflow_task
    from airflow_leastaction.sensors import ParentIntervalSensor

    with DAG("bench_sensor_parent", schedule=None, start_date=pendulum.datetime(2026, 1, 1, tz="UTC")):
        @task
        def load(run_id=None):
            wait_for_release(run_id, "load")

        load()

    with DAG("bench_sensor_child", schedule=None, start_date=pendulum.datetime(2026, 1, 1, tz="UTC")):
        @task
        def report():
            return "ran"

        ParentIntervalSensor(task_id="wait", parents=[airflow_task("bench_sensor_parent", "load")]) >> report()
""")


def task_times(cluster, dag_id: str, run_id: str) -> dict:
    parse = dt.datetime.fromisoformat
    return {
        ti["task_id"]: (
            ti["state"],
            ti["start_date"] and parse(ti["start_date"]),
            ti["end_date"] and parse(ti["end_date"]),
        )
        for ti in cluster.task_instances(dag_id, run_id)
    }


def _states(cluster, dag_id: str, run_id: str) -> dict:
    return {ti["task_id"]: ti["state"] for ti in cluster.task_instances(dag_id, run_id)}


def waiting_for_first(cluster, dag_id: str, run_id: str, seen: set) -> bool:
    """``first`` runs and the child waits on it: the gate deferred (gated shape), or nothing to wait for."""
    states = _states(cluster, dag_id, run_id)
    seen.add(states.get("child__gate"))
    return states.get("first") == "running" and states.get("child__gate", "deferred") == "deferred"


def child_started(cluster, dag_id: str, run_id: str, seen: set) -> bool:
    states = _states(cluster, dag_id, run_id)
    seen.add(states.get("child__gate"))
    return states.get("child") not in (None, "scheduled", "queued")


def release(cluster, run_id: str, what: str) -> None:
    """Let the run's ``first`` or ``slow`` upstreams finish (they wait for this marker)."""
    (Path(cluster.environ["LEASTACTION_RELEASE_DIR"]) / f"{run_id.replace(':', '_')}.{what}").touch()


def start_latency(cluster, dag_id: str) -> tuple[float, dict]:
    """Trigger ``dag_id``; release ``first`` once the child waits on it, the slow upstreams once the
    child started. Returns the time from ``first`` ending to the child starting."""
    run = cluster.trigger(dag_id)
    run_id, seen = run["dag_run_id"], set()
    cluster.wait_until(lambda: waiting_for_first(cluster, dag_id, run_id, seen), 300, f"{dag_id}: waiting", 0.3)
    release(cluster, run_id, "first")
    cluster.wait_until(lambda: child_started(cluster, dag_id, run_id, seen), 300, f"{dag_id}: child", 0.3)
    release(cluster, run_id, "slow")
    state = cluster.wait_for_run(dag_id, run["dag_run_id"])["state"]
    if state != "success":  # a failed run has no latency to report: it is listed, with its task states
        return None, {"run_id": run_id, "state": state, "tasks": _states(cluster, dag_id, run_id)}
    times = task_times(cluster, dag_id, run["dag_run_id"])
    return (times["child"][1] - times["first"][2]).total_seconds(), {"times": times, "seen": seen}


def latency_cluster(home: Path, airflow_url: str, catalog_url: str, extra_dags: dict[str, str] | None = None):
    """A scheduler + dag-processor + triggerer + API server with the latency DAGs, on PostgreSQL."""
    sys.path.insert(0, str(ROOT / "tests"))
    from harness.airflow_cluster import AirflowCluster

    dags = home / "dags"
    dags.mkdir(parents=True, exist_ok=True)
    (dags / "bench_gate_dags.py").write_text(LATENCY_DAGS)
    for name, source in (extra_dags or {}).items():
        (dags / name).write_text(source)
    releases = home / "release"
    releases.mkdir(parents=True, exist_ok=True)
    return AirflowCluster(
        dags,
        sql_alchemy_conn=airflow_url,
        catalog_url=catalog_url,
        home=home / "home",
        env={"AIRFLOW__LEASTACTION__POLL_INTERVAL": str(LATENCY_POLL), "LEASTACTION_RELEASE_DIR": str(releases)},
    )


LATENCY_POLL = 0.5  # [leastaction] poll_interval of the latency deployment, seconds
LATENCY_SHAPES = ("bench_gate_any", "bench_gate_any_worker", "bench_gate_any_native", "bench_one_success")
SENSOR_DAGS = ("bench_sensor_parent", "bench_sensor_child")


def sensor_latency(cluster, n: int) -> tuple[float | None, dict]:
    """Run ``n`` of the sensor shape: the parent's ``load`` ends once the child's sensor waits on it. Returns
    the time from ``load`` ending to the sensor ending (its release), with the task times."""
    logical_date = (dt.datetime(2026, 2, 1, tzinfo=dt.UTC) + dt.timedelta(days=n)).isoformat()
    parent = cluster.trigger("bench_sensor_parent", logical_date=logical_date)
    child = cluster.trigger("bench_sensor_child", logical_date=logical_date)

    def waiting() -> bool:
        return (
            _states(cluster, "bench_sensor_child", child["dag_run_id"]).get("wait") == "deferred"
            and _states(cluster, "bench_sensor_parent", parent["dag_run_id"]).get("load") == "running"
        )

    cluster.wait_until(waiting, 300, "bench_sensor_child: the sensor waiting on a running parent", 0.3)
    release(cluster, parent["dag_run_id"], "load")
    states = {
        dag_id: cluster.wait_for_run(dag_id, run["dag_run_id"])["state"]
        for dag_id, run in (("bench_sensor_parent", parent), ("bench_sensor_child", child))
    }
    if set(states.values()) != {"success"}:
        runs = {"bench_sensor_parent": parent["dag_run_id"], "bench_sensor_child": child["dag_run_id"]}
        return None, {"run_id": child["dag_run_id"], "state": states, "tasks": runs}
    load = task_times(cluster, "bench_sensor_parent", parent["dag_run_id"])["load"]
    times = task_times(cluster, "bench_sensor_child", child["dag_run_id"])
    started = (times["report"][1] - load[2]).total_seconds()
    return (times["wait"][2] - load[2]).total_seconds(), {"times": times, "load": load, "report_start_s": started}


def latency(runs: int) -> dict[str, list]:
    """Per DAG of :data:`LATENCY_SHAPES`, ``runs`` (latency or None, details) pairs, the DAGs taking
    turns run by run so a change in the machine's load reaches every shape alike."""
    (airflow_url, drop_airflow), (catalog_url, drop_catalog) = catalog("postgres"), catalog("postgres")
    try:
        with latency_cluster(Path(tempfile.mkdtemp(prefix="la-bench-cluster-")), airflow_url, catalog_url) as cluster:
            for dag_id in LATENCY_SHAPES + SENSOR_DAGS:
                cluster.wait_for_dag(dag_id)
                cluster.unpause(dag_id)
            out: dict[str, list] = {dag_id: [] for dag_id in (*LATENCY_SHAPES, "bench_sensor_child")}
            for n in range(runs):
                for dag_id in LATENCY_SHAPES:
                    out[dag_id].append(start_latency(cluster, dag_id))
                out["bench_sensor_child"].append(sensor_latency(cluster, n))
    finally:
        drop_airflow()
        drop_catalog()
    return out


def main(argv=None) -> int:
    from bench.common import environment, write_json

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", default="engine,writes,latency")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--attempts", type=int, default=200)
    parser.add_argument("--backends", default="sqlite,postgres", help="catalogs of the writes part")
    parser.add_argument("--json", help="write inputs, environment and every raw sample here")
    args = parser.parse_args(argv)
    os.environ.setdefault("AIRFLOW_HOME", tempfile.mkdtemp(prefix="la-bench-home-"))
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
