"""DAGs for the fallback tests (ids start with ``fb_``): a report that needs four country feeds, run at
a deadline with what is there.

The feeds live outside the DAG (catalog tasks a test reports), except in ``fb_in_run`` where they are tasks
of the run. Every gate polls fast; the deadline is six hours after the run's slot unless said.
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

from airflow.sdk import DAG, task

from airflow_leastaction.gating.fallback import Fallback
from airflow_leastaction.refs import external_task
from airflow_leastaction.run_conditions import dag_run_condition, run_condition, success
from airflow_leastaction.sensors import ParentIntervalSensor

START = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)
COUNTRIES = ("fr", "de", "es", "it")
FEEDS = [external_task(f"fb_feed_{c}", "feeds") for c in COUNTRIES]
SIX_HOURS = dt.timedelta(hours=6)
FAST = dict(poll_interval=0.2, max_wait=dt.timedelta(hours=8))


def mark(name: str) -> None:
    path = Path(os.environ.get("RC_MARKERS", "/tmp/rc-markers"))
    path.mkdir(parents=True, exist_ok=True)
    (path / name).write_text(dt.datetime.now(dt.UTC).isoformat())


def report():
    @task(task_id="report")
    def build():
        mark("report")

    return build()


def feed_task(country: str, outcome: str = "success"):
    @task(task_id=f"land_{country}")
    def land():
        if outcome == "failed":
            raise RuntimeError(f"the {country} feed did not land")
        mark(f"land_{country}")

    return land()


for dag_id, fallback in (
    ("fb_report", Fallback(SIX_HOURS, require=3)),
    ("fb_report_rerun", Fallback(SIX_HOURS, require=3, on_late_arrival="rerun")),
    ("fb_report_at_six", Fallback("06:00", require=3)),
):
    with DAG(dag_id, schedule=None, start_date=START, catchup=False):
        run_condition(report(), *(success(f) for f in FEEDS), fallback=fallback, **FAST)

with DAG("fb_run_gate", schedule=None, start_date=START, catchup=False) as run_gated:
    report()
    dag_run_condition(run_gated, *FEEDS, fallback=Fallback(SIX_HOURS, require=3), **FAST)

with DAG("fb_sensor", schedule=None, start_date=START, catchup=False):
    (
        ParentIntervalSensor(
            task_id="wait_for_feeds",
            parents=FEEDS,
            fallback=Fallback(SIX_HOURS, require=3),
            timeout=8 * 3600,
            poll_interval=0.2,
        )
        >> report()
    )

with DAG("fb_in_run", schedule=None, start_date=START, catchup=False):
    feeds = [feed_task(c, "failed" if c == "it" else "success") for c in COUNTRIES]
    run_condition(report(), *feeds, fallback=Fallback(dt.timedelta(0), require=3), **FAST)
