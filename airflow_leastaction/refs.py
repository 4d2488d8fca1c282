"""Naming catalog tasks from DAG code: this deployment's tasks, and parents outside it."""

from __future__ import annotations

from airflow_leastaction.config import setting
from airflow_leastaction.exceptions import ConfigurationError
from airflow_leastaction.identity import (
    NAME_WIDTH,
    TaskIdentity,
    airflow_asset_name,
    airflow_dag_name,
    airflow_task_name,
)
from airflow_leastaction.intervals.coverage import check_coverage


def deployment_project() -> str:
    """The catalog project of this deployment's Airflow tasks (``[leastaction] project``)."""
    return setting("project", "airflow")


def airflow_task(
    dag_id: str, task_id: str, *, project: str | None = None, map_index: int = -1, coverage: str | None = None
) -> TaskIdentity:
    """Task ``task_id`` of DAG ``dag_id``, in this deployment unless ``project`` names another one.

    For a mapped task, ``map_index`` names one map index; without it, the mapped task as a whole (done
    when every map index is). The name follows :func:`~airflow_leastaction.identity.airflow_task_name`.

    :param coverage: how a child judges it: ``"slot"`` (its slot covering the child's interval) or
        ``"interval"`` (every slot inside the child's interval); None: the gate's default.
    """
    partition = str(map_index) if map_index is not None and map_index >= 0 else ""
    check_coverage(coverage, f"parent airflow_task({dag_id!r}, {task_id!r})")
    return TaskIdentity(airflow_task_name(dag_id, task_id), project or deployment_project(), "", partition, coverage)


def airflow_dag(dag_id: str, *, project: str | None = None) -> TaskIdentity:
    """The runs of DAG ``dag_id`` (one slot record per DAG run, written by the catalog listener), in this
    deployment unless ``project`` names another one."""
    return TaskIdentity(airflow_dag_name(dag_id), project or deployment_project())


def airflow_asset(asset, *, project: str | None = None, coverage: str | None = None) -> TaskIdentity:
    """The events of an Airflow asset (an ``Asset`` or its name), recorded in the catalog by the provider's
    listener: one slot record per partition, or per producing run, each event a completion (a repair when
    the slot was recorded already). In this deployment unless ``project`` names another one.

    :param coverage: as for :func:`airflow_task`.
    """
    name = asset if isinstance(asset, str) else getattr(asset, "name", None)
    if not isinstance(name, str) or not name.strip() or "\x00" in name:
        raise ConfigurationError(f"airflow_asset({asset!r}): expected an Asset or an asset name")
    catalog_name = airflow_asset_name(name)
    if len(catalog_name) > NAME_WIDTH:
        raise ConfigurationError(
            f"airflow_asset({name[:40]!r}...): the asset's catalog name {catalog_name[:40]!r}... has "
            f"{len(catalog_name)} characters; the catalog keeps names of at most {NAME_WIDTH}"
        )
    check_coverage(coverage, f"parent airflow_asset({name!r})")
    return TaskIdentity(catalog_name, project or deployment_project(), coverage=coverage)


def external_task(
    name: str, project: str, *, account: str = "", partition: str = "", coverage: str | None = None
) -> TaskIdentity:
    """A task that lives outside Airflow and reports its completions to the catalog.

    :param coverage: as for :func:`airflow_task`.
    """
    check_coverage(coverage, f"parent external_task({name!r}, {project!r})")
    return TaskIdentity(name, project, account, partition, coverage)


def dbt_model(name: str, project: str, *, coverage: str | None = None) -> TaskIdentity:
    """A dbt model the queue builds, as a catalog task: ``name`` in the root dbt project (``<package>.<name>``
    in another), ``project`` the drain's ``catalog_project`` (default: the dbt project's name). Each pass
    of the model, built or reused, completes a slot of it.

    :param coverage: as for :func:`airflow_task`.
    """
    check_coverage(coverage, f"parent dbt_model({name!r}, {project!r})")
    return TaskIdentity(name, project, "", "", coverage)
