"""Operators of the LeastAction provider."""

from airflow_leastaction.operators.dbt_queue import DbtDrainOperator, DbtEnqueueOperator, dbt_queue_asset

__all__ = ["DbtDrainOperator", "DbtEnqueueOperator", "dbt_queue_asset"]
