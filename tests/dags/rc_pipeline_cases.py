"""DAGs for the tests of dependencies on other pipelines (``dag_run_condition``; ids start with ``rc_pipeline``).

``rc_pipeline_orders`` is an ordinary upstream DAG: its runs reach the catalog through the DAG-run listener.
``rc_pipeline`` depends on it (SUCCESS) or on a catalog task outside Airflow (HAS_DATA), under ANY.
(Importing ``rc_cases`` here would register its DAGs twice, so the few task shapes are written out.)
"""

from __future__ import annotations

import datetime as dt

from airflow.sdk import DAG, task

from airflow_leastaction.refs import airflow_dag, external_task
from airflow_leastaction.rows import report_rows_written
from airflow_leastaction.run_conditions import always, dag_run_condition, has_data, run_condition, success

START = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)
FAST = dict(poll_interval=0.2)
OTHER = external_task("rc_other_pipeline", "other-team")


def writes(task_id: str, rows: int):
    @task(task_id=task_id)
    def run():
        report_rows_written(rows)

    return run()


def step(task_id: str, **kwargs):
    @task(task_id=task_id, **kwargs)
    def run():
        return task_id

    return run()


with DAG("rc_pipeline_orders", schedule=None, start_date=START, catchup=False, tags=["test"]):
    writes("load_orders", 7)

with DAG("rc_pipeline", schedule=None, start_date=START, catchup=False, tags=["test"]) as pipeline:
    extract = writes("extract", 2)
    load = step("load")
    extract >> load
    load >> step("cleanup", trigger_rule="all_done")  # skipped with the run all the same
    run_condition(step("report"), success(load), **FAST)
    run_condition(step("audit"), always(airflow_dag("rc_pipeline_orders")), max_wait=0, **FAST)  # a root gate
    dag_run_condition(
        pipeline, success(airflow_dag("rc_pipeline_orders")), has_data(OTHER), when="ANY", max_wait=0, **FAST
    )
