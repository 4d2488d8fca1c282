"""The production topology of docker/docker-compose.yaml without Docker: CeleryExecutor with Redis (Debian's
redis-server, started by this module), PostgreSQL for Airflow and the catalog, and the scheduler,
dag-processor, API server, two triggerers and two Celery workers as separate processes.

What only this topology shows runs here: two drain runs on two Celery workers competing for the dbt
environment, sensors spread over two triggerers and one triggerer killed under them, a worker killed while
its batch builds. The example flows' other checks (the backfill trio, the run-condition pipeline) run once,
on the LocalExecutor deployment of tests/system/test_multiprocess.py.
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
import os
import re
import shutil
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest
import sqlalchemy as sa

from tests.helpers.airflow_cluster import CELERY_COMPONENTS, celery_settings, free_port
from tests.helpers.example_flows import (
    EXAMPLES,
    RUN_TIMEOUT,
    DbtQueueFlow,
    example_deployment,
    plugin,
)
from tests.helpers.paths import ROOT

pytestmark = pytest.mark.postgres

TEST_DAGS = Path(__file__).parent / "celery_dags"
# Waiting sensors of the failover test: 40 keep the module within the suite's time budget; `make failover`
# runs the scenario alone with 300 (LEASTACTION_FAILOVER_GATES) and writes its durations as JSON to
# LEASTACTION_FAILOVER_REPORT.
GATES = int(os.environ.get("LEASTACTION_FAILOVER_GATES", "40"))
FAILOVER_REPORT = os.environ.get("LEASTACTION_FAILOVER_REPORT")
# Each sensor runs twice on a worker (the start that defers, then the resume), 8 task slots in all: the
# failover waits grow with the number of sensors.
FAILOVER_TIMEOUT = RUN_TIMEOUT + 3 * GATES
FAILOVER_DAY = "2026-11-20T00:00:00Z"
CRASH_DAY = "2026-11-21T00:00:00Z"
INGESTS = ("dbt_ingest_work_orders", "dbt_ingest_time_entries")
FAILOVER_SETTINGS = {
    # A triggerer silent for 10 s is dead: the survivor takes its triggers on its next loop.
    "AIRFLOW__TRIGGERER__TRIGGERER_HEALTH_CHECK_THRESHOLD": "10",
    # A task whose worker died is failed (and retried) after 30 s without a heartbeat, not 5 minutes.
    "AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT": "30",
    "AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT_DETECTION_INTERVAL": "5",
    "LEASTACTION_FAILOVER_GATES": str(GATES),
}


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory):
    env = {
        **os.environ,
        "LEASTACTION_REDIS_PORT": str(free_port()),
        "LEASTACTION_REDIS_DIR": str(tmp_path_factory.mktemp("redis")),
    }
    script = str(ROOT / "scripts" / "redis.sh")
    url = (
        subprocess.run([script, "start"], env=env, check=True, capture_output=True, text=True, timeout=300)
        .stdout.strip()
        .splitlines()[-1]
    )
    yield url
    subprocess.run([script, "stop"], env=env, check=True, timeout=60)


@pytest.fixture(scope="module")
def cluster(pg_admin_url, redis_url, tmp_path_factory):
    work = tmp_path_factory.mktemp("celery")
    dags = work / "dags"
    dags.mkdir()
    for source in [*EXAMPLES.glob("*.py"), *TEST_DAGS.glob("*.py")]:
        shutil.copy(source, dags)

    def settings(airflow_url: str) -> dict[str, str]:
        return {
            **celery_settings(redis_url, airflow_url),
            **FAILOVER_SETTINGS,
            "LEASTACTION_TEST_DBT_HOOKS": str(TEST_DAGS / "hold_dbt"),
            "LEASTACTION_TEST_DBT_HOLD": str(work / "hold-dbt"),
        }

    with example_deployment(
        pg_admin_url, work, dags_folder=dags, settings=settings, components=CELERY_COMPONENTS
    ) as cluster:
        yield cluster


class TestDbtQueue(DbtQueueFlow):
    """Two drain runs started together compete for the field_ops environment."""

    DRAIN_DAGS = ("dbt_queue_worker", "dbt_queue_second_worker")

    def test_one_owner_drains_the_environment_at_a_time(self, queue):
        _, view = queue
        spans = sorted((b["claimed_at"], b["finished_at"], b["owner"]) for b in view["batches"])
        for (_, end, owner), (start, _, other) in itertools.pairwise(spans):
            assert owner == other or end <= start, spans

    def test_the_drain_without_the_lease_claims_nothing(self, queue):
        _, view = queue
        owners = {b["owner"] for b in view["batches"]}
        assert len(owners) == 1, owners


class TestFirstTry:
    def test_every_project_task_ran_on_its_first_try(self, cluster):
        dag_ids = (*INGESTS, "dbt_queue_worker", "dbt_queue_second_worker")
        tries = {
            (dag_id, ti["task_id"]): ti["try_number"]
            for dag_id in dag_ids
            for run in cluster.runs(dag_id)
            for ti in cluster.task_instances(dag_id, run["dag_run_id"])
            if ti["state"] != "skipped"
        }
        assert tries and all(n == 1 for n in tries.values()), {k: n for k, n in tries.items() if n != 1}


def metadata(cluster, sql: str, **params) -> list:
    engine = sa.create_engine(cluster.sql_alchemy_conn)
    try:
        with engine.connect() as conn:
            return conn.execute(sa.text(sql), params).all()
    finally:
        engine.dispose()


def trigger_holders(cluster) -> Counter:
    """Triggerer job id -> how many triggers it runs (None: unassigned)."""
    return Counter(r[0] for r in metadata(cluster, "SELECT triggerer_id FROM trigger"))


TRIGGERERS = ("triggerer-1", "triggerer-2")


#: A triggerer's log line for each failover sensor (``wait_000``...) it starts; the example DAGs' sensors
#: (``wait_for_...``) are not theirs.
STARTED = re.compile(r"^(\S+) .*Start from trigger enabled for task wait_\d{3}\b", re.MULTILINE)


def started_sensors(cluster, name: str) -> list[str]:
    """When the triggerer ``name`` started each failover sensor's trigger, from its own log (ISO times)."""
    return STARTED.findall(cluster.component(name).log_path.read_text(errors="replace"))


def heartbeats(cluster) -> dict[int, dt.datetime]:
    rows = metadata(cluster, "SELECT id, latest_heartbeat FROM job WHERE job_type = 'TriggererJob'")
    return dict(rows)


def all_decisions(cluster, **params) -> list[dict]:
    """Every gate decision the plugin's API lists for ``params``, page after page."""
    items, cursor = [], None
    while True:
        page = plugin(cluster, "decisions", **params, **({"cursor": cursor} if cursor else {}))
        items += page["items"]
        if not (cursor := page.get("next_cursor")):
            return items


def write_failover_report(marks: dict[str, float], before, after, run) -> None:
    """The scenario's durations and trigger placement, for `make failover`."""
    if not FAILOVER_REPORT:
        return
    phases = list(marks.items())
    report = {
        "gates": GATES,
        "triggers_before_kill": sorted(before.values()),
        "triggers_after_kill": sorted(after.values()),
        "run_state": run["state"],
        "seconds": {name: round(at - start, 1) for (_, start), (name, at) in itertools.pairwise(phases)},
        "total_seconds": round(phases[-1][1] - phases[0][1], 1),
    }
    Path(FAILOVER_REPORT).parent.mkdir(parents=True, exist_ok=True)
    Path(FAILOVER_REPORT).write_text(json.dumps(report, indent=2) + "\n")


class TestTriggererFailover:
    @pytest.fixture(scope="class")
    def failover(self, cluster):
        marks = {"start": time.monotonic()}
        cluster.wait_for_dag("failover_gates")
        cluster.backfill("failover_gates", FAILOVER_DAY, FAILOVER_DAY)
        cluster.unpause("failover_gates")
        before = cluster.wait_until(
            lambda: (h := trigger_holders(cluster)) and sum(h.values()) == GATES and None not in h and h,
            FAILOVER_TIMEOUT,
            f"{GATES} deferred sensors assigned to triggerers",
        )
        marks["all_deferred"] = time.monotonic()
        # A trigger is assigned in the metadata database before its triggerer logs its start: wait for the
        # logs to show every sensor started (twice if one moved), so they name the triggerer that holds them.
        cluster.wait_until(
            lambda: sum(len(started_sensors(cluster, name)) for name in TRIGGERERS) >= GATES,
            FAILOVER_TIMEOUT,
            f"the triggerers' logs to show {GATES} sensors started",
        )
        killed_at = metadata(cluster, "SELECT now()")[0][0]
        # Airflow gives a triggerer every unassigned trigger it has room for, and the scheduler creates the
        # sensors' triggers at once (they start in the triggerer), so one triggerer may hold them all: kill
        # the one that started a sensor last, as its log says (a trigger that moved was started again by
        # the triggerer that took it).
        killed = max(TRIGGERERS, key=lambda name: max(started_sensors(cluster, name), default=""))
        cluster.kill(killed)
        holders_then = set(before)

        def moved():
            holders, beats = trigger_holders(cluster), heartbeats(cluster)
            alive = {job for job, beat in beats.items() if beat > killed_at + dt.timedelta(seconds=12)}
            return holders if set(holders) <= alive and sum(holders.values()) == GATES else None

        after = cluster.wait_until(moved, FAILOVER_TIMEOUT, "the triggers of the killed triggerer to move")
        dead = holders_then - set(after)
        marks["triggers_moved"] = time.monotonic()
        cluster.wait_for_dag("failover_parent")
        cluster.backfill("failover_parent", FAILOVER_DAY, FAILOVER_DAY)
        cluster.unpause("failover_parent")
        (run,) = cluster.wait_for_runs("failover_gates", 1, FAILOVER_TIMEOUT)
        marks["all_released"] = time.monotonic()
        write_failover_report(marks, before, after, run)
        return before, after, run, dead

    def test_the_killed_triggerer_held_gates_and_the_survivor_took_them_all(self, failover):
        before, after, _, dead = failover
        assert len(dead) == 1 and before[next(iter(dead))] > 0, (before, after)
        assert len(after) == 1 and sum(after.values()) == GATES and not dead & set(after), (before, after)

    def test_every_gate_is_released_once_after_its_parent_completes(self, cluster, failover):
        _, _, run, _ = failover
        assert run["state"] == "success"
        states = Counter(ti["state"] for ti in cluster.task_instances("failover_gates", run["dag_run_id"]))
        assert states == {"success": GATES}, states
        parent = cluster.task_instances("failover_parent", cluster.runs("failover_parent")[0]["dag_run_id"])[0]
        decisions = all_decisions(cluster, dag_id="failover_gates")
        satisfied = Counter(d["task_id"] for d in decisions if d["result"] == "SATISFIED")
        assert len(satisfied) == GATES and set(satisfied.values()) == {1}, satisfied
        parent_done = dt.datetime.fromisoformat(parent["end_date"])
        assert all(
            dt.datetime.fromisoformat(d["decided_at"]) >= parent_done for d in decisions if d["result"] == "SATISFIED"
        )


def queue_rows(cluster, since: dt.datetime) -> list[dict]:
    engine = sa.create_engine(cluster.catalog_url)
    try:
        with engine.connect() as conn:
            sql = "SELECT unique_id, status, outcome, batch_id FROM la_dbt_queue WHERE first_requested_at >= :since"
            return [dict(r) for r in conn.execute(sa.text(sql), {"since": since}).mappings()]
    finally:
        engine.dispose()


def worker_running(cluster, owner: str) -> str | None:
    """The Celery worker instance that started the batch owner's process (owners end in ``host:pid:nonce``;
    a drain task prefixes its task instance and try)."""
    pid = int(owner.split(":")[-2])
    return next((c.name for c in cluster.workers() if pid in cluster.descendants(c.name)), None)


class TestWorkerCrash:
    @pytest.fixture(scope="class")
    def crash(self, cluster):
        cluster.api("PATCH", "/api/v2/dags/dbt_queue_worker", json={"is_paused": True})
        since = metadata(cluster, "SELECT now()")[0][0]
        for dag_id in INGESTS:
            cluster.backfill(dag_id, CRASH_DAY, CRASH_DAY)
        for dag_id in INGESTS:
            cluster.wait_for_runs(dag_id, 2, RUN_TIMEOUT)
        # The drain's dbt waits at start-up while this file exists: the kill lands while a batch builds.
        hold = Path(cluster.environ["LEASTACTION_TEST_DBT_HOLD"])
        hold.touch()
        run = cluster.trigger("dbt_queue_second_worker")

        def running_batch():
            active = plugin(cluster, "queue", environment="field_ops")["active"]
            owners = {r["owner"] for r in active if r["status"] == "running" and r["owner"]}
            return next(iter(owners), None)

        owner = cluster.wait_until(running_batch, RUN_TIMEOUT, "a batch to start building", interval=0.2)
        victim = worker_running(cluster, owner)
        assert victim, f"no Celery worker runs batch owner {owner}"
        cluster.kill(victim)
        hold.unlink()
        finished = cluster.wait_for_run("dbt_queue_second_worker", run["dag_run_id"], RUN_TIMEOUT)
        return finished, queue_rows(cluster, since), plugin(cluster, "queue", environment="field_ops")

    def test_queue_recovers_after_the_grace_and_the_drain_succeeds(self, crash):
        finished, _, view = crash
        assert finished["state"] == "success"
        statuses = [b["status"] for b in view["batches"]]
        assert "abandoned" in statuses and statuses[0] == "success", view["batches"]
        # What is left waits for its freshness tier (built minutes ago by the first drain), in no batch.
        assert all(r["status"] == "pending" and r["batch_id"] is None for r in view["active"]), view["active"]

    def test_no_model_is_lost_or_built_twice(self, crash):
        _, rows, view = crash
        abandoned = next(b for b in view["batches"] if b["status"] == "abandoned")
        built = Counter(r["unique_id"] for r in rows if r["outcome"] == "success")
        held = {r["unique_id"] for r in rows if r["status"] == "pending" and r["batch_id"] is None}
        assert set(built.values()) == {1}, built
        assert set(built) | held == {r["unique_id"] for r in rows}, rows
        # Every model of the killed batch was requeued and built again, in another batch.
        assert len(built) >= abandoned["model_count"] > 0, (abandoned, rows)
        assert abandoned["id"] not in {r["batch_id"] for r in rows}
