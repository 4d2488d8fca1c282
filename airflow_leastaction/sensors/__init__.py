from airflow_leastaction.gating.fallback import Fallback
from airflow_leastaction.refs import airflow_task, dbt_model, external_task
from airflow_leastaction.sensors.parent_interval import ParentIntervalSensor

__all__ = ["Fallback", "ParentIntervalSensor", "airflow_task", "dbt_model", "external_task"]
