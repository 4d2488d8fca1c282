"""Request A: land new work orders, then queue the dbt models downstream of that source.

The enqueue resolves ``source:field_ops.work_orders+`` with ``dbt ls`` and merges the models into the
``field_ops`` queue; its Asset wakes ``dbt_queue_worker``. Models Request B (time entries) also wants
(dim_project, fact_project_labor, ...) become one piece of work with two recorded requests.
"""

from __future__ import annotations

import csv
import datetime as dt
import os
from pathlib import Path

from airflow.sdk import DAG, task

from airflow_leastaction.operators import DbtEnqueueOperator

PROJECT_DIR = os.environ.get("FIELD_OPS_DBT_PROJECT_DIR", str(Path(__file__).parent / "dbt_project"))
DATA_DIR = Path(os.environ.get("FIELD_OPS_DATA_DIR", str(Path(PROJECT_DIR) / "data")))

with DAG(
    "dbt_ingest_work_orders",
    schedule="*/15 * * * *",
    start_date=dt.datetime(2026, 11, 1, tzinfo=dt.UTC),
    catchup=False,
    tags=["leastaction", "dbt", "example"],
) as dag:

    @task
    def ingest_work_orders(data_interval_end=None) -> int:
        """Append the interval's new work orders to the landed source file."""
        path = DATA_DIR / "work_orders.csv"
        with path.open() as f:
            next_id = 1 + max(int(r["work_order_id"]) for r in csv.DictReader(f))
        with path.open("a", newline="") as f:
            row = [next_id, 1 + next_id % 3, "OPEN", f"{data_interval_end:%Y-%m-%d %H:%M:%S}"]
            csv.writer(f, lineterminator="\n").writerow(row)
        return next_id

    ingest_work_orders() >> DbtEnqueueOperator(
        task_id="enqueue_dbt_models",
        selector="source:field_ops.work_orders+",
        project_dir=PROJECT_DIR,
        environment="field_ops",
    )
