"""Catalog maintenance: every day, prune the catalog's history older than 90 days.

The task calls the same function as ``airflow-leastaction db prune --before DATE``: it deletes gate
decisions, consumption records, old slot records, dbt request rows and events and finished queue rows
older than the cutoff, in short batches, and keeps every row something still reads (see the Retention
section of docs/operations.md). The counts per table are the task's return value.
"""

from __future__ import annotations

import datetime as dt

from airflow.sdk import DAG, task

#: How much history the catalog keeps.
RETENTION = dt.timedelta(days=90)

with DAG(
    "catalog_retention",
    schedule="@daily",
    start_date=dt.datetime(2026, 11, 1, tzinfo=dt.UTC),
    catchup=False,
    max_active_runs=1,
    tags=["leastaction", "maintenance"],
):

    @task
    def prune_catalog_history(data_interval_end=None) -> dict[str, int]:
        from airflow_leastaction.catalog.retention import prune_catalog

        # Counted from the run's interval, not the clock: a re-run of a day prunes the same history.
        return prune_catalog(data_interval_end - RETENTION).counts()

    prune_catalog_history()
