"""Two DAGs for the per-DAG access test: a user may read the first and not the second (tasks never run)."""

from __future__ import annotations

import pendulum
from airflow.providers.standard.operators.empty import EmptyOperator
from airflow.sdk import DAG

START = pendulum.datetime(2024, 1, 1, tz="UTC")

with DAG("sales_daily", schedule="0 3 * * *", start_date=START, catchup=False):
    EmptyOperator(task_id="load_orders") >> EmptyOperator(task_id="build_report")

with DAG("finance_weekly", schedule="0 5 * * 1", start_date=START, catchup=False):
    EmptyOperator(task_id="rollup")
