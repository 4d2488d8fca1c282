"""Who may read what. Every router carries one of these; the app itself has no anonymous route.

The pages show DAG task data (decisions and consumption of task attempts, catalog tasks), so access
follows Airflow's DAG permissions: a ``dag_id`` filter is checked against that DAG, and a list across
DAGs needs read access to all DAGs.
"""

from __future__ import annotations

from airflow.api_fastapi.auth.managers.models.resource_details import DagAccessEntity
from airflow.api_fastapi.core_api.security import requires_access_dag
from fastapi import Depends

#: Gate decisions, consumption records and dbt queue activity: task-instance data.
READ_TASK_INSTANCES = Depends(requires_access_dag("GET", DagAccessEntity.TASK_INSTANCE))

#: Catalog tasks, their declared parents and the graph computed from them: task definitions.
READ_TASKS = Depends(requires_access_dag("GET", DagAccessEntity.TASK))
