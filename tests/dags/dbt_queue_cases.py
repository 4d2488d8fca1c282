"""DAGs for the dbt queue tests (ids start with ``dq_``), on the example dbt project.

``FIELD_OPS_DBT_PROJECT_DIR`` names the project copy a test builds (default: the example project).
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

from airflow.sdk import DAG

from airflow_leastaction.dbt.policy import Tier, TierPolicy
from airflow_leastaction.operators import DbtDrainOperator
from airflow_leastaction.sensors import ParentIntervalSensor, dbt_model
from airflow_leastaction.timetables import IntervalCronTimetable

START = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)
PROJECT_DIR = os.environ.get(
    "FIELD_OPS_DBT_PROJECT_DIR", str(Path(__file__).resolve().parents[2] / "dags_examples" / "dbt_project")
)
#: The historical tier's minimum interval, in seconds instead of an hour; the drain's max_wait is as long,
#: as the default max_wait is as long as the default historical interval.
HISTORICAL = dt.timedelta(seconds=float(os.environ.get("DQ_HISTORICAL_SECONDS", "30")))
#: The default tiers' names and priorities; only the historical tier holds a model back.
SHORT_HISTORICAL = TierPolicy(
    tiers=[Tier("fast", 30), Tier("standard", 20), Tier("historical", 10, min_interval=HISTORICAL)]
)

with DAG("dq_drain_short_historical", schedule=None, start_date=START, catchup=False, tags=["test", "dbt"]):
    DbtDrainOperator(
        task_id="drain",
        project_dir=PROJECT_DIR,
        environment="field_ops",
        tiers=SHORT_HISTORICAL,
        max_wait=HISTORICAL,
        heartbeat_interval=1.0,
    )


# A drain whose tiers hold nothing back: a follow-up owed to a pass is built in the same drain.
with DAG("dq_drain_nothing_held", schedule=None, start_date=START, catchup=False, tags=["test", "dbt"]):
    DbtDrainOperator(
        task_id="drain",
        project_dir=PROJECT_DIR,
        environment="field_ops",
        tiers=TierPolicy(tiers=[Tier("fast", 30), Tier("standard", 20), Tier("historical", 10)]),
        heartbeat_interval=1.0,
    )


# An hourly report on a dbt model the queue builds: its sensor waits for the model's catalog task to have
# completed the slot of the report's hour (tests/integration/dbt/test_models_in_the_catalog.py).
with DAG(
    "dq_reads_dim_project",
    schedule=IntervalCronTimetable("0 * * * *"),
    start_date=START,
    catchup=False,
    tags=["test", "dbt"],
):
    ParentIntervalSensor(
        task_id="wait_for_dim_project", parents=[dbt_model("dim_project", "field_ops")], poke_interval=0.2, timeout=5
    )
