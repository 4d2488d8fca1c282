"""Run conditions: per-dependency types and ALL / ANY / N, in one daily pipeline.

* ``load_orders`` and ``load_refunds`` report the rows they wrote; ``publish_changes`` runs only when
  the orders load actually wrote rows (HAS_DATA).
* ``daily_summary`` starts as soon as ANY of the three regional extracts succeeded.
* ``reconcile`` starts once N=2 of three sources are in, one of them the weekly FX rates loaded by
  another DAG (a cross-DAG dependency, judged from the catalog by that task's latest run).
* ``alert_on_failure`` runs only if ``load_orders`` FAILED; ``cleanup`` runs ALWAYS after the summary,
  natively (``native=True``): Airflow's ``all_done`` trigger rule starts it, with no gate task, and it
  records its decisions when it starts.

``airflow-leastaction graph run_conditions_pipeline`` prints the waves.
"""

from __future__ import annotations

import datetime as dt
import random

from airflow.sdk import DAG, task

from airflow_leastaction.refs import airflow_task
from airflow_leastaction.rows import report_rows_written
from airflow_leastaction.run_conditions import always, failure, has_data, run_condition, success

with DAG(
    "run_conditions_pipeline",
    schedule="@daily",
    start_date=dt.datetime(2026, 11, 1, tzinfo=dt.UTC),
    catchup=False,
    tags=["leastaction", "run-conditions"],
):

    @task
    def extract(region: str) -> str:
        return f"{region} extracted"

    @task
    def load_orders():
        # Inserted + updated + deleted rows; a load that changed nothing reports 0 and HAS_DATA is not met.
        report_rows_written(0, inserted=random.randint(0, 20), updated=3)

    @task
    def load_refunds():
        report_rows_written(2)

    @task
    def publish_changes():
        return "published"

    @task
    def daily_summary():
        return "summary"

    @task
    def reconcile():
        return "reconciled"

    @task
    def alert_on_failure():
        print("load_orders failed: paging the on-call data engineer")

    @task
    def cleanup():
        return "cleaned"

    east, west, south = (extract.override(task_id=f"extract_{r}")(r) for r in ("east", "west", "south"))
    orders, refunds = load_orders(), load_refunds()
    summary = daily_summary()

    run_condition(publish_changes(), has_data(orders))
    run_condition(summary, east, west, south, when="ANY")
    run_condition(
        reconcile(),
        success(orders),
        success(refunds),
        success(airflow_task("fx_rates_weekly", "load_rates")),
        when="N",
        count=2,
        max_wait=dt.timedelta(minutes=30),
    )
    run_condition(alert_on_failure(), failure(orders))
    run_condition(cleanup(), always(summary), native=True)
