"""DAGs of the Celery failover tests: many sensors waiting on one parent, the same routed to one triggerer
queue, and a second queue worker with a short grace that competes with the example's for the field_ops
environment."""

from __future__ import annotations

import datetime as dt
import os

from airflow.sdk import DAG, task

from airflow_leastaction.operators import DbtDrainOperator
from airflow_leastaction.sensors import ParentIntervalSensor, airflow_task
from airflow_leastaction.timetables import IntervalCronTimetable

START = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)
DAILY = IntervalCronTimetable("0 0 * * *", timezone="UTC")
GATES = int(os.environ.get("LEASTACTION_FAILOVER_GATES", "24"))
# Sensors of the triggerer-queue failover test, all in queue team_a: each starts on a worker of that queue
# and defers to a triggerer serving it.
QUEUE = "team_a"
QUEUE_GATES = int(os.environ.get("LEASTACTION_QUEUE_FAILOVER_GATES", "8"))
# The worker-crash test holds the second drain's dbt processes at start-up (hold_dbt/sitecustomize.py)
# while it kills the worker running the batch.
DBT_HOOKS = os.environ.get("LEASTACTION_TEST_DBT_HOOKS")


def parent_and_sensors(parent_id: str, sensors_id: str, count: int, prefix: str, **sensor_kwargs) -> tuple[DAG, DAG]:
    """A daily parent DAG with one task, ``load``, and a DAG of ``count`` sensors waiting on it."""
    with DAG(parent_id, schedule=DAILY, start_date=START, catchup=False, tags=["leastaction", "failover"]) as parent:

        @task
        def load():
            return "loaded"

        load()

    with DAG(
        sensors_id,
        schedule=DAILY,
        start_date=START,
        catchup=False,
        max_active_tasks=count,
        tags=["leastaction", "failover"],
    ) as sensors:
        for i in range(count):
            ParentIntervalSensor(
                task_id=f"{prefix}_{i:03d}",
                parents=[airflow_task(parent_id, "load")],
                poke_interval=2,
                timeout=3600,
                **sensor_kwargs,
            )
    return parent, sensors


failover_parent, failover_gates = parent_and_sensors("failover_parent", "failover_gates", GATES, "wait")
queue_failover_parent, queue_failover_gates = parent_and_sensors(
    "queue_failover_parent", "queue_failover_gates", QUEUE_GATES, "gate", trigger_queue=QUEUE
)


with DAG(
    "dbt_queue_second_worker",
    schedule=None,
    start_date=START,
    catchup=False,
    max_active_runs=1,
    tags=["leastaction", "dbt", "failover"],
):
    DbtDrainOperator(
        task_id="drain_dbt_queue",
        project_dir=os.environ.get("FIELD_OPS_DBT_PROJECT_DIR", ""),
        environment="field_ops",
        # Short, so that a retry after a worker crash takes the lease back within the test.
        grace=dt.timedelta(seconds=20),
        heartbeat_interval=2,
        # The run ends once nothing is eligible: what a freshness tier holds back (models the first drain
        # built minutes ago) stays pending. The default (1 hour) would defer the run until then, past the
        # test's wait.
        max_wait=0,
        dbt_env={"PYTHONPATH": DBT_HOOKS} if DBT_HOOKS else None,
        retries=1,
        retry_delay=dt.timedelta(seconds=2),
    )
