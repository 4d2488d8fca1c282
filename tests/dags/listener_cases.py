"""DAGs for the listener tests (ids start with ``lx_``): outcomes Airflow mirrors into the catalog.

``lx_retry_parent`` fails its first try and succeeds on its retry; the retry waits a day, so a test ends
the retry window when it chooses (consumers have looked by then). The ``lx_retry_*`` consumers depend on
it from other DAGs. The ``lx_rows_*`` DAGs report rows written from outside the listener's process.
Markers under ``LX_MARKERS`` say what ran.
"""

from __future__ import annotations

import datetime as dt
import os
import sys
from pathlib import Path

from airflow.sdk import DAG, task

from airflow_leastaction.refs import airflow_task
from airflow_leastaction.run_conditions import failure, has_data, run_condition, success
from airflow_leastaction.sensors.parent_interval import ParentIntervalSensor
from airflow_leastaction.version_compat import TASK_RETRY_POLICIES, AirflowFailException

START = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)
PARENT = airflow_task("lx_retry_parent", "load")
#: Consumers wait as long as the test needs: the parent's retry ends the wait, not a budget.
PATIENT = {"poll_interval": 0.2, "max_wait": dt.timedelta(minutes=10), "max_looks": 100_000}


def markers() -> Path:
    path = Path(os.environ.get("LX_MARKERS", "/tmp/lx-markers"))
    path.mkdir(parents=True, exist_ok=True)
    return path


def marking(task_id: str):
    @task(task_id=task_id)
    def run():
        (markers() / task_id).write_text("ran")

    return run()


def dag(dag_id: str) -> DAG:
    return DAG(dag_id, schedule=None, start_date=START, catchup=False, tags=["test", "listener"])


with dag("lx_retry_parent"):

    @task(task_id="load", retries=1, retry_delay=dt.timedelta(days=1))
    def load():
        first = markers() / "load.failed-once"
        if not first.exists():
            first.write_text("failed")
            raise RuntimeError("load: a transient error on the first try")
        (markers() / "load").write_text("ran")

    load()

with dag("lx_fail_fast"):

    @task(task_id="load", retries=3, retry_delay=dt.timedelta(days=1))
    def load_that_gives_up():
        raise AirflowFailException("bad input: retrying cannot help")

    load_that_gives_up()

if TASK_RETRY_POLICIES:  # retry policies are an Airflow 3.3 feature
    from airflow.sdk import ExceptionRetryPolicy, RetryAction, RetryRule

    with dag("lx_retry_policy_fails"):

        @task(
            task_id="load",
            retries=3,
            retry_delay=dt.timedelta(days=1),
            retry_policy=ExceptionRetryPolicy(rules=[RetryRule(exception=ValueError, action=RetryAction.FAIL)]),
        )
        def load_with_bad_input():
            raise ValueError("bad input: retrying cannot help")

        load_with_bad_input()

with dag("lx_retry_alert"):
    run_condition(marking("alert"), failure(PARENT), **PATIENT)

with dag("lx_retry_child"):
    run_condition(marking("child"), success(PARENT), **PATIENT)

with dag("lx_retry_sensor"):
    ParentIntervalSensor(
        task_id="wait_for_load", parents=[PARENT], on_parent_failure="fail", poll_interval=0.2
    ) >> marking("after_sensor")

# -- rows written from outside the listener's process ------------------------------------------------
with dag("lx_rows_external_python"):

    @task.external_python(task_id="load", python=sys.executable, multiple_outputs=True)
    def load_in_another_interpreter():
        import os

        # A separate interpreter: nothing of the worker's process is shared with it.
        return {"leastaction_rows_written": 7, "pid": os.getpid()}

    run_condition(marking("publish"), has_data(load_in_another_interpreter()), poll_interval=0.2)

with dag("lx_rows_xcom_push"):

    @task(task_id="load")
    def load_pushing_the_xcom(**context):
        context["ti"].xcom_push(key="leastaction_rows_written", value=4)

    run_condition(marking("publish"), has_data(load_pushing_the_xcom()), poll_interval=0.2)

with dag("lx_rows_xcom_not_a_count"):

    @task(task_id="load")
    def load_pushing_garbage(**context):
        context["ti"].xcom_push(key="leastaction_rows_written", value="lots")

    run_condition(marking("publish"), has_data(load_pushing_garbage()), poll_interval=0.2)

with dag("lx_rows_mapped"):

    @task(task_id="load")
    def load_mapped(rows: int, **context):
        context["ti"].xcom_push(key="leastaction_rows_written", value=rows)

    load_mapped.expand(rows=[2, 0])
