"""The DAG whose catalog tasks the browser test looks at (its tasks never need to run)."""

from __future__ import annotations

import pendulum
from airflow.providers.standard.operators.empty import EmptyOperator
from airflow.sdk import DAG

with DAG("sales_daily", schedule="0 3 * * *", start_date=pendulum.datetime(2024, 1, 1, tz="UTC"), catchup=False):
    EmptyOperator(task_id="load_orders") >> EmptyOperator(task_id="build_report")
