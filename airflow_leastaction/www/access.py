"""Who may read what. Every router carries one of these; the app itself has no anonymous route.

The pages show DAG task data (decisions and consumption of task attempts, catalog tasks), so access
follows Airflow's DAG permissions, whatever the auth manager:

* a ``dag_id`` in the query is checked against that DAG (403 when the user may not read it);
* lists are cut to the DAGs the user may read (:func:`readable_dags`): an auth manager with per-DAG
  permissions (FAB's ``DAG:<dag_id>`` resources) can allow some DAGs and not others;
* catalog rows that belong to no DAG (tasks reported by external systems) are shown to every user who
  may read task definitions, as Airflow shows asset events that no DAG produced;
* the dbt queue is one resource shared by the DAGs that ask for models, so it needs read access to every DAG.
"""

from __future__ import annotations

from airflow.api_fastapi.app import get_auth_manager
from airflow.api_fastapi.auth.managers.models.resource_details import DagAccessEntity
from airflow.api_fastapi.core_api.security import GetUserDep, requires_access_dag
from fastapi import Depends, HTTPException, status
from sqlalchemy import select

from airflow_leastaction.catalog.schema import task
from airflow_leastaction.www.queries import DagScope
from airflow_leastaction.www.reads import CatalogReads
from airflow_leastaction.www.render import catalog_reads

#: Gate decisions, consumption records and dbt queue activity: task-instance data.
READ_TASK_INSTANCES = Depends(requires_access_dag("GET", DagAccessEntity.TASK_INSTANCE))

#: Catalog tasks, their declared parents and the graph computed from them: task definitions.
READ_TASKS = Depends(requires_access_dag("GET", DagAccessEntity.TASK))


def _known_dag_ids(reads: CatalogReads) -> set[str]:
    """Every DAG Airflow knows, and every DAG the catalog has a task of."""
    from airflow.models.dag import DagModel
    from airflow.utils.session import create_session

    with create_session() as session:
        known = set(session.scalars(select(DagModel.dag_id)))
    with reads.connect() as conn:
        dags = select(task.c.dag_id).where(task.c.dag_id.is_not(None)).distinct()
        known |= set(conn.execute(dags).scalars())
    return known


def readable_dags(user: GetUserDep, reads: CatalogReads = Depends(catalog_reads)) -> DagScope:
    """The DAGs this user may read, as the auth manager's ``filter_authorized_dag_ids`` answers.

    A user who may read every known DAG gets no filter at all, so rows of a DAG that neither Airflow
    nor the catalog knows any more (deleted, renamed) stay visible to them and to nobody else.
    """
    known = _known_dag_ids(reads)
    allowed = get_auth_manager().filter_authorized_dag_ids(dag_ids=known, user=user, method="GET")
    return DagScope(None if allowed >= known else frozenset(allowed))


#: The DAGs a list may show rows of (see :func:`readable_dags`).
READABLE_DAGS = Depends(readable_dags)


def requires_access_every_dag(scope: DagScope = READABLE_DAGS) -> None:
    """403 unless the user may read every DAG (for resources that several DAGs share)."""
    if scope.dag_ids is not None:
        raise HTTPException(status.HTTP_403_FORBIDDEN, "this page needs read access to every DAG")


def require_readable(scope: DagScope, dag_id: str | None, what: str) -> None:
    """403 for a row of a DAG the user may not read (a row that belongs to no DAG is readable)."""
    if not scope.allows(dag_id):
        raise HTTPException(status.HTTP_403_FORBIDDEN, f"{what} belongs to a DAG you may not read")
