"""Many run-condition gates waiting in a real triggerer ask Airflow about their runs once per tick, together:
a deployment of separate processes (scheduler, dag-processor, triggerer, API server; LocalExecutor,
PostgreSQL for Airflow and the catalog), three runs of a DAG whose ten gated tasks each wait on the run's
``up``, a sensor that succeeds once the test lets it (and the run-outcome task every DAG with run
conditions has, which waits on the run's states too).

The triggerer counts the questions its seam sends (``tests/helpers/question_log``: one line per
``GetTaskStates`` message, with the runs it names). While every gate waits, each question names all three
runs, and no more questions are sent than two poll loops make ticks (the gates', and the run-outcome
triggers' own; each sleeps a poll interval after each tick).
Then Airflow cannot be asked for a while: every gate keeps waiting and says why, even once ``up`` has
succeeded; once it can be asked again every gate admits its task and every run succeeds.
"""

from __future__ import annotations

import os
import textwrap
import time
from pathlib import Path

import pytest

from tests.helpers.airflow_cluster import AirflowCluster, fresh_pg_database

pytestmark = pytest.mark.postgres

DAG_ID = "gt_shared_reads"
GATED = [f"gated_{i}" for i in range(10)]
RUNS = 3
POLL = 0.5
STEADY = 12  # questions looked at while every gate waits
TIMEOUT = 300
QUESTION_LOG = Path(__file__).resolve().parents[2] / "helpers" / "question_log"

DAGS = textwrap.dedent("""
    import os
    from pathlib import Path

    import pendulum
    from airflow.providers.standard.sensors.python import PythonSensor
    from airflow.sdk import DAG, task
    from airflow_leastaction.run_conditions import run_condition, success

    with DAG("gt_shared_reads", schedule=None, start_date=pendulum.datetime(2026, 1, 1, tz="UTC"), catchup=False):
        up = PythonSensor(
            task_id="up",
            python_callable=lambda: Path(os.environ["GT_RELEASE"]).exists(),
            mode="poke",  # holding a worker: a rescheduled sensor meets Airflow 3.3's stale executor event race
            poke_interval=0.5,
            timeout=600,
        )
        for i in range(10):
            @task(task_id=f"gated_{i}")
            def gated():
                return "ran"

            run_condition(gated(), success(up))
""")


class Questions:
    """The triggerer's question log: ``(monotonic time, dag_id, run ids)`` per question."""

    def __init__(self, path: Path):
        self.path = path

    def since(self, start: float) -> list[tuple[float, str, tuple[str, ...]]]:
        if not self.path.exists():
            return []
        found = []
        for line in self.path.read_text().splitlines():
            at, _pid, dag_id, runs = line.split(" ")
            if float(at) >= start:
                found.append((float(at), dag_id, tuple(runs.split(","))))
        return found

    def fail(self, on: bool) -> None:
        flag = Path(f"{self.path}.fail")
        flag.touch() if on else flag.unlink()


def gate_states(cluster: AirflowCluster, run_ids: list[str]) -> dict[tuple[str, str], str]:
    return {
        (run_id, ti["task_id"]): ti["state"]
        for run_id in run_ids
        for ti in cluster.task_instances(DAG_ID, run_id)
        if ti["task_id"].endswith("__gate")
    }


def trigger_logs(cluster: AirflowCluster) -> dict[tuple[str, str], str]:
    """What each gate's trigger logged, by (run id, gate task id)."""
    found = {}
    for path in (cluster.home / "logs" / f"dag_id={DAG_ID}").rglob("*.log.trigger.*"):
        run = next(p.name.removeprefix("run_id=") for p in path.parents if p.name.startswith("run_id="))
        gate = next(p.name.removeprefix("task_id=") for p in path.parents if p.name.startswith("task_id="))
        found[(run, gate)] = found.get((run, gate), "") + path.read_text(errors="replace")
    return found


@pytest.fixture(scope="module")
def scenario(pg_admin_url, tmp_path_factory):
    """The whole story, observed step by step; the tests read what was seen."""
    home = tmp_path_factory.mktemp("gates-share-reads")
    airflow_url, drop_airflow = fresh_pg_database(pg_admin_url, "la_gs_airflow")
    catalog_url, drop_catalog = fresh_pg_database(pg_admin_url, "la_gs_catalog")
    (home / "dags").mkdir()
    (home / "dags" / "gt_shared_reads.py").write_text(DAGS)
    release, questions = home / "release", Questions(home / "questions.log")
    cluster = AirflowCluster(
        home / "dags",
        sql_alchemy_conn=airflow_url,
        catalog_url=catalog_url,
        home=home / "home",
        env={"AIRFLOW__LEASTACTION__POLL_INTERVAL": str(POLL), "GT_RELEASE": str(release)},
        component_env={
            "triggerer": {
                "LEASTACTION_QUESTION_LOG": str(questions.path),
                "PYTHONPATH": os.pathsep.join(filter(None, [str(QUESTION_LOG), os.environ.get("PYTHONPATH")])),
            }
        },
    )
    seen: dict = {}
    try:
        with cluster:
            cluster.unpause(DAG_ID)
            run_ids = [cluster.trigger(DAG_ID)["dag_run_id"] for _ in range(RUNS)]
            gates = [(r, f"{g}__gate") for r in run_ids for g in GATED]
            cluster.wait_until(
                lambda: all("waiting:" in trigger_logs(cluster).get(g, "") for g in gates),
                TIMEOUT,
                "every gate to wait in the triggerer",
            )
            start = time.monotonic()
            cluster.wait_until(lambda: len(questions.since(start)) >= STEADY, TIMEOUT, f"{STEADY} questions")
            seen["steady"], seen["steady_from"] = questions.since(start)[:STEADY], start

            questions.fail(True)
            cluster.wait_until(
                lambda: all("cannot look" in trigger_logs(cluster).get(g, "") for g in gates),
                TIMEOUT,
                "every gate to say it cannot look",
            )
            release.touch()
            cluster.wait_until(
                lambda: all(
                    ti["state"] == "success"
                    for r in run_ids
                    for ti in cluster.task_instances(DAG_ID, r)
                    if ti["task_id"] == "up"
                ),
                TIMEOUT,
                "up to succeed in every run",
            )
            succeeded = time.monotonic()
            cluster.wait_until(lambda: len(questions.since(succeeded)) >= 3, TIMEOUT, "3 more failed questions")
            seen["while_failing"] = gate_states(cluster, run_ids)

            questions.fail(False)
            seen["runs"] = {r: cluster.wait_for_run(DAG_ID, r, TIMEOUT)["state"] for r in run_ids}
            seen["tasks"] = {
                (r, ti["task_id"]): ti["state"] for r in run_ids for ti in cluster.task_instances(DAG_ID, r)
            }
            seen["logs"] = {g: trigger_logs(cluster).get(g, "") for g in gates}
            seen["run_ids"] = run_ids
            yield seen
    finally:
        drop_airflow()
        drop_catalog()


def test_while_the_gates_wait_each_question_names_every_waiting_run(scenario):
    asked = scenario["steady"]
    assert len(asked) == STEADY
    assert {(dag_id, runs) for _, dag_id, runs in asked} == {(DAG_ID, tuple(sorted(scenario["run_ids"])))}


def test_the_gates_ask_no_more_often_than_their_poll_loops_tick(scenario):
    # A loop sleeps a poll interval after each tick: in T seconds it makes at most T / POLL + 1 ticks, on any
    # machine, and two loops ask (the gates', the run outcomes'). Thirty-three triggers asking for their own
    # run would send thirty-three questions a tick.
    asked = scenario["steady"]
    span = asked[-1][0] - scenario["steady_from"]
    assert len(asked) <= 2 * (span / POLL + 1), f"{len(asked)} questions in {span:.2f} s"


def test_a_failed_read_keeps_every_gate_waiting_and_each_says_why_once(scenario):
    assert set(scenario["while_failing"].values()) == {"deferred"}
    assert len(scenario["while_failing"]) == RUNS * len(GATED)
    for gate, said in scenario["logs"].items():
        assert said.count("cannot look") == 1, gate
        assert f"Airflow cannot tell the task states of DAG {DAG_ID}" in said, gate
        assert said.count("can look again") == 1, gate


def test_once_airflow_answers_again_every_gate_admits_and_every_run_succeeds(scenario):
    assert set(scenario["runs"].values()) == {"success"}
    for run_id in scenario["run_ids"]:
        for gated in GATED:
            assert scenario["tasks"][(run_id, f"{gated}__gate")] == "success"
            assert scenario["tasks"][(run_id, gated)] == "success"
