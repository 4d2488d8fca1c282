"""The production topology of docker/docker-compose.yaml without Docker: CeleryExecutor with Redis (Debian's
redis-server, started by this module), PostgreSQL for Airflow and the catalog, and the scheduler,
dag-processor, API server, two triggerers and two Celery workers as separate processes.

What only this topology shows runs here: two drain runs on two Celery workers competing for the dbt
environment, sensors spread over two triggerers and one triggerer killed under them, sensors routed to a
triggerer queue whose triggerer is killed under them (a Celery worker and two triggerers of that queue are
added for it, on Airflow 3.2 and later), a worker killed while its batch builds. The example flows' other
checks (the backfill trio, the run-condition pipeline) run once, on the LocalExecutor deployment of
tests/system/test_multiprocess.py.
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

from airflow_leastaction.version_compat import TRIGGERER_QUEUES
from tests.helpers.airflow_cluster import CELERY_COMPONENTS, celery_settings, free_port
from tests.helpers.airflow_minors import needs
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
HEALTH_CHECK_THRESHOLD = "10"
FAILOVER_SETTINGS = {
    # A triggerer silent for 10 s is dead: the survivor takes its triggers on its next loop.
    "AIRFLOW__TRIGGERER__TRIGGERER_HEALTH_CHECK_THRESHOLD": HEALTH_CHECK_THRESHOLD,
    # A task whose worker died is failed (and retried) after 30 s without a heartbeat, not 5 minutes.
    "AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT": "30",
    "AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT_DETECTION_INTERVAL": "5",
    "LEASTACTION_FAILOVER_GATES": str(GATES),
    "LEASTACTION_QUEUE_FAILOVER_GATES": os.environ.get("LEASTACTION_QUEUE_FAILOVER_GATES", "8"),
}
#: ``[triggerer] queues_enabled`` is read where a task defers (the worker) and where leastaction chooses a
#: gate's queue (the dag-processor, at parse time), and a triggerer needs it for ``--queues`` (the cluster
#: sets it there). Only the worker of the routed queue has it: the default workers' deferrals keep no
#: queue, as the other tests' triggerers (started without ``--queues``) expect on every Airflow minor.
QUEUES_ENABLED = {"AIRFLOW__TRIGGERER__QUEUES_ENABLED": "True"}
#: The routed queue of the queue failover test (celery_dags/failover_dags.py) and what serves it.
QUEUE = "team_a"
QUEUE_WORKER = f"celery worker --queues {QUEUE}"
QUEUE_TRIGGERER = f"triggerer --queues {QUEUE}"
# Its sensors: LEASTACTION_QUEUE_FAILOVER_GATES for another count; with LEASTACTION_FAILOVER_REPORT set,
# the takeover's durations go to queue-failover.json beside that report.
QUEUE_GATES = int(os.environ.get("LEASTACTION_QUEUE_FAILOVER_GATES", "8"))


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

    routed = {"dag-processor": QUEUES_ENABLED, QUEUE_WORKER: QUEUES_ENABLED} if TRIGGERER_QUEUES else {}
    with example_deployment(
        pg_admin_url, work, dags_folder=dags, settings=settings, components=CELERY_COMPONENTS, component_env=routed
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


def triggerer_jobs(cluster) -> set[int]:
    return set(heartbeats(cluster))


def queue_triggers(cluster) -> dict[str, tuple[str | None, int | None]]:
    """Task id -> (trigger queue, triggerer job id) of each deferred sensor of ``queue_failover_gates``."""
    rows = metadata(
        cluster,
        "SELECT ti.task_id, t.queue, t.triggerer_id FROM task_instance ti JOIN trigger t ON t.id = ti.trigger_id"
        " WHERE ti.dag_id = 'queue_failover_gates'",
    )
    return {task_id: (queue, job) for task_id, queue, job in rows}


def trigger_starts(cluster) -> dict[tuple[str, int], dt.datetime]:
    """(task id, triggerer job id) -> when that triggerer started the task's trigger, for the sensors of
    ``queue_failover_gates``: from the trigger log files Airflow writes per task and triggerer job
    (``attempt=1.log.trigger.<job id>.log``), whose first line is the trigger's start."""
    found = {}
    for path in (Path(cluster.home) / "logs" / "dag_id=queue_failover_gates").rglob("*.log.trigger.*.log"):
        first = path.read_text(errors="replace").partition("\n")
        if not first[1]:
            continue  # not written yet
        task_id = next(part for part in path.parts if part.startswith("task_id=")).removeprefix("task_id=")
        job = int(path.name.rsplit(".", 2)[-2])
        found[task_id, job] = dt.datetime.fromisoformat(json.loads(first[0])["timestamp"])
    return found


def started_by(cluster, job: int) -> set[str]:
    return {task_id for task_id, holder in trigger_starts(cluster) if holder == job}


def add_triggerer(cluster, known: set[int]) -> tuple[str, int]:
    """Start a triggerer of the routed queue; its name and its job id (the triggerer job not in ``known``)."""
    name = cluster.add(QUEUE_TRIGGERER).name
    job = cluster.wait_until(lambda: next(iter(triggerer_jobs(cluster) - known), None), RUN_TIMEOUT, f"{name}'s job")
    return name, job


@needs(TRIGGERER_QUEUES, "triggerer queues (airflow triggerer --queues, [triggerer] queues_enabled; Airflow 3.2)")
class TestTriggererQueueFailover:
    """Sensors routed to queue team_a wait in the one triggerer of that queue; a second triggerer of the
    queue starts, the first is killed (-9) and the second takes every sensor over. The two triggerers
    started without --queues run on beside them and must never run one."""

    @pytest.fixture(scope="class")
    def queue_failover(self, cluster):
        gates = {f"gate_{i:03d}" for i in range(QUEUE_GATES)}
        timeout = RUN_TIMEOUT + 3 * QUEUE_GATES
        cluster.add(QUEUE_WORKER)
        unrouted = triggerer_jobs(cluster)
        # Each triggerer of the queue starts alone, so the job that appears is its own.
        first, first_job = add_triggerer(cluster, unrouted)
        cluster.wait_for_dag("queue_failover_gates")
        cluster.backfill("queue_failover_gates", FAILOVER_DAY, FAILOVER_DAY)
        cluster.unpause("queue_failover_gates")
        before = cluster.wait_until(
            lambda: (t := queue_triggers(cluster)) and set(t) == gates and all(job for _, job in t.values()) and t,
            timeout,
            f"{QUEUE_GATES} routed sensors deferred and assigned",
        )
        cluster.wait_until(lambda: started_by(cluster, first_job) >= gates, timeout, f"{first} to start every sensor")
        _, standby_job = add_triggerer(cluster, unrouted | {first_job})
        killed_at = metadata(cluster, "SELECT now()")[0][0]
        cluster.kill(first)

        def taken_over():
            held = queue_triggers(cluster)
            starts = trigger_starts(cluster)
            moved = all(job not in (None, first_job) and (task, job) in starts for task, (_, job) in held.items())
            return held if set(held) == gates and moved else None

        after = cluster.wait_until(taken_over, timeout, f"the sensors of {first} to move")
        (last_beat,) = metadata(cluster, "SELECT latest_heartbeat FROM job WHERE id = :id", id=first_job)[0]
        cluster.wait_for_dag("queue_failover_parent")
        cluster.backfill("queue_failover_parent", FAILOVER_DAY, FAILOVER_DAY)
        cluster.unpause("queue_failover_parent")
        (run,) = cluster.wait_for_runs("queue_failover_gates", 1, timeout)
        result = {
            "gates": gates,
            "before": before,
            "after": after,
            "jobs": (first_job, standby_job, unrouted),
            "starts": trigger_starts(cluster),
            "killed_at": killed_at,
            "last_beat": last_beat,
            "run": run,
        }
        write_queue_failover_report(result)
        return result

    def test_the_killed_triggerer_held_every_routed_gate_and_the_standby_of_its_queue_took_them_all(
        self, queue_failover
    ):
        first_job, standby_job, _ = queue_failover["jobs"]
        assert queue_failover["before"] == dict.fromkeys(queue_failover["gates"], (QUEUE, first_job))
        assert queue_failover["after"] == dict.fromkeys(queue_failover["gates"], (QUEUE, standby_job))

    def test_no_triggerer_started_without_the_queue_ever_ran_a_routed_gate(self, queue_failover):
        first_job, standby_job, unrouted = queue_failover["jobs"]
        ran = {(task_id, job) for task_id, job in queue_failover["starts"]}
        assert ran == {(g, job) for g in queue_failover["gates"] for job in (first_job, standby_job)}, ran
        assert unrouted and not unrouted & {first_job, standby_job}

    def test_the_standby_starts_a_gate_only_once_the_killed_triggerers_heartbeat_is_stale(self, queue_failover):
        _, standby_job, _ = queue_failover["jobs"]
        stale = queue_failover["last_beat"] + dt.timedelta(seconds=float(HEALTH_CHECK_THRESHOLD))
        late = {t: at for (t, job), at in queue_failover["starts"].items() if job == standby_job and at < stale}
        assert not late, (stale, late)

    def test_every_routed_gate_runs_on_a_worker_of_its_queue_and_is_released_once_on_its_first_try(
        self, cluster, queue_failover
    ):
        run = queue_failover["run"]
        assert run["state"] == "success"
        tis = cluster.task_instances("queue_failover_gates", run["dag_run_id"])
        assert {(ti["task_id"], ti["state"], ti["try_number"], ti["queue"]) for ti in tis} == {
            (g, "success", 1, QUEUE) for g in queue_failover["gates"]
        }
        parent = cluster.task_instances(
            "queue_failover_parent", cluster.runs("queue_failover_parent")[0]["dag_run_id"]
        )[0]
        decisions = all_decisions(cluster, dag_id="queue_failover_gates")
        satisfied = Counter(d["task_id"] for d in decisions if d["result"] == "SATISFIED")
        assert satisfied == dict.fromkeys(queue_failover["gates"], 1), satisfied
        parent_done = dt.datetime.fromisoformat(parent["end_date"])
        assert all(
            dt.datetime.fromisoformat(d["decided_at"]) >= parent_done for d in decisions if d["result"] == "SATISFIED"
        )


def write_queue_failover_report(result: dict) -> None:
    """For `make failover`: how long after the kill the standby started the sensors, next to the report
    of the unrouted scenario."""
    if not FAILOVER_REPORT:
        return
    _, standby_job, _ = result["jobs"]
    starts = [at for (_, job), at in result["starts"].items() if job == standby_job]
    report = {
        "gates": len(result["gates"]),
        "heartbeat_to_kill_seconds": round((result["killed_at"] - result["last_beat"]).total_seconds(), 1),
        "kill_to_first_start_seconds": round((min(starts) - result["killed_at"]).total_seconds(), 1),
        "kill_to_last_start_seconds": round((max(starts) - result["killed_at"]).total_seconds(), 1),
    }
    path = Path(FAILOVER_REPORT).with_name("queue-failover.json")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2) + "\n")


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
