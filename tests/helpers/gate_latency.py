"""A deployment for gate start latency (scheduler, dag-processor, triggerer, API server; LocalExecutor,
PostgreSQL) with the ANY shapes and the sensor shape, and the drivers that run them: the real-deployment
tests of run conditions and the start-latency benchmark (``bench/gate_latency.py``) both use it."""

from __future__ import annotations

import datetime as dt
import textwrap
from pathlib import Path

from tests.helpers.airflow_cluster import AirflowCluster

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


def trigger_waits(cluster, dag_id: str, run_id: str, task_id: str, said: str) -> bool:
    """The task's trigger runs and has judged once: its log in the triggerer says ``said``. A deferred
    state is not enough: the triggerer picks a new trigger up on its next loop, up to seconds later, so an
    upstream released then would be timed from before anything waited on it."""
    folder = cluster.home / "logs" / f"dag_id={dag_id}" / f"run_id={run_id}" / f"task_id={task_id}"
    return any(said in log.read_text(errors="replace") for log in folder.glob("attempt=*.log.trigger.*.log"))


def waiting_for_first(cluster, dag_id: str, run_id: str, seen: set) -> bool:
    """``first`` runs and the child waits on it: the gate's trigger judged once (gated shape), or nothing
    to wait for."""
    states = _states(cluster, dag_id, run_id)
    seen.add(states.get("child__gate"))
    if states.get("first") != "running":
        return False
    if "child__gate" not in states:
        return True
    # The gate task's trigger log names the task it gates: "child waiting: ...".
    return states["child__gate"] == "deferred" and trigger_waits(
        cluster, dag_id, run_id, "child__gate", "child waiting:"
    )


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
            and trigger_waits(cluster, "bench_sensor_child", child["dag_run_id"], "wait", "not admitted yet")
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
