"""Constants and small helpers of the dbt queue tests."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from airflow_leastaction.dbt.policy import Tier, TierPolicy

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_PROJECT = ROOT / "dags_examples" / "dbt_project"
# Relative to the project directory (dbt's working directory): every copy has the same profile, so dbt's
# partial parse made once carries over to every test's copy.
DBT_ENV = {"FIELD_OPS_DUCKDB_PATH": "field_ops.duckdb"}
SELECTOR_A = "source:field_ops.work_orders+"
SELECTOR_B = "source:field_ops.time_entries+"
#: No minimum interval between builds: tests rebuild models seconds apart.
NO_WAIT = TierPolicy(tiers=[Tier("fast", 30), Tier("standard", 20), Tier("historical", 10)])


def names(unique_ids) -> list[str]:
    return sorted(u.rsplit(".", 1)[-1] for u in unique_ids)


def seconds(n: float) -> dt.timedelta:
    return dt.timedelta(seconds=n)
