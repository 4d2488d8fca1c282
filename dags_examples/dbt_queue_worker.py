"""The field_ops dbt queue worker: runs whenever an ingest queued models, claims compatible batches and builds
each with one ``dbt build``. A model whose code and inputs have not changed since its last build is reused,
not built: the project's sources.yml names the tasks that load each source, whose completions say when a
source has new data.

No cron is needed to pick up what a freshness tier holds back (or a follow-up owed by a model requested
during its build): the drain waits for it deferred, holding no worker slot, and drains again when it
becomes eligible (up to ``max_wait``, 1 hour by default). Two active runs let new demand be drained while
an earlier run waits.

Views are not queued; deploy them with the project (``dbt build`` once, or ``dbt run --select
config.materialized:view`` on every release).
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

from airflow.sdk import DAG

from airflow_leastaction.operators import DbtDrainOperator, dbt_queue_asset

PROJECT_DIR = os.environ.get("FIELD_OPS_DBT_PROJECT_DIR", str(Path(__file__).parent / "dbt_project"))
# How long a drain waits for held work before it ends (the demo and the end-to-end tests set 0: their
# runs must end once the queue is empty; held work is tested on its own).
MAX_WAIT = dt.timedelta(minutes=float(os.environ.get("FIELD_OPS_DRAIN_MAX_WAIT_MINUTES", "60")))

with DAG(
    "dbt_queue_worker",
    schedule=[dbt_queue_asset("field_ops")],
    start_date=dt.datetime(2026, 11, 1, tzinfo=dt.UTC),
    catchup=False,
    max_active_runs=2,
    tags=["leastaction", "dbt", "example"],
) as dag:
    DbtDrainOperator(
        task_id="drain_dbt_queue",
        project_dir=PROJECT_DIR,
        environment="field_ops",
        grace=dt.timedelta(minutes=5),
        max_wait=MAX_WAIT,
        retries=1,
    )
