"""DAGs of the deadline and re-run plan deployment (tests/system/test_deadlines_cluster.py).

``sys_country_report``: four feeds of the run and a report with a fallback 75 seconds after the run's
slot (a run triggered now meets it 75 seconds later); the Italian feed holds until the test drops a
marker named after the run. ``plan_*``: a diamond of daily DAGs under ``plan_raw``, each waiting for its
parents' slots with a sensor, for ``airflow-leastaction plan --apply``.
"""

from __future__ import annotations

import datetime as dt
import os
import time
from pathlib import Path

from airflow.sdk import DAG, task

from airflow_leastaction.gating.fallback import Fallback
from airflow_leastaction.run_conditions import run_condition, success
from airflow_leastaction.sensors import ParentIntervalSensor, airflow_task
from airflow_leastaction.timetables import IntervalCronTimetable

START = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)
MARKERS = Path(os.environ.get("LA_MARKERS", "/tmp/la-markers"))
DEADLINE = dt.timedelta(seconds=75)

with DAG("sys_country_report", schedule=None, start_date=START, catchup=False, max_active_runs=4):
    feeds = []
    for country in ("fr", "de", "es", "it"):
        # Retries: a worker that cannot reach a busy API server in time fails its task before it starts.
        @task(task_id=f"land_{country}", retries=2, retry_delay=dt.timedelta(seconds=3))
        def land(country: str = country, run_id=None):
            while country == "it" and not (MARKERS / f"it-{run_id}").exists():
                time.sleep(0.5)
            return country

        feeds.append(land())

    @task
    def report():
        return "report"

    run_condition(
        report(),
        *(success(f) for f in feeds),
        fallback=Fallback(DEADLINE, require=3, on_late_arrival="rerun"),
        poll_interval=1,
    )


DAILY = IntervalCronTimetable("0 0 * * *")


def layer(dag_id: str, task_id: str, parents: list[tuple[str, str]]):
    with DAG(dag_id, schedule=DAILY, start_date=START, catchup=False, max_active_runs=2):

        @task(task_id=task_id, retries=2, retry_delay=dt.timedelta(seconds=3))
        def work():
            return task_id

        done = work()
        if parents:
            (
                ParentIntervalSensor(
                    task_id="wait", parents=[airflow_task(*p) for p in parents], poll_interval=1, timeout=900
                )
                >> done
            )


layer("plan_raw", "load", [])
layer("plan_left", "enrich", [("plan_raw", "load")])
layer("plan_right", "score", [("plan_raw", "load")])
layer("plan_report", "build", [("plan_left", "enrich"), ("plan_right", "score")])
