"""DAGs for the early-warning tests (ids start with ``dw_``): a report that waits on a feed outside the DAG
and should be done six hours after its slot, warned about while its gate waits.

The feed (``dw_feed``) is a catalog task the test reports; every DAG is unscheduled, as the tests pick
each run's slot; every gate polls fast. The callbacks write what they were told to the test's marker
folder (:mod:`tests.helpers.deadline_warnings`).

The run-condition gates wait on the worker (``deferrable=False``): there they read the feed's latest run
on every look, where a deferred gate looks at a run in progress on the wait rule's schedule (70 % of its
usual length after it started, then 80 %...), hours apart for a feed that takes three. Their trigger's
warnings are tested on the trigger itself. (A DAG with a ``DeadlineAlert`` is not run here: Airflow's
``dag.test()`` cannot run one, it looks its alerts up as ids; see ``test_dag_deadline_alerts.py``.)
"""

from __future__ import annotations

import datetime as dt

from airflow.sdk import DAG, task
from airflow.sdk.definitions.deadline import AsyncCallback, SyncCallback

from airflow_leastaction.refs import external_task
from airflow_leastaction.run_conditions import run_condition, success
from airflow_leastaction.sensors import ParentIntervalSensor
from tests.helpers.deadline_warnings import explode, tell, tell_now

START = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)
FEED = external_task("dw_feed", "feeds")
SIX_HOURS = dt.timedelta(hours=6)
FAST = dict(poll_interval=0.2, max_wait=dt.timedelta(hours=8), deferrable=False)


def report():
    @task(task_id="report")
    def build():
        return "built"

    return build()


with DAG("dw_report", schedule=None, start_date=START, catchup=False):
    run_condition(report(), success(FEED), deadline=SIX_HOURS, deadline_callback=AsyncCallback(tell), **FAST)

with DAG("dw_pager_down", schedule=None, start_date=START, catchup=False):
    run_condition(report(), success(FEED), deadline=SIX_HOURS, deadline_callback=AsyncCallback(explode), **FAST)

with DAG("dw_sensor", schedule=None, start_date=START, catchup=False):
    (
        ParentIntervalSensor(
            task_id="wait_for_feed",
            parents=[FEED],
            deadline=SIX_HOURS,
            deadline_callback=SyncCallback(tell_now, kwargs={"channel": "#data"}),
            timeout=8 * 3600,
            poll_interval=0.2,
        )
        >> report()
    )
