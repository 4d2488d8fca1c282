"""Request B: land new time entries, then queue the dbt models downstream of that source.

Its selector overlaps Request A's (``dbt_ingest_work_orders``) on dim_project, fact_project_labor and
agg_labor_history: whichever request comes second merges into the first one's pending rows, or flags the
running ones for exactly one follow-up pass.
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
    "dbt_ingest_time_entries",
    schedule="*/10 * * * *",
    start_date=dt.datetime(2026, 11, 1, tzinfo=dt.UTC),
    catchup=False,
    tags=["leastaction", "dbt", "example"],
) as dag:

    @task
    def ingest_time_entries(data_interval_end=None) -> int:
        """Append the interval's new time entries to the landed source file."""
        path = DATA_DIR / "time_entries.csv"
        with path.open() as f:
            next_id = 1 + max(int(r["entry_id"]) for r in csv.DictReader(f))
        with path.open("a", newline="") as f:
            row = [next_id, 100 + next_id % 4, 1.5, 85, f"{data_interval_end:%Y-%m-%d}"]
            csv.writer(f, lineterminator="\n").writerow(row)
        return next_id

    ingest_time_entries() >> DbtEnqueueOperator(
        task_id="enqueue_dbt_models",
        selector="source:field_ops.time_entries+",
        project_dir=PROJECT_DIR,
        environment="field_ops",
    )
